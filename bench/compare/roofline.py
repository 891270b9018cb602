"""The peers of bench_roofline on a GPU: Triton's kernels of the same source (bench/roofline/
kernels.hpp, line for line) and PyTorch, on the same shapes, timed the same way: Triton's
do_bench (256 MB of cache cleared before every timed run, device events, median; quantiles 0.2
and 0.8), every result checked against PyTorch in float32.

Launch parameters are the tutorials': BLOCK 1024 for the elementwise kernels, one program per
row with num_warps 8 for softmax, num_warps = min(max(BLOCK // 256, 1), 8) for the norms.
"triton_persistent" is tutorial 02's own launch of the softmax: as many programs as fit on the
GPU at once (from the kernel's register count), each looping over rows, with num_stages.

--tritium-ptx DIR: also times tritium's own kernels under this harness (provider "tritium_ptx"):
the PTX and launch metadata that `bench_roofline --dump DIR` wrote, assembled as tritium's
runtime assembles them (the driver's JIT linker, cuLink*: the same machine code, registers
included, as bench_roofline ran) and launched with cuLaunchKernel on PyTorch's stream; beside it
Triton's own PTX assembled the same way ("triton_ptx"), which separates what the PTX and the
PTX-to-SASS assembler (Triton's ptxas against the driver's) each contribute. The three (Triton's
own launch, tritium_ptx, triton_ptx) are timed round by round, the order rotating, so that the
GPU's drift lands on all alike; --paired FILE writes the median over rounds of Triton's time
over tritium's (workload,size,ratio,q20,q80,rounds), the comparison least moved by the harness
and by drift. cuModuleLoadData on the same PTX gives other machine code than cuLink (layer norm
over 8192 halves: 64 registers and 2446 GB/s against 80 and 3059), so it is not used.

Usage: python3 roofline.py [--quick] [--ptx DIR] [--tritium-ptx DIR [--paired FILE]] [--n N,N...] [--cols N,N...] [WORKLOAD...] > peers.csv
CSV columns: workload,size,provider,gbps,median_ms,q20_ms,q80_ms
--ptx DIR: also writes each Triton kernel's PTX (DIR/<workload>.<size>.ptx) and its register and
spill counts (DIR/triton_regs.csv), to compare with tritium's (TRITIUM_DUMP, ptxas -v).
--n, --cols: the elementwise sizes and the row lengths instead of the defaults (as bench_roofline).
"""
import glob
import json
import os
import sys

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.testing import do_bench

from paired import PtxKernel, bench_rounds, jit_of, quantiles  # noqa: F401 (also used by importers)


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


@triton.jit
def silu_mul_kernel(g_ptr, u_ptr, h_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=mask).to(tl.float32)
    tl.store(h_ptr + offs, (g * tl.sigmoid(g) * u).to(tl.float16), mask=mask)


@triton.jit
def gelu_mul_kernel(g_ptr, u_ptr, h_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=mask).to(tl.float32)
    inner = 0.7978845608028654 * (g + 0.044715 * g * g * g)
    gelu = 0.5 * g * (1.0 + libdevice.tanh(inner))
    tl.store(h_ptr + offs, (gelu * u).to(tl.float16), mask=mask)


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


@triton.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def layer_norm_fwd_row(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    b = tl.load(B + cols, mask=mask).to(tl.float32)
    tl.store(Y + row * stride + cols, xc * rstd * w + b, mask=mask)


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, (x * rstd * w).to(tl.float16), mask=mask)


TRITIUM_PTX = None


def tritium_kernel(workload, size, name):
    """tritium's kernel `name` that `bench_roofline --dump` wrote for `workload` at `size` (or
    at another size, where the same compiled kernel served both)."""
    for d in [os.path.join(TRITIUM_PTX, f"{workload}.{size}")] + sorted(
            glob.glob(os.path.join(TRITIUM_PTX, f"{workload}.*"))):
        ptx, meta = os.path.join(d, name + ".ptx"), os.path.join(d, name + ".json")
        if os.path.exists(ptx) and os.path.exists(meta):
            m = json.load(open(meta))
            if m["global_scratch_bytes"]:
                return None
            return PtxKernel(open(ptx).read(), m["name"], m["num_threads"], m["shared_bytes"],
                             jit_of(ptx))
    return None


