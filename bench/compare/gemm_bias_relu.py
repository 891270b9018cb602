# Peers for examples/02 and 03, on the GPU machine: PyTorch (cuBLAS) unfused and addmm+relu,
# a fused Triton GEMM+bias+ReLU, and PyTorch's Llama MLP with RMSNorm; fp16 data, f32
# accumulation. Times are CUDA-event medians after warm-up. Prints CSV: workload,peer,us.
import torch
import triton
import triton.language as tl


@triton.jit
def gemm_bias_relu(a, b, bias, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr):
    pid = tl.program_id(0)
    nm = tl.cdiv(M, BM)
    nn = tl.cdiv(N, BN)
    group = GM * nn
    first = (pid // group) * GM
    gm = min(nm - first, GM)
    pm = first + (pid % group) % gm
    pn = (pid % group) // gm
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        x = tl.load(a + rm[:, None] * sam + kk[None, :] * sak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        y = tl.load(b + kk[:, None] * sbk + rn[None, :] * sbn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc)
    acc += tl.load(bias + rn, mask=rn < N, other=0.0)[None, :].to(tl.float32)
    acc = tl.maximum(acc, 0.0)
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def timeit(fn, reps=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1000)
    times.sort()
    return times[len(times) // 2]


print("workload,peer,us")
for (M, K, N) in [(64, 256, 128), (128, 256, 256), (1024, 1024, 1024), (4096, 4096, 4096)]:
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    bias = torch.randn(N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    ref = torch.relu(a.float() @ b.float() + bias.float())
    BM, BN, BK = (64, 64, 32) if M <= 128 else (128, 128, 64)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    run = lambda: gemm_bias_relu[grid](a, b, bias, c, M, N, K, a.stride(0), a.stride(1),
                                       b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                       BM=BM, BN=BN, BK=BK, GM=8, num_warps=8 if BM == 128 else 4)
    run()
    assert torch.allclose(c.float(), ref, rtol=2e-2, atol=2e-1), "triton gemm wrong"
    w = f"gemm_bias_relu {M}x{K}x{N}"
    print(f"{w},triton_fused,{timeit(run):.1f}")
    print(f"{w},torch_unfused,{timeit(lambda: torch.relu(a @ b + bias)):.1f}")
    print(f"{w},torch_addmm_relu,{timeit(lambda: torch.relu(torch.addmm(bias, a, b))):.1f}")

for hidden in (1024, 4096):
    inter, tokens = 11008, 16
    x = torch.randn(tokens, hidden, device="cuda", dtype=torch.float16)
    w_norm = torch.rand(hidden, device="cuda", dtype=torch.float16)
    g = torch.randn(hidden, inter, device="cuda", dtype=torch.float16) / hidden ** 0.5
    u = torch.randn(hidden, inter, device="cuda", dtype=torch.float16) / hidden ** 0.5
    d = torch.randn(inter, hidden, device="cuda", dtype=torch.float16) / inter ** 0.5

    def mlp():
        xf = x.float()
        xn = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).half() * w_norm
        return (torch.nn.functional.silu(xn @ g) * (xn @ u)) @ d

    print(f"llama_mlp {tokens}x{hidden}x{inter},torch_eager,{timeit(mlp):.1f}")
