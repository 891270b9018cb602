"""tritium's row kernels at every occupancy their registers allow, each paired with Triton's own
launch: the measurement behind Lowering::min_blocks_per_sm (docs/gpu-codegen.md).

For each kernel that `bench_roofline --device cuda --dump DIR` wrote, the PTX as tritium's
runtime loaded it, the same PTX without `.minnctapersm`, and with `.minnctapersm B` for every B
that fits more blocks than without; each assembled as tritium's runtime assembles PTX (the
driver's JIT linker), checked against PyTorch, and timed round by round with Triton's kernel of
the same source (roofline.py's bench_rounds). Prints registers, local (spill) bytes, blocks per
SM, GB/s and the median over rounds of Triton's time over this version's.

Usage: python3 bench/compare/occupancy_sweep.py DIR [--cols N,N...]
"""
import ctypes
import json
import os
import re
import statistics
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roofline as R  # noqa: E402

CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3


def with_directive(ptx, directive):
    ptx = re.sub(r"\.minnctapersm \d+\n", "", ptx)
    if directive:
        ptx = re.sub(r"(\.maxntid [^\n]*\n)", r"\1" + directive + "\n", ptx, count=1)
    return ptx


def local_bytes(k):
    v = ctypes.c_int()
    R.PtxKernel._cuda.cuFuncGetAttribute(ctypes.byref(v), CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k.fn)
    return v.value


def blocks(k):
    v = ctypes.c_int()
    R.PtxKernel._cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(v), k.fn, k.threads,
                                                                   ctypes.c_size_t(k.shared))
    return v.value


def sweep(workload, size, name, grid, args, tri, nbytes, verify, out):
    d = os.path.join(R.TRITIUM_PTX, f"{workload}.{size}")
    meta = json.load(open(os.path.join(d, name + ".json")))
    ptx = open(os.path.join(d, name + ".ptx")).read()
    make = lambda text: R.PtxKernel(text, meta["name"], meta["num_threads"], meta["shared_bytes"])
    had = re.search(r"\.minnctapersm \d+", ptx)
    versions = {"as loaded" + (f" ({had.group(0)})" if had else ""): make(ptx)}
    plain = make(with_directive(ptx, ""))
    versions["no directive"] = plain
    for b in range(blocks(plain) + 1, 2048 // meta["num_threads"] + 1):
        k = make(with_directive(ptx, f".minnctapersm {b}"))
        if blocks(k) > blocks(plain):
            versions[f".minnctapersm {b}"] = k
    fns = [tri]
    for k in versions.values():
        fn = k.launcher(grid, args)
        out.zero_()
        fn()
        torch.cuda.synchronize()
        verify()
        fns.append(fn)
    times = R.bench_rounds(fns)
    for (label, k), t in zip(versions.items(), times[1:]):
        ratio = statistics.median(a / b for a, b in zip(times[0], t))
        print(f"{workload:20s} {size:6d} {label:26s} {k.registers:4d} registers {local_bytes(k):5d} B "
              f"local {blocks(k):2d} blocks {nbytes / statistics.median(t) / 1e6:6.0f} GB/s "
              f"{ratio:.3f} x Triton", flush=True)


def main():
    args = sys.argv[1:]
    if not args or not os.path.isdir(args[0]):
        sys.exit("usage: occupancy_sweep.py DIR [--cols N,N...] (DIR: bench_roofline --dump DIR)")
    R.TRITIUM_PTX = args[0]
    cols = [1024, 4096, 8192, 12288]
    if "--cols" in args:
        cols = [int(v) for v in args[args.index("--cols") + 1].split(",")]
    M, dev = 4096, "cuda"
    for n in cols:
        x = (-2.3 + 0.5 * torch.randn(M, n, device=dev)).half()
        w = (0.5 + 0.3 * torch.randn(n, device=dev)).half()
        b = (0.5 + 0.3 * torch.randn(n, device=dev)).half()
        y = torch.empty_like(x)
        mean, rstd = torch.empty(M, device=dev), torch.empty(M, device=dev)
        block = triton.next_power_of_2(n)
        warps = R.norm_warps(block)
        ref = torch.nn.functional.layer_norm(x.float(), (n, ), w.float(), b.float(), 1e-5)
        for workload, kernel in (("layer_norm_fp16", R._layer_norm_fwd_fused),
                                 ("layer_norm_row_fp16", R.layer_norm_fwd_row)):
            tri = lambda: kernel[(M, )](x, y, w, b, mean, rstd, x.stride(0), n, 1e-5,
                                        BLOCK_SIZE=block, num_warps=warps)
            tri()
            sweep(workload, n, kernel.__name__.lstrip("_"), (M, ),
                  (x, y, w, b, mean, rstd, x.stride(0), n, 1e-5), tri, 4 * x.numel(),
                  lambda: R.check(workload, y, ref, 1e-2, 0), y)
        xf = x.float()
        rref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
        tri = lambda: R.rmsnorm_kernel[(M, )](x, w, y, n, 1e-6, BLOCK_SIZE=block, num_warps=warps)
        tri()
        sweep("rmsnorm_fp16", n, "rmsnorm_kernel", (M, ), (x, w, y, n, 1e-6), tri, 4 * x.numel(),
              lambda: R.check("rmsnorm", y, rref, 1e-2, 0), y)
        xs = 3 * torch.randn(M, n, device=dev)
        ys = torch.empty_like(xs)
        tri = lambda: R.softmax_kernel[(M, )](ys, xs, xs.stride(0), ys.stride(0), M, n, block, 4,
                                              num_warps=8)
        tri()
        sweep("softmax_fp32", n, "softmax_kernel", (M, ), (ys, xs, xs.stride(0), ys.stride(0), M, n),
              tri, 8 * xs.numel(), lambda: R.check("softmax", ys, torch.softmax(xs, -1), 1e-6, 1e-4),
              ys)


if __name__ == "__main__":
    main()
