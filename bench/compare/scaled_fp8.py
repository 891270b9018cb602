# PyTorch's peer of examples/12_scaled_fp8_gemm.cpp (W8A8 linear layer): fp16 activations
# quantized per token to e4m3 (each row's max|x| / 448), weights in e4m3 with one scale per
# output channel held as a linear layer keeps them (N x K), C = act(A @ Wᵀ · s_a · s_w + bias)
# in fp16. Two PyTorch forms, timed as do_bench times (L2 cleared, median):
#   unfused: the quantization in eager ops, then torch._scaled_mm with unit scales, then the
#            scales, the bias and the ReLU as eager ops (the sequence the example fuses);
#   rowwise: the quantization in eager ops, then torch._scaled_mm with row-wise scales and the
#            bias (cuBLASLt/CUTLASS's fused epilogue; bf16 out, which it requires), then ReLU.
#   python3 scaled_fp8.py [--shapes MxKxN,...]
import argparse

import torch
import triton.testing

FP8_MAX = 448.0


def quantize(x):
    s = x.abs().amax(dim=1, keepdim=True).float().clamp(min=1e-10) / FP8_MAX
    return (x.float() / s).to(torch.float8_e4m3fn), s


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="4096x4096x4096,16x4096x11008,4096x4096x11008")
    args = p.parse_args()
    print("workload,peer,ms")
    for shape in args.shapes.split(","):
        M, K, N = (int(v) for v in shape.split("x"))
        x = torch.randn(M, K, device="cuda", dtype=torch.float16)
        w = 0.05 * torch.randn(N, K, device="cuda")
        ws = w.abs().amax(dim=1, keepdim=True).clamp(min=1e-10) / FP8_MAX  # [N, 1]
        wq = (w / ws).to(torch.float8_e4m3fn)
        bias = torch.randn(N, device="cuda")
        one = torch.ones((), device="cuda")

        def unfused():
            xq, s = quantize(x)
            y = torch._scaled_mm(xq, wq.t(), one, one, out_dtype=torch.float32)
            return torch.relu(y * s * ws.t() + bias).to(torch.float16)

        def rowwise():
            xq, s = quantize(x)
            y = torch._scaled_mm(xq, wq.t(), s, ws.t().contiguous(), bias=bias.to(torch.bfloat16),
                                 out_dtype=torch.bfloat16)
            return torch.relu(y)

        ref = torch.relu(x.float() @ w.t() + bias)
        for name, fn in (("torch_unfused", unfused), ("torch_scaled_mm_rowwise", rowwise)):
            try:
                got = fn().float()
            except RuntimeError as e:  # a PyTorch without this form
                print(f"{shape},{name},error: {str(e).splitlines()[0][:120]}")
                continue
            err = (got - ref).abs().max().item() / ref.abs().max().item()
            assert err < 5e-2, f"{name} wrong ({err})"
            ms = triton.testing.do_bench(fn, warmup=25, rep=100)
            print(f"{shape},{name},{ms:.4f}", flush=True)


if __name__ == "__main__":
    main()