def same_harness(workload, size, nbytes, grid, args, tri, tritium_name, out, verify):
    """With --tritium-ptx: tritium's kernel and Triton's PTX (`tri()`'s), both assembled as
    tritium's runtime assembles PTX, timed here round by round with Triton's own launch `tri`;
    `out` is cleared before each is checked."""
    if not TRITIUM_PTX:
        return
    compiled = tri()
    fns = {"triton": tri}
    for provider, k in (("tritium_ptx", tritium_kernel(workload, size, tritium_name)),
                        ("triton_ptx", PtxKernel(compiled.asm["ptx"], compiled.metadata.name,
                                                 compiled.metadata.num_warps * 32,
                                                 compiled.metadata.shared))):
        fn = k.launcher(grid, args) if k else None
        if fn is None:
            print(f"roofline.py: {provider} {workload} {size}: no kernel with these parameters",
                  file=sys.stderr)
            continue
        out.zero_()
        fn()
        verify()
        print(f"roofline.py: {provider} {workload} {size}: {k.registers} registers",
              file=sys.stderr)
        fns[provider] = fn
    times = dict(zip(fns, bench_rounds(list(fns.values()))))
    for provider in list(fns)[1:]:
        print_row(workload, size, provider, nbytes, *quantiles(times[provider]))
    if PAIRED and "tritium_ptx" in times:
        ratios = [a / b for a, b in zip(times["triton"], times["tritium_ptx"])]
        mid, lo, hi = quantiles(ratios)
        with open(PAIRED, "a") as f:
            f.write(f"{workload},{size},{mid:.4f},{lo:.4f},{hi:.4f},{len(ratios)}\n")


PTX_DIR = None
PAIRED = None


def keep(workload, size, compiled):
    """Records a compiled Triton kernel's PTX, registers and spills (with --ptx DIR)."""
    if not PTX_DIR:
        return
    compiled._init_handles()  # (already done by its launch; reads n_regs and n_spills)
    with open(os.path.join(PTX_DIR, f"{workload}.{size}.ptx"), "w") as f:
        f.write(compiled.asm["ptx"])
    with open(os.path.join(PTX_DIR, "triton_regs.csv"), "a") as f:
        f.write(f"{workload},{size},{compiled.n_regs},{compiled.n_spills}\n")


def emit(workload, size, provider, nbytes, fn):
    print_row(workload, size, provider, nbytes, *do_bench(fn, quantiles=[0.5, 0.2, 0.8]))


def print_row(workload, size, provider, nbytes, ms, lo, hi):
    print(f"{workload},{size},{provider},{nbytes / (ms * 1e-3) / 1e9:.2f},{ms:.6f},{lo:.6f},"
          f"{hi:.6f}", flush=True)


def check(name, got, ref, atol, rtol):
    if not torch.allclose(got.float(), ref.float(), atol=atol, rtol=rtol):
        err = (got.float() - ref.float()).abs().max().item()
        sys.exit(f"roofline.py: {name}: wrong result (max difference {err})")


