# Peers of bench/gemm/gemm_bench.cpp on the GPU machine, same shapes and dtypes, same CSV
# (workload,peer,us,tflops): Triton's matmul tutorial kernel (the source bench_gemm and
# examples/02 port), autotuned over the tutorial's CUDA configs; cuBLAS through torch.matmul;
# PyTorch unfused (matmul + bias + relu) and addmm + relu. Device time: do_bench (CUDA events
# around each call, L2 cleared before it, median); host: wall time of one call and its
# synchronization, median of 50 (what launch cost adds at the small shapes).
#
#   python3 gemm.py [--dtype f16|bf16|f8e4nv] [--shapes MxKxN,...] [--descriptor]
#                   [--tritium-ptx DIR]
#
# --tritium-ptx DIR (f16, bf16; pointers): tritium's kernel for each shape as `bench_gemm
# --autotune --dump DIR` wrote it (PTX, its configuration) is launched from here on these
# tensors, checked, and timed beside Triton's and cuBLAS's round by round (paired.bench_rounds:
# do_bench's protocol, the order rotating), so that the three share one process, one flush
# and one clock. Rows then read workload,peer,us,q20_us,q80_us, plus per case the median and
# quantiles over rounds of tritium's time over each peer's (peer "tritium/cublas" ...).
#
# f8e4nv: A and B in torch.float8_e4m3fn, C in fp16; B column-major for Triton and cuBLASLt
# (their fp8 tensor-core path wants K contiguous in both, as Triton's matmul tutorial passes
# it); the peer is torch._scaled_mm (cuBLASLt) with unit per-tensor scales.
#
# --descriptor: Triton's kernel reads A and B and stores C through tensor descriptors
# (tl.make_tensor_descriptor, TMA on sm_90a): bench_gemm --descriptor's source.
import argparse
import json
import os
import sys
import time

import torch
import triton
import triton.language as tl
import triton.testing

CONFIGS = [
    triton.Config({"BM": 128, "BN": 256, "BK": 64, "GM": 8}, num_stages=3, num_warps=8),
    triton.Config({"BM": 64, "BN": 256, "BK": 32, "GM": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 128, "BN": 128, "BK": 32, "GM": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 128, "BN": 64, "BK": 32, "GM": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 64, "BN": 128, "BK": 32, "GM": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 128, "BN": 32, "BK": 32, "GM": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 64, "BN": 32, "BK": 32, "GM": 8}, num_stages=5, num_warps=2),
    triton.Config({"BM": 32, "BN": 64, "BK": 32, "GM": 8}, num_stages=5, num_warps=2),
    triton.Config({"BM": 128, "BN": 128, "BK": 64, "GM": 8}, num_stages=3, num_warps=8),
]
# Tiles of 128 K that Triton's matmul tutorial adds for fp8 inputs (bench_gemm offers the same
# to tritium's autotuner for f8e4nv).
FP8_CONFIGS = [
    triton.Config({"BM": 128, "BN": 256, "BK": 128, "GM": 8}, num_stages=3, num_warps=8),
    triton.Config({"BM": 256, "BN": 128, "BK": 128, "GM": 8}, num_stages=3, num_warps=8),
    triton.Config({"BM": 256, "BN": 64, "BK": 128, "GM": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 64, "BN": 256, "BK": 128, "GM": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 128, "BN": 128, "BK": 128, "GM": 8}, num_stages=4, num_warps=4),
]


