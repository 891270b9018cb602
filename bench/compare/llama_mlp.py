#!/usr/bin/env python3
"""PyTorch's side of examples/03_llama_mlp (the Llama MLP block with its RMSNorm):
out = (silu(Xn @ G) * (Xn @ U)) @ D, Xn = RMSNorm(X), fp16, on the GPU, eager and
torch.compile, at the example's shapes. Device time: triton.testing.do_bench (CUDA events, L2
cleared before each run, median); host: wall time per call including the synchronization,
median of 50 (what a decoding loop sees, launch cost included).

usage: llama_mlp.py [--tokens 16,4096] [--shapes 1024x11008,4096x11008]
prints CSV: workload,peer,device_us,host_us
"""
import argparse
import time

import torch
import triton.testing

EPS = 1e-6


def mlp(x, w, g, u, d):
    xf = x.float()
    xn = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).half()
    return (torch.nn.functional.silu(xn @ g) * (xn @ u)) @ d


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="16,4096")
    ap.add_argument("--shapes", default="1024x11008,4096x11008")
    args = ap.parse_args()
    compiled = torch.compile(mlp)
    print("workload,peer,device_us,host_us")
    for tokens in (int(t) for t in args.tokens.split(",")):
        for shape in args.shapes.split(","):
            hidden, inter = (int(v) for v in shape.split("x"))
            torch.manual_seed(hidden + inter)
            x = torch.rand(tokens, hidden, device="cuda", dtype=torch.float16) * 2 - 1
            w = torch.rand(hidden, device="cuda", dtype=torch.float16) + 0.5
            sg, sd = hidden ** -0.5, inter ** -0.5
            g = (torch.rand(hidden, inter, device="cuda", dtype=torch.float16) * 2 - 1) * sg
            u = (torch.rand(hidden, inter, device="cuda", dtype=torch.float16) * 2 - 1) * sg
            d = (torch.rand(inter, hidden, device="cuda", dtype=torch.float16) * 2 - 1) * sd
            name = f"llama_mlp {tokens}x{hidden}x{inter}"
            ref = mlp(x, w, g, u, d)
            for peer, fn in (("torch_eager", mlp), ("torch_compile", compiled)):
                out = fn(x, w, g, u, d)
                assert torch.allclose(out.float(), ref.float(), rtol=2e-2, atol=2e-2), peer
                call = lambda: fn(x, w, g, u, d)
                dev = triton.testing.do_bench(call, return_mode="median") * 1e3
                print(f"{name},{peer},{dev:.1f},{host_us(call):.1f}", flush=True)
            # The bytes every implementation must move: the three weight matrices and X/out.
            floor_bytes = 2 * (3 * hidden * inter + 2 * tokens * hidden)
            print(f"{name},memory_floor_at_4.8TB/s,{floor_bytes / 4.8e12 * 1e6:.1f},", flush=True)


if __name__ == "__main__":
    main()