def norm_warps(block):
    return min(max(block // 256, 1), 8)


def main():
    global PTX_DIR, TRITIUM_PTX, PAIRED
    args = sys.argv[1:]
    if "--tritium-ptx" in args:
        i = args.index("--tritium-ptx")
        TRITIUM_PTX = args[i + 1]
        del args[i:i + 2]
    if "--paired" in args:
        i = args.index("--paired")
        PAIRED = args[i + 1]
        del args[i:i + 2]
        if not TRITIUM_PTX:
            sys.exit("roofline.py: --paired pairs tritium's kernels with Triton's: it needs "
                     "--tritium-ptx DIR")
    quick = "--quick" in args
    if "--ptx" in args:
        PTX_DIR = args[args.index("--ptx") + 1]
        os.makedirs(PTX_DIR, exist_ok=True)
        args.remove(PTX_DIR)
    sizes = {}
    for flag in ("--n", "--cols"):
        if flag in args:
            i = args.index(flag)
            sizes[flag] = [int(v) for v in args[i + 1].split(",")]
            del args[i:i + 2]
    only = [a for a in args if not a.startswith("-")]
    wanted = lambda w: not only or w in only
    torch.manual_seed(0)
    dev = "cuda"
    flat = [1 << 16, 3 << 14] if quick else [1 << 20, 1 << 22, 1 << 24, 1 << 26]
    cols = [1000, 4096] if quick else [512, 1024, 2048, 4096, 8192, 12288, 16384]
    flat = sizes.get("--n", flat)
    cols = sizes.get("--cols", cols)
    M = 256 if quick else 4096
    props = triton.runtime.driver.active.utils.get_device_properties(torch.cuda.current_device())

    if wanted("vector_add_fp32"):
        for n in flat:
            x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
            out = torch.empty_like(x)
            tri = lambda: add_kernel[(triton.cdiv(n, 1024), )](x, y, out, n, BLOCK_SIZE=1024)
            keep("vector_add_fp32", n, tri())
            check("vector add", out, x + y, 0, 0)
            emit("vector_add_fp32", n, "triton", 12 * n, tri)
            same_harness("vector_add_fp32", n, 12 * n, (triton.cdiv(n, 1024), ), (x, y, out, n),
                         tri, "add_kernel", out, lambda: check("vector add", out, x + y, 0, 0))
            emit("vector_add_fp32", n, "torch", 12 * n, lambda: torch.add(x, y, out=out))

    if wanted("silu_mul_fp16"):
        for n in flat:
            g = (2 * torch.randn(n, device=dev)).half()
            u = torch.randn(n, device=dev).half()
            h = torch.empty_like(g)
            tri = lambda: silu_mul_kernel[(triton.cdiv(n, 1024), )](g, u, h, n, BLOCK_SIZE=1024)
            keep("silu_mul_fp16", n, tri())
            check("silu_mul", h, torch.nn.functional.silu(g.float()) * u.float(), 2e-3, 2e-3)
            emit("silu_mul_fp16", n, "triton", 6 * n, tri)
            same_harness(
                "silu_mul_fp16", n, 6 * n, (triton.cdiv(n, 1024), ), (g, u, h, n), tri,
                "silu_mul_kernel", h, lambda: check(
                    "silu_mul", h, torch.nn.functional.silu(g.float()) * u.float(), 2e-3, 2e-3))
            emit("silu_mul_fp16", n, "torch", 6 * n, lambda: torch.nn.functional.silu(g) * u)

    if wanted("gelu_mul_fp16"):
        for n in flat:
            g = (2 * torch.randn(n, device=dev)).half()
            u = torch.randn(n, device=dev).half()
            h = torch.empty_like(g)
            gelu = lambda t: torch.nn.functional.gelu(t, approximate="tanh")
            tri = lambda: gelu_mul_kernel[(triton.cdiv(n, 1024), )](g, u, h, n, BLOCK_SIZE=1024)
            keep("gelu_mul_fp16", n, tri())
            check("gelu_mul", h, gelu(g.float()) * u.float(), 2e-3, 2e-3)
            emit("gelu_mul_fp16", n, "triton", 6 * n, tri)
            same_harness(
                "gelu_mul_fp16", n, 6 * n, (triton.cdiv(n, 1024), ), (g, u, h, n), tri,
                "gelu_mul_kernel", h,
                lambda: check("gelu_mul", h, gelu(g.float()) * u.float(), 2e-3, 2e-3))
            emit("gelu_mul_fp16", n, "torch", 6 * n, lambda: gelu(g) * u)

    if wanted("softmax_fp32"):
        for n in cols:
            x = 3 * torch.randn(M, n, device=dev)
            y = torch.empty_like(x)
            block = triton.next_power_of_2(n)
            nbytes = 2 * x.numel() * 4
            tri = lambda: softmax_kernel[(M, )](y, x, x.stride(0), y.stride(0), M, n, block, 4,
                                                num_warps=8)
            keep("softmax_fp32", n, tri())
            check("softmax", y, torch.softmax(x, -1), 1e-6, 1e-4)
            emit("softmax_fp32", n, "triton", nbytes, tri)
            same_harness("softmax_fp32", n, nbytes, (M, ),
                         (y, x, x.stride(0), y.stride(0), M, n), tri, "softmax_kernel", y,
                         lambda: check("softmax", y, torch.softmax(x, -1), 1e-6, 1e-4))
            # Tutorial 02's launch: a persistent grid sized from the register count.
            stages = 4 if props["max_shared_mem"] > 200000 else 2
            k = softmax_kernel.warmup(y, x, x.stride(0), y.stride(0), M, n, BLOCK_SIZE=block,
                                      num_stages=stages, num_warps=8, grid=(1, ))
            k._init_handles()
            occupancy = props["max_num_regs"] // (k.n_regs * props["warpSize"] * 8)
            if k.metadata.shared:
                occupancy = min(occupancy, props["max_shared_mem"] // k.metadata.shared)
            programs = min(props["multiprocessor_count"] * max(occupancy, 1), M)
            y.zero_()
            per = lambda: k[(programs, 1, 1)](y, x, x.stride(0), y.stride(0), M, n, block, stages)
            per()
            check("softmax (persistent)", y, torch.softmax(x, -1), 1e-6, 1e-4)
            emit("softmax_fp32", n, "triton_persistent", nbytes, per)
            emit("softmax_fp32", n, "torch", nbytes, lambda: torch.softmax(x, -1))

    for name, kernel in (("layer_norm_fp16", _layer_norm_fwd_fused),
                         ("layer_norm_row_fp16", layer_norm_fwd_row)):
        if not wanted(name):
            continue
        for n in cols:
            x = (-2.3 + 0.5 * torch.randn(M, n, device=dev)).half()
            w = (0.5 + 0.3 * torch.randn(n, device=dev)).half()
            b = (0.5 + 0.3 * torch.randn(n, device=dev)).half()
            y = torch.empty_like(x)
            mean = torch.empty(M, device=dev)
            rstd = torch.empty(M, device=dev)
            block = min(65536 // 2, triton.next_power_of_2(n))
            tri = lambda: kernel[(M, )](x, y, w, b, mean, rstd, x.stride(0), n, 1e-5,
                                        BLOCK_SIZE=block, num_warps=norm_warps(block))
            keep(name, n, tri())
            ref = torch.nn.functional.layer_norm(x.float(), (n, ), w.float(), b.float(), 1e-5)
            check(name, y, ref, 1e-2, 0)
            nbytes = 2 * x.numel() * 2
            emit(name, n, "triton", nbytes, tri)
            same_harness(name, n, nbytes, (M, ), (x, y, w, b, mean, rstd, x.stride(0), n, 1e-5),
                         tri, kernel.__name__.lstrip("_"), y, lambda: check(name, y, ref, 1e-2, 0))
            emit(name, n, "torch", nbytes,
                 lambda: torch.nn.functional.layer_norm(x, (n, ), w, b, 1e-5))

    if wanted("rmsnorm_fp16"):
        for n in cols:
            x = (-2.3 + 0.5 * torch.randn(M, n, device=dev)).half()
            w = (0.5 + 0.3 * torch.randn(n, device=dev)).half()
            y = torch.empty_like(x)
            block = triton.next_power_of_2(n)
            tri = lambda: rmsnorm_kernel[(M, )](x, w, y, n, 1e-6, BLOCK_SIZE=block,
                                                num_warps=norm_warps(block))
            keep("rmsnorm_fp16", n, tri())
            xf = x.float()
            ref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
            check("rmsnorm", y, ref, 1e-2, 0)
            nbytes = 2 * x.numel() * 2
            emit("rmsnorm_fp16", n, "triton", nbytes, tri)
            same_harness("rmsnorm_fp16", n, nbytes, (M, ), (x, w, y, n, 1e-6), tri,
                         "rmsnorm_kernel", y, lambda: check("rmsnorm", y, ref, 1e-2, 0))
            emit("rmsnorm_fp16", n, "torch", nbytes,
                 lambda: torch.nn.functional.rms_norm(x, (n, ), w, 1e-6))


if __name__ == "__main__":
    main()