@triton.jit
def grouped_pid(M, N, BM: tl.constexpr, BN: tl.constexpr, GM: tl.constexpr):
    # This program's block of C in grouped ordering: GM rows of blocks, column by column.
    pid = tl.program_id(0)
    nm = tl.cdiv(M, BM)
    nn = tl.cdiv(N, BN)
    group = GM * nn
    first = (pid // group) * GM
    gm = min(nm - first, GM)
    pm = first + ((pid % group) % gm)
    pn = (pid % group) // gm
    return pm, pn


@triton.autotune(configs=CONFIGS, key=["M", "N", "K", "EPILOGUE"])
@triton.jit
def matmul_kernel(a, b, bias, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr,
                  EPILOGUE: tl.constexpr):
    pm, pn = grouped_pid(M, N, BM, BN, GM)
    offs_am = (pm * BM + tl.arange(0, BM)) % M
    offs_bn = (pn * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a + (offs_am[:, None] * sam + offs_k[None, :] * sak)
    b_ptrs = b + (offs_k[:, None] * sbk + offs_bn[None, :] * sbn)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
        y = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(x, y, acc)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    if EPILOGUE:
        acc = tl.maximum(acc + tl.load(bias + offs_bn)[None, :], 0.0)
    offs_cm = pm * BM + tl.arange(0, BM)
    offs_cn = pn * BN + tl.arange(0, BN)
    tl.store(c + scm * offs_cm[:, None] + scn * offs_cn[None, :], acc.to(c.dtype.element_ty),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.autotune(configs=CONFIGS, key=["M", "N", "K", "EPILOGUE"])
@triton.jit
def matmul_desc_kernel(a, b, bias, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr, GM: tl.constexpr, EPILOGUE: tl.constexpr):
    pm, pn = grouped_pid(M, N, BM, BN, GM)
    a_desc = tl.make_tensor_descriptor(a, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = a_desc.load([pm * BM, k * BK])
        y = b_desc.load([k * BK, pn * BN])
        acc = tl.dot(x, y, acc)
    if EPILOGUE:
        offs_bn = pn * BN + tl.arange(0, BN)
        acc = tl.maximum(acc + tl.load(bias + offs_bn, mask=offs_bn < N, other=0.0)[None, :], 0.0)
    c_desc.store([pm * BM, pn * BN], acc.to(c.dtype.element_ty))


def timeit(fn, reps=None):
    return triton.testing.do_bench(fn, return_mode="median") * 1e3


def host_us(fn, n=50):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e6)
    times.sort()
    return times[len(times) // 2]


def tritium_launch(ptx_dir, workload, M, K, N, a, b, bias, c):
    """tritium's kernel that bench_gemm --dump wrote for this case, as a launch on these tensors
    (with its split-K workspace), or None with why."""
    from paired import PtxKernel, jit_of
    d = os.path.join(ptx_dir, f"{workload}.{M}x{K}x{N}")
    ptx, meta, cfg = (os.path.join(d, f) for f in ("matmul_kernel.ptx", "matmul_kernel.json",
                                                    "config.json"))
    if not all(os.path.exists(f) for f in (ptx, meta, cfg)):
        return None, f"no {ptx} with its .json and config.json"
    m, cfg = json.load(open(meta)), json.load(open(cfg))
    tiles = triton.cdiv(M, cfg["BM"]) * triton.cdiv(N, cfg["BN"])
    partials = torch.empty(max(1, cfg["SPLIT_K"] * tiles * cfg["BM"] * cfg["BN"]),
                           device="cuda", dtype=torch.float32)
    arrivals = torch.zeros(tiles, device="cuda", dtype=torch.int32)
    k = PtxKernel(open(ptx).read(), m["name"], m["num_threads"], m["shared_bytes"], jit_of(ptx))
    fn = k.launcher((tiles, cfg["SPLIT_K"]),
                    (a, b, bias, c, partials, arrivals, M, N, K, a.stride(0), a.stride(1),
                     b.stride(0), b.stride(1), c.stride(0), c.stride(1)))
    if fn is None:
        return None, "its PTX parameters are not bench_gemm's kernel's"
    fn.keep_workspace = (partials, arrivals)
    label = f"{cfg['BM']}x{cfg['BN']}x{cfg['BK']}:{cfg['num_warps']}:{cfg['num_stages']}" + \
        (f":{cfg['SPLIT_K']}" if cfg["SPLIT_K"] > 1 else "")
    return fn, label


def paired_rows(name, fns, labels):
    """Times `fns` (peer -> function) round by round and prints each peer's row and tritium's
    ratio to every other peer, round by round."""
    from paired import bench_rounds, quantiles
    times = dict(zip(fns, bench_rounds(list(fns.values()))))
    for peer, t in times.items():
        mid, q20, q80 = (v * 1e3 for v in quantiles(t))
        print(f"{name},{labels.get(peer, peer)},{mid:.1f},{q20:.1f},{q80:.1f}", flush=True)
    for peer, t in times.items():
        if peer != "tritium":
            r = quantiles([x / y for x, y in zip(times["tritium"], t)])
            print(f"{name},tritium/{peer},{r[0]:.3f},{r[1]:.3f},{r[2]:.3f}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dtype", default="f16", choices=["f16", "bf16", "f8e4nv"])
    p.add_argument("--shapes", default="64x256x128,128x256x256,1024x1024x1024,4096x4096x4096,"
                   "8192x8192x8192")
    p.add_argument("--descriptor", action="store_true")
    p.add_argument("--tritium-ptx", metavar="DIR")
    args = p.parse_args()
    if args.tritium_ptx and (args.descriptor or args.dtype == "f8e4nv"):
        sys.exit("gemm.py: --tritium-ptx times the pointer kernel in f16 or bf16")
    if args.descriptor:  # device-side descriptors take global scratch from an allocator
        triton.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda",
                                                                     dtype=torch.int8))
    kernel = matmul_desc_kernel if args.descriptor else matmul_kernel
    fp8 = args.dtype == "f8e4nv"
    if fp8:
        kernel = triton.autotune(configs=CONFIGS + FP8_CONFIGS,
                                 key=["M", "N", "K", "EPILOGUE"])(kernel.fn)
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f8e4nv": torch.float8_e4m3fn}[args.dtype]
    out_dt = torch.float16 if fp8 else dt
    print("workload,peer,us,q20_us,q80_us" if args.tritium_ptx else
          "workload,peer,us,tflops,host_us")
    for shape in args.shapes.split(","):
        M, K, N = (int(x) for x in shape.split("x"))
        a = torch.randn(M, K, device="cuda").to(dt)
        b = torch.randn(K, N, device="cuda").to(dt)
        if fp8:  # column-major: the layout cuBLASLt requires and Triton's fp8 path prefers
            b = b.t().contiguous().t()
        bias = torch.randn(N, device="cuda", dtype=torch.float32)
        biasd = bias.to(out_dt)
        c = torch.empty(M, N, device="cuda", dtype=out_dt)
        one = torch.ones((), device="cuda", dtype=torch.float32)
        flop = 2.0 * M * N * K
        reps = max(3, min(200, int(2e11 / flop)))
        for epi in (False, True):
            grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)
            if args.descriptor:
                run = lambda: kernel[grid](a, b, bias, c, M, N, K, EPILOGUE=epi)
            else:
                run = lambda: kernel[grid](a, b, bias, c, M, N, K, a.stride(0), a.stride(1),
                                           b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                           EPILOGUE=epi)
            run()
            ref = a.float() @ b.float()
            if epi:
                ref = torch.relu(ref + bias)
            if fp8:  # Hopper's fp8 wgmma accumulates with fewer bits than f32: a norm-wise check
                err = (c.float() - ref).abs().max().item() / ref.abs().max().item()
                assert err < 2e-2, f"triton wrong ({err})"
                if not epi:  # the error beside bench_gemm's (it prints its own on stderr)
                    cu = torch._scaled_mm(a, b, one, one, out_dtype=out_dt).float()
                    cu_err = (cu - ref).abs().max().item() / ref.abs().max().item()
                    print(f"{M}x{K}x{N}: largest error triton {err:.3g}, cublaslt {cu_err:.3g} "
                          "of the largest entry", file=sys.stderr)
            else:
                assert torch.allclose(c.float(), ref, rtol=3e-2, atol=3e-1), "triton wrong"
            name = f"{'gemm_bias_relu' if epi else 'gemm'} {args.dtype} {M}x{K}x{N}"
            cfg = kernel.best_config
            if args.tritium_ptx:
                ours, label = tritium_launch(args.tritium_ptx, "gemm_bias_relu" if epi else "gemm",
                                             M, K, N, a, b, bias, c)
                if ours is None:  # bench_gemm --only left this workload out
                    print(f"gemm.py: {name}: tritium: {label}; skipped", file=sys.stderr)
                    continue
                c.zero_()
                ours()
                torch.cuda.synchronize()
                assert torch.allclose(c.float(), ref, rtol=3e-2, atol=3e-1), "tritium wrong"
                peer = ("addmm_relu", lambda: torch.relu(torch.addmm(biasd, a, b))) if epi \
                    else ("cublas", lambda: a @ b)
                tcfg = f"{cfg.kwargs['BM']}x{cfg.kwargs['BN']}x{cfg.kwargs['BK']}:" \
                    f"{cfg.num_warps}:{cfg.num_stages}"
                paired_rows(name, {"tritium": ours, "triton": run, peer[0]: peer[1]},
                            {"tritium": f"tritium {label}", "triton": f"triton {tcfg}"})
                continue
            us = timeit(run, reps)
            print(f"{name},triton {'descriptor ' if args.descriptor else ''}{cfg.kwargs['BM']}x{cfg.kwargs['BN']}x{cfg.kwargs['BK']}:"
                  f"{cfg.num_warps}:{cfg.num_stages},{us:.1f},{flop / us / 1e6:.1f},"
                  f"{host_us(run):.1f}", flush=True)
            if fp8:
                scaled = lambda: torch._scaled_mm(a, b, one, one, out_dtype=out_dt)
                peers = ([("torch_scaled_mm_bias_relu",
                           lambda: torch.relu(torch._scaled_mm(a, b, one, one, bias=biasd,
                                                               out_dtype=out_dt)))]
                         if epi else [("cublaslt_scaled_mm", scaled)])
            else:
                peers = ([("torch_unfused", lambda: torch.relu(a @ b + biasd)),
                          ("torch_addmm_relu", lambda: torch.relu(torch.addmm(biasd, a, b)))]
                         if epi else [("cublas", lambda: a @ b)])
            for peer, fn in peers:
                us = timeit(fn, reps)
                print(f"{name},{peer},{us:.1f},{flop / us / 1e6:.1f},{host_us(fn):.1f}",
                      flush=True)


if __name__ == "__main__":
    main()
