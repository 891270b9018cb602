"""The Triton twins of the zoo (bench/zoo, issue 35), timed on a GPU against tritium's own
kernels and PyTorch.

Each kernel of bench/zoo has a twin here: the same algorithm written the ordinary Triton way,
with the library's usual launch configuration (block sizes, num_warps), and the same runtime
parameters in the same order as the tritium kernel, so that one argument list launches both:
Triton's through its own launcher, tritium's from the PTX that `zoo --dump DIR` wrote, through
paired.PtxKernel. Every provider's result is checked before it is timed; triton, tritium_ptx
and torch are then timed round by round (paired.bench_rounds: do_bench's protocol, 256 MB of
cache cleared before every run, the order rotating), so that round i of each pairs up.

Declaring a twin
----------------
    @twin("transpose_2d")              # the C++ entry's name (zoo::Entry::name)
    def _(shape):                      # one of the entry's shape labels, e.g. "8192x8192"
        M, N = dims(shape)
        x = randn(M, N)                # fp16 on the GPU (dtype= for others)
        y = empty(N, M)
        grid = (cdiv(M, 64), cdiv(N, 64))
        args = (x, y, M, N)            # the runtime parameters, in tritium's order
        return Case(
            triton=lambda: transpose_2d_kernel[grid](*args, BLOCK_M=64, BLOCK_N=64),
            torch=lambda: y.copy_(x.t()),                          # or None
            tritium=[Launch("transpose_2d_kernel", grid, args)],   # in launch order
            outputs=[y],               # cleared before each provider's checked run
                                       # (reset=fn instead restores an in-place op's input)
            verify=lambda: check("y", y, x.t()),                   # raises on a mismatch
            bytes=2 * x.numel() * 2)   # and/or flops=

Launch names a tritium kernel as tritium::jit names it (the dumped files' name), its grid and
its runtime arguments: tensors, ints, floats. constexpr_ parameters are compiled into the PTX
and not passed; Triton takes them as keywords. Both specialize integer arguments equal to 1,
but tritium's PTX keeps the parameter (unused), so the argument is passed all the same.
Part B's twins live in zoo_twins_b.py (`from zoo import twin, Case, Launch, ...`), imported
from here when it is present.

Usage: python3 zoo.py [--tritium-ptx DIR] [--cases CSV] [--triton-asm DIR] [--jit-ab] [KERNEL...] > peers.csv
  --tritium-ptx DIR  also times tritium's kernels from `zoo --device cuda --full --dump DIR`
  --cases CSV        the (kernel, shape) cases: the CSV `zoo --csv` wrote (default: DIR's folders)
  --triton-asm DIR   writes Triton's PTX of each case to DIR/<kernel>.<shape>/ and logs both
  --jit-ab           also times tritium's PTX assembled the other way (runtime/cuda/jit_choice.hpp)
                     as tritium_ptx_other, and its ratio to tritium_ptx
                     sides' warps, registers, spills and shared memory
  KERNEL...          only these kernels
CSV: kernel,shape,provider,median_ms,q20_ms,q80_ms; per case also a row whose provider is
"tritium/triton", the median and 0.2/0.8 quantiles over rounds of tritium's time over Triton's
(below 1: tritium is faster); last, "geomean,all,tritium/triton,<geometric mean of the medians>".
Compile times, where this Triton reports them (CompileClock) and the --cases CSV has zoo's
compile_ms: rows "tritium_compile", "triton_compile" (ms; the three columns equal) and "compile
tritium/triton" per case whose Triton kernels were compiled in it, then "geomean,all,compile
tritium/triton,<geometric mean>,<smallest>,<largest>".
"""
import csv
import dataclasses
import json
import math
import os
import sys
from typing import Callable, List, Optional

import torch
import triton
import triton.language as tl
from triton import cdiv
from triton.language.extra import libdevice

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paired import PtxKernel, bench_rounds, jit_of, quantiles  # noqa: E402

# ---------------------------------------------------------------------------------------------
# The registry and what twins use.


@dataclasses.dataclass
class Launch:
    name: str  # the tritium kernel's name (tritium::jit's second argument)
    grid: tuple
    args: tuple  # runtime parameters in the kernel's order


@dataclasses.dataclass
class Case:
    triton: Callable[[], object]
    tritium: List[Launch]
    verify: Callable[[], None]
    outputs: list = dataclasses.field(default_factory=list)
    reset: Optional[Callable[[], object]] = None  # instead of clearing outputs (in-place ops)
    torch: Optional[Callable[[], object]] = None
    bytes: float = 0
    flops: float = 0


TWINS = {}


def twin(name):
    """Registers `fn(shape) -> Case` as the twin of the zoo entry `name`."""
    def register(fn):
        if name in TWINS:
            raise ValueError(f"zoo.py: two twins named {name}")
        TWINS[name] = fn
        return fn
    return register


def dims(shape):
    """'4096x32x128' -> [4096, 32, 128]."""
    return [int(v) for v in shape.split("x")]


def randn(*shape, dtype=torch.float16, scale=1.0, shift=0.0):
    return (torch.randn(*shape, device="cuda", dtype=torch.float32) * scale + shift).to(dtype)


def uniform(*shape, lo=-1.0, hi=1.0, dtype=torch.float16):
    return (torch.rand(*shape, device="cuda", dtype=torch.float32) * (hi - lo) + lo).to(dtype)


def empty(*shape, dtype=torch.float16):
    return torch.empty(*shape, device="cuda", dtype=dtype)


def check(name, got, ref, atol=0.0, rtol=0.0):
    """Raises AssertionError unless |got - ref| <= atol + rtol |ref| everywhere (exact when both
    are 0), comparing in float64."""
    g, r = got.double(), ref.double()
    bad = ~((g - r).abs() <= atol + rtol * r.abs()) & ~(g.isnan() & r.isnan()) & ~(g == r)
    if bad.any():
        i = bad.nonzero()[0].tolist()
        raise AssertionError(f"{name}{i} = {g[tuple(i)].item()} but the reference is "
                             f"{r[tuple(i)].item()} ({int(bad.sum())} elements differ)")


def row_warps(block):
    """num_warps for a row block, as Liger's calculate_settings picks it."""
    return 32 if block >= 32768 else 16 if block >= 8192 else 8 if block >= 2048 else 4


def next_pow2(n):
    return triton.next_power_of_2(n)


# ---------------------------------------------------------------------------------------------
# The twins (part A). Each Triton kernel mirrors bench/zoo/<name>.cpp.


@triton.jit
def transpose_2d_kernel(X, Y, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=mask)
    tl.store(Y + rn[:, None] * M + rm[None, :], tl.trans(x), mask=tl.trans(mask))


@twin("transpose_2d")
def _(shape):
    M, N = dims(shape)
    x, y = randn(M, N), empty(N, M)
    grid = (cdiv(M, 64), cdiv(N, 64))
    args = (x, y, M, N)
    return Case(triton=lambda: transpose_2d_kernel[grid](*args, BLOCK_M=64, BLOCK_N=64),
                torch=lambda: y.copy_(x.t()),
                tritium=[Launch("transpose_2d_kernel", grid, args)], outputs=[y],
                verify=lambda: check("y", y, x.t()), bytes=2 * x.numel() * 2)


@triton.jit
def batched_transpose_kernel(X, Y, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    batch = tl.program_id(2).to(tl.int64) * M * N
    X += batch
    Y += batch
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=mask)
    tl.store(Y + rn[:, None] * M + rm[None, :], tl.trans(x), mask=tl.trans(mask))


@twin("batched_transpose")
def _(shape):
    B, M, N = dims(shape)
    x, y = randn(B, M, N), empty(B, N, M)
    grid = (cdiv(M, 64), cdiv(N, 64), B)
    args = (x, y, M, N)
    return Case(triton=lambda: batched_transpose_kernel[grid](*args, BLOCK_M=64, BLOCK_N=64),
                torch=lambda: y.copy_(x.transpose(1, 2)),
                tritium=[Launch("batched_transpose_kernel", grid, args)], outputs=[y],
                verify=lambda: check("y", y, x.transpose(1, 2)), bytes=2 * x.numel() * 2)


def rope_tables(T, D):
    """cos and sin of position * 10000^(-2i/D), [T, D/2] float32 (bench/zoo/rope.hpp)."""
    pos = torch.arange(T, device="cuda", dtype=torch.float64)[:, None]
    freq = 10000.0**(-2.0 * torch.arange(D // 2, device="cuda", dtype=torch.float64) / D)
    angle = pos * freq[None, :]
    return angle.cos().float().contiguous(), angle.sin().float().contiguous()


@triton.jit
def rope_interleaved_kernel(Q, Cos, Sin, Out, n_heads, HEAD_DIM: tl.constexpr,
                            BLOCK_H: tl.constexpr):
    token = tl.program_id(0)
    h = tl.arange(0, BLOCK_H)
    d = tl.arange(0, HEAD_DIM)
    offs = token * n_heads * HEAD_DIM + h[:, None] * HEAD_DIM + d[None, :]
    mask = h[:, None] < n_heads
    x = tl.load(Q + offs, mask=mask).to(tl.float32)
    x0, x1 = tl.split(tl.reshape(x, (BLOCK_H, HEAD_DIM // 2, 2)))
    i = tl.arange(0, HEAD_DIM // 2)
    cos = tl.load(Cos + token * (HEAD_DIM // 2) + i)[None, :]
    sin = tl.load(Sin + token * (HEAD_DIM // 2) + i)[None, :]
    y = tl.join(x0 * cos - x1 * sin, x0 * sin + x1 * cos)
    tl.store(Out + offs, tl.reshape(y, (BLOCK_H, HEAD_DIM)), mask=mask)


def rope_interleaved_torch(q, cos, sin):
    x = q.float().unflatten(-1, (-1, 2))
    c, s = cos[:, None, :], sin[:, None, :]
    x0, x1 = x[..., 0], x[..., 1]
    return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), -1).flatten(-2)


@twin("rope_interleaved")
def _(shape):
    T, H, D = dims(shape)
    q, out = randn(T, H, D), empty(T, H, D)
    cos, sin = rope_tables(T, D)
    args = (q, cos, sin, out, H)
    return Case(
        triton=lambda: rope_interleaved_kernel[(T, )](*args, HEAD_DIM=D, BLOCK_H=next_pow2(H)),
        torch=lambda: out.copy_(rope_interleaved_torch(q, cos, sin)),
        tritium=[Launch("rope_interleaved_kernel", (T, ), args)], outputs=[out],
        verify=lambda: check("out", out, rope_interleaved_torch(q, cos, sin), 1e-3, 2e-3),
        bytes=2 * q.numel() * 2 + 2 * cos.numel() * 4)


@triton.jit
def rope_half_kernel(Q, Cos, Sin, Out, n_heads, HEAD_DIM: tl.constexpr, BLOCK_H: tl.constexpr):
    token = tl.program_id(0)
    h = tl.arange(0, BLOCK_H)
    i = tl.arange(0, HEAD_DIM // 2)
    first = token * n_heads * HEAD_DIM + h[:, None] * HEAD_DIM + i[None, :]
    second = first + HEAD_DIM // 2
    mask = h[:, None] < n_heads
    x1 = tl.load(Q + first, mask=mask).to(tl.float32)
    x2 = tl.load(Q + second, mask=mask).to(tl.float32)
    cos = tl.load(Cos + token * (HEAD_DIM // 2) + i)[None, :]
    sin = tl.load(Sin + token * (HEAD_DIM // 2) + i)[None, :]
    tl.store(Out + first, x1 * cos - x2 * sin, mask=mask)
    tl.store(Out + second, x2 * cos + x1 * sin, mask=mask)


def rope_half_torch(q, cos, sin):
    x1, x2 = q.float().chunk(2, -1)
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), -1)


@twin("rope_half")
def _(shape):
    T, H, D = dims(shape)
    q, out = randn(T, H, D), empty(T, H, D)
    cos, sin = rope_tables(T, D)
    args = (q, cos, sin, out, H)
    return Case(triton=lambda: rope_half_kernel[(T, )](*args, HEAD_DIM=D, BLOCK_H=next_pow2(H)),
                torch=lambda: out.copy_(rope_half_torch(q, cos, sin)),
                tritium=[Launch("rope_half_kernel", (T, ), args)], outputs=[out],
                verify=lambda: check("out", out, rope_half_torch(q, cos, sin), 1e-3, 2e-3),
                bytes=2 * q.numel() * 2 + 2 * cos.numel() * 4)


@triton.jit
def groupnorm_fwd_kernel(X, W, B, Y, Mean, Rstd, C, HW, G, eps, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    group = pid % G
    cpg = C // G
    size = cpg * HW
    base = pid.to(tl.int64) * size
    X += base
    Y += base
    sum = tl.zeros([BLOCK], dtype=tl.float32)
    sum_sq = tl.zeros([BLOCK], dtype=tl.float32)
    for off in tl.range(0, size, BLOCK):
        idx = off + tl.arange(0, BLOCK)
        x = tl.load(X + idx, mask=idx < size, other=0.).to(tl.float32)
        sum += x
        sum_sq += x * x
    mean = tl.sum(sum, 0) / size
    var = tl.sum(sum_sq, 0) / size - mean * mean
    rstd = tl.rsqrt(var + eps)
    tl.store(Mean + pid, mean)
    tl.store(Rstd + pid, rstd)
    for off in tl.range(0, size, BLOCK):
        idx = off + tl.arange(0, BLOCK)
        mask = idx < size
        channel = group * cpg + idx // HW
        w = tl.load(W + channel, mask=mask).to(tl.float32)
        b = tl.load(B + channel, mask=mask).to(tl.float32)
        x = tl.load(X + idx, mask=mask, other=0.).to(tl.float32)
        tl.store(Y + idx, (x - mean) * rstd * w + b, mask=mask)


@twin("groupnorm_fwd")
def _(shape):
    N, C, HW, G = dims(shape)
    x = randn(N, C, HW, shift=0.5)
    w, b = uniform(C, lo=0.5, hi=1.5), randn(C)
    y, mean, rstd = empty(N, C, HW), empty(N, G, dtype=torch.float32), empty(
        N, G, dtype=torch.float32)
    eps = 1e-5
    args = (x, w, b, y, mean, rstd, C, HW, G, eps)
    ref = lambda: torch.nn.functional.group_norm(x.float(), G, w.float(), b.float(), eps)
    return Case(
        triton=lambda: groupnorm_fwd_kernel[(N * G, )](*args, BLOCK=2048, num_warps=8),
        torch=lambda: torch.nn.functional.group_norm(x, G, w, b, eps),
        tritium=[Launch("groupnorm_fwd_kernel", (N * G, ), args)], outputs=[y, mean, rstd],
        verify=lambda: check("y", y, ref(), 4e-3, 4e-3), bytes=2 * x.numel() * 2)


IGNORE_INDEX = -100


def cross_entropy_inputs(BT, V):
    x = uniform(BT, V, lo=-8, hi=8)
    target = torch.randint(0, V, (BT, ), device="cuda", dtype=torch.int64)
    target[3::7] = IGNORE_INDEX
    return x, target


@triton.jit
def cross_entropy_fwd_kernel(X, Target, Loss, Lse, V, ignore_index, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row.to(tl.int64) * V
    target = tl.load(Target + row)
    m = float("-inf")
    d = 0.0
    for off in tl.range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, 0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
    lse = m + tl.log(d)
    keep = target != ignore_index
    x_target = tl.load(X + target, mask=keep).to(tl.float32)
    tl.store(Loss + row, tl.where(keep, lse - x_target, 0.0))
    tl.store(Lse + row, lse)


@twin("cross_entropy_fwd")
def _(shape):
    BT, V = dims(shape)
    x, target = cross_entropy_inputs(BT, V)
    loss, lse = empty(BT, dtype=torch.float32), empty(BT, dtype=torch.float32)
    block = min(next_pow2(V), 32768)
    args = (x, target, loss, lse, V, IGNORE_INDEX)
    F = torch.nn.functional
    return Case(
        triton=lambda: cross_entropy_fwd_kernel[(BT, )](*args, BLOCK=block,
                                                        num_warps=row_warps(block)),
        torch=lambda: F.cross_entropy(x, target, ignore_index=IGNORE_INDEX, reduction="none"),
        tritium=[Launch("cross_entropy_fwd_kernel", (BT, ), args)], outputs=[loss, lse],
        verify=lambda: (check("lse", lse, torch.logsumexp(x.double(), 1), 1e-4, 1e-5),
                        check("loss", loss, F.cross_entropy(x.double(), target, reduction="none",
                                                            ignore_index=IGNORE_INDEX), 1e-4,
                              1e-5)),
        bytes=x.numel() * 2)


@triton.jit
def cross_entropy_bwd_kernel(X, Target, Lse, DX, V, ignore_index, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row.to(tl.int64) * V
    DX += row.to(tl.int64) * V
    target = tl.load(Target + row)
    lse = tl.load(Lse + row)
    row_scale = tl.where(target != ignore_index, scale, 0.0)
    for off in tl.range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < V
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        p = tl.exp(x - lse)
        dx = (p - tl.where(cols == target, 1.0, 0.0)) * row_scale
        tl.store(DX + cols, dx, mask=mask)


@twin("cross_entropy_bwd")
def _(shape):
    BT, V = dims(shape)
    x, target = cross_entropy_inputs(BT, V)
    lse = torch.logsumexp(x.float(), 1)
    kept = int((target != IGNORE_INDEX).sum())
    scale = 1000.0 / kept
    dx = empty(BT, V)
    block = min(next_pow2(V), 32768)
    args = (x, target, lse, dx, V, IGNORE_INDEX, scale)

    def reference():
        p = torch.exp(x.float() - lse[:, None])
        rows = target != IGNORE_INDEX
        p[rows, target[rows]] -= 1
        return p * torch.where(rows, scale, 0.0)[:, None]

    return Case(
        triton=lambda: cross_entropy_bwd_kernel[(BT, )](*args, BLOCK=block,
                                                        num_warps=row_warps(block)),
        torch=reference, tritium=[Launch("cross_entropy_bwd_kernel", (BT, ), args)],
        outputs=[dx], verify=lambda: check("dx", dx, reference(), 1e-3, 4e-3),
        bytes=2 * x.numel() * 2)


@triton.jit
def argmax_kernel(X, Out, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row.to(tl.int64) * N
    best = float("-inf")
    best_index = 0
    for off in tl.range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        value, index = tl.max(x, 0, return_indices=True)
        best_index = tl.where(value > best, off + index, best_index)
        best = tl.maximum(best, value)
    tl.store(Out + row, best_index)


@twin("argmax")
def _(shape):
    M, N = dims(shape)
    x, out = uniform(M, N, lo=-8, hi=8), empty(M, dtype=torch.int64)
    block = min(next_pow2(N), 4096)
    args = (x, out, N)
    return Case(triton=lambda: argmax_kernel[(M, )](*args, BLOCK=block, num_warps=row_warps(block)),
                torch=lambda: torch.argmax(x, 1), tritium=[Launch("argmax_kernel", (M, ), args)],
                outputs=[out], verify=lambda: check("argmax", out, torch.argmax(x, 1)),
                bytes=x.numel() * 2)


@triton.jit
def cumsum_kernel(X, Y, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * N
    X += row
    Y += row
    carry = 0.0
    for off in tl.range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(X + cols, mask=mask, other=0.)
        tl.store(Y + cols, tl.cumsum(x, 0) + carry, mask=mask)
        carry += tl.sum(x, 0)


@twin("cumsum")
def _(shape):
    M, N = dims(shape)
    x = uniform(M, N, lo=0, hi=1, dtype=torch.float32)
    y = torch.empty_like(x)
    args = (x, y, N)
    return Case(triton=lambda: cumsum_kernel[(M, )](*args, BLOCK=1024),
                torch=lambda: torch.cumsum(x, 1), tritium=[Launch("cumsum_kernel", (M, ), args)],
                outputs=[y],
                verify=lambda: check("y", y, torch.cumsum(x.double(), 1), 1e-5, 1e-5 * N**0.5),
                bytes=2 * x.numel() * 4)


@triton.jit
def welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    delta = mean_b - mean_a
    w_b = tl.where(n == 0.0, 0.0, n_b / n)
    return mean_a + delta * w_b, m2_a + m2_b + delta * delta * n_a * w_b, n


@triton.jit
def var_mean_kernel(X, Var, Mean, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row.to(tl.int64) * N
    mean = tl.zeros([BLOCK], dtype=tl.float32)
    m2 = tl.zeros([BLOCK], dtype=tl.float32)
    count = tl.zeros([BLOCK], dtype=tl.float32)
    for off in tl.range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(X + cols, mask=mask, other=0.)
        count += tl.where(mask, 1.0, 0.0)
        delta = x - mean
        mean += tl.where(mask, delta / tl.maximum(count, 1.0), 0.0)
        m2 += tl.where(mask, delta * (x - mean), 0.0)
    row_mean, row_m2, row_count = tl.reduce((mean, m2, count), 0, welford_combine)
    tl.store(Var + row, row_m2 / (row_count - 1.0))
    tl.store(Mean + row, row_mean)


@twin("var_mean")
def _(shape):
    M, N = dims(shape)
    x = uniform(M, N, lo=9, hi=11, dtype=torch.float32)
    var, mean = empty(M, dtype=torch.float32), empty(M, dtype=torch.float32)
    args = (x, var, mean, N)

    def verify():
        v, m = torch.var_mean(x.double(), 1)
        check("var", var, v, 1e-6, 1e-4)
        check("mean", mean, m, 1e-6, 1e-5)

    return Case(triton=lambda: var_mean_kernel[(M, )](*args, BLOCK=1024),
                torch=lambda: torch.var_mean(x, 1), tritium=[Launch("var_mean_kernel", (M, ), args)],
                outputs=[var, mean], verify=verify, bytes=x.numel() * 4)


def glu_case(kernel, name, shape, torch_fn):
    """swiglu_fwd / geglu_fwd: c = act(a) * b, one program per row (Liger's launch)."""
    T, I = dims(shape)
    a, b, c = uniform(T, I, lo=-4, hi=4), uniform(T, I, lo=-2, hi=2), empty(T, I)
    block = next_pow2(I)
    args = (a, b, c, I)
    ref = lambda: torch_fn(a.double()) * b.double()
    return Case(triton=lambda: kernel[(T, )](*args, BLOCK=block, num_warps=row_warps(block)),
                torch=lambda: torch_fn(a) * b, tritium=[Launch(name, (T, ), args)], outputs=[c],
                verify=lambda: check("c", c, ref(), 2e-3, 4e-3), bytes=3 * a.numel() * 2)


@triton.jit
def swiglu_fwd_kernel(A, B, C, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    a = tl.load(A + row + cols, mask=mask, other=0).to(tl.float32)
    b = tl.load(B + row + cols, mask=mask, other=0)
    tl.store(C + row + cols, (a * tl.sigmoid(a)).to(tl.float16) * b, mask=mask)


@twin("swiglu_fwd")
def _(shape):
    return glu_case(swiglu_fwd_kernel, "swiglu_fwd_kernel", shape, torch.nn.functional.silu)


@triton.jit
def swiglu_bwd_kernel(DC, A, B, DA, DB, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    dc = tl.load(DC + row + cols, mask=mask, other=0).to(tl.float32)
    a = tl.load(A + row + cols, mask=mask, other=0).to(tl.float32)
    b = tl.load(B + row + cols, mask=mask, other=0).to(tl.float32)
    sig = tl.sigmoid(a)
    silu = a * sig
    tl.store(DB + row + cols, dc * silu, mask=mask)
    tl.store(DA + row + cols, dc * (silu * (1.0 - sig) + sig) * b, mask=mask)


@twin("swiglu_bwd")
def _(shape):
    T, I = dims(shape)
    dc, a, b = uniform(T, I), uniform(T, I, lo=-4, hi=4), uniform(T, I, lo=-2, hi=2)
    da, db = empty(T, I), empty(T, I)
    block = next_pow2(I)
    args = (dc, a, b, da, db, I)

    def reference():
        x = a.double()
        s = torch.sigmoid(x)
        return dc.double() * b.double() * s * (1 + x * (1 - s)), dc.double() * x * s

    def verify():
        ref_da, ref_db = reference()
        check("da", da, ref_da, 2e-3, 4e-3)
        check("db", db, ref_db, 2e-3, 4e-3)

    def torch_bwd():  # eager, as autograd's backward of silu(a) * b computes it
        s = torch.sigmoid(a.float())
        silu = a.float() * s
        return dc * silu, dc * b * (s * (1 + a.float() * (1 - s)))

    return Case(triton=lambda: swiglu_bwd_kernel[(T, )](*args, BLOCK=block,
                                                        num_warps=row_warps(block)),
                torch=torch_bwd, tritium=[Launch("swiglu_bwd_kernel", (T, ), args)],
                outputs=[da, db], verify=verify, bytes=5 * a.numel() * 2)


@triton.jit
def geglu_fwd_kernel(A, B, C, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    a = tl.load(A + row + cols, mask=mask, other=0).to(tl.float32)
    b = tl.load(B + row + cols, mask=mask, other=0)
    sqrt_2_over_pi = 0.7978845608028654
    inner = sqrt_2_over_pi * (a + 0.044715 * a * a * a)
    gelu = 0.5 * a * (1.0 + libdevice.tanh(inner))
    tl.store(C + row + cols, gelu.to(tl.float16) * b, mask=mask)


@twin("geglu_fwd")
def _(shape):
    return glu_case(geglu_fwd_kernel, "geglu_fwd_kernel", shape,
                    lambda a: torch.nn.functional.gelu(a, approximate="tanh"))


@triton.jit
def sum_partials_kernel(P, Out, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for i in tl.range(0, n_rows, BLOCK_M):
        rows = i + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        acc += tl.load(P + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.)
    tl.store(Out + cols, tl.sum(acc, 0), mask=cols < n_cols)


SUM_BLOCK_M, SUM_BLOCK_N = 32, 128


def sum_partials(partial, out, P, N):
    """Triton's launch of sum_partials_kernel, and tritium's."""
    grid, args = (cdiv(N, SUM_BLOCK_N), ), (partial, out, P, N)
    return (lambda: sum_partials_kernel[grid](*args, BLOCK_M=SUM_BLOCK_M, BLOCK_N=SUM_BLOCK_N),
            Launch("sum_partials_kernel", grid, args))


def norm_bwd_inputs(M, N, centered):
    dy, x, w = uniform(M, N), uniform(M, N, lo=-2, hi=3), uniform(N, lo=0.5, hi=1.5)
    xf = x.double()
    mean = xf.mean(1) if centered else torch.zeros(M, device="cuda", dtype=torch.float64)
    rstd = 1 / torch.sqrt(((xf - mean[:, None])**2).mean(1) + 1e-6)
    P = min(torch.cuda.get_device_properties(0).multi_processor_count, M)
    return dy, x, w, mean.float(), rstd.float(), P, cdiv(M, P)


@triton.jit
def rmsnorm_bwd_kernel(DY, X, W, Rstd, DX, DW_partial, n_rows, n_cols, rows_per_program,
                       BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(W + cols, mask=mask, other=0).to(tl.float32)
    dw = tl.zeros([BLOCK], dtype=tl.float32)
    row_start = pid * rows_per_program
    row_end = tl.minimum(row_start + rows_per_program, n_rows)
    for row in tl.range(row_start, row_end):
        offs = row.to(tl.int64) * n_cols + cols
        dy = tl.load(DY + offs, mask=mask, other=0).to(tl.float32)
        x = tl.load(X + offs, mask=mask, other=0).to(tl.float32)
        rstd = tl.load(Rstd + row)
        m = dy * w
        dx = rstd * (m - (rstd * rstd / n_cols) * tl.sum(m * x, 0) * x)
        tl.store(DX + offs, dx, mask=mask)
        dw += dy * x * rstd
    tl.store(DW_partial + pid * n_cols + cols, dw, mask=mask)


@twin("rmsnorm_bwd")
def _(shape):
    M, N = dims(shape)
    dy, x, w, _, rstd, P, rows_per_program = norm_bwd_inputs(M, N, False)
    dx, dw_partial, dw = empty(M, N), empty(P, N, dtype=torch.float32), empty(N, dtype=torch.float32)
    block = next_pow2(N)
    args = (dy, x, w, rstd, dx, dw_partial, M, N, rows_per_program)
    tri_sum, sum_launch = sum_partials(dw_partial, dw, P, N)

    def triton_fn():
        rmsnorm_bwd_kernel[(P, )](*args, BLOCK=block, num_warps=row_warps(block))
        tri_sum()

    def reference():
        d, xf, r = dy.double(), x.double(), rstd.double()[:, None]
        m = d * w.double()
        ref_dx = r * (m - r * r * (m * xf).mean(1, keepdim=True) * xf)
        return ref_dx, (d * xf * r).sum(0)

    def verify():
        ref_dx, ref_dw = reference()
        check("dx", dx, ref_dx, 2e-3, 4e-3)
        check("dw", dw, ref_dw, 1e-3, 1e-4)

    def torch_fn():  # eager, as autograd's graph of x * rstd * w computes it
        xf, r, m = x.float(), rstd[:, None], dy.float() * w.float()
        return r * (m - r * r * (m * xf).mean(1, keepdim=True) * xf), (dy.float() * xf * r).sum(0)

    return Case(triton=triton_fn, torch=torch_fn,
                tritium=[Launch("rmsnorm_bwd_kernel", (P, ), args), sum_launch],
                outputs=[dx, dw_partial, dw], verify=verify, bytes=3 * x.numel() * 2)


@triton.jit
def layernorm_bwd_kernel(DY, X, W, Mean, Rstd, DX, DW_partial, DB_partial, n_rows, n_cols,
                         rows_per_program, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(W + cols, mask=mask, other=0).to(tl.float32)
    dw = tl.zeros([BLOCK], dtype=tl.float32)
    db = tl.zeros([BLOCK], dtype=tl.float32)
    row_start = pid * rows_per_program
    row_end = tl.minimum(row_start + rows_per_program, n_rows)
    for row in tl.range(row_start, row_end):
        offs = row.to(tl.int64) * n_cols + cols
        dy = tl.load(DY + offs, mask=mask, other=0).to(tl.float32)
        x = tl.load(X + offs, mask=mask, other=0).to(tl.float32)
        x_hat = (x - tl.load(Mean + row)) * tl.load(Rstd + row)
        wdy = w * dy
        c1 = tl.sum(x_hat * wdy, 0) / n_cols
        c2 = tl.sum(wdy, 0) / n_cols
        tl.store(DX + offs, (wdy - (x_hat * c1 + c2)) * tl.load(Rstd + row), mask=mask)
        dw += dy * x_hat
        db += dy
    tl.store(DW_partial + pid * n_cols + cols, dw, mask=mask)
    tl.store(DB_partial + pid * n_cols + cols, db, mask=mask)


@twin("layernorm_bwd")
def _(shape):
    M, N = dims(shape)
    dy, x, w, mean, rstd, P, rows_per_program = norm_bwd_inputs(M, N, True)
    dx = empty(M, N)
    dw_partial, db_partial = empty(P, N, dtype=torch.float32), empty(P, N, dtype=torch.float32)
    dw, db = empty(N, dtype=torch.float32), empty(N, dtype=torch.float32)
    block = next_pow2(N)
    args = (dy, x, w, mean, rstd, dx, dw_partial, db_partial, M, N, rows_per_program)
    tri_dw, dw_launch = sum_partials(dw_partial, dw, P, N)
    tri_db, db_launch = sum_partials(db_partial, db, P, N)

    def triton_fn():
        layernorm_bwd_kernel[(P, )](*args, BLOCK=block, num_warps=row_warps(block))
        tri_dw()
        tri_db()

    def reference(dtype):
        d, r = dy.to(dtype), rstd.to(dtype)[:, None]
        x_hat = (x.to(dtype) - mean.to(dtype)[:, None]) * r
        wdy = w.to(dtype) * d
        c1 = (x_hat * wdy).mean(1, keepdim=True)
        c2 = wdy.mean(1, keepdim=True)
        return (wdy - (x_hat * c1 + c2)) * r, (d * x_hat).sum(0), d.sum(0)

    def verify():
        ref_dx, ref_dw, ref_db = reference(torch.float64)
        check("dx", dx, ref_dx, 2e-3, 4e-3)
        check("dw", dw, ref_dw, 1e-3, 1e-4)
        check("db", db, ref_db, 1e-3, 1e-4)

    return Case(triton=triton_fn, torch=lambda: reference(torch.float32),
                tritium=[Launch("layernorm_bwd_kernel", (P, ), args), dw_launch, db_launch],
                outputs=[dx, dw_partial, db_partial, dw, db], verify=verify,
                bytes=3 * x.numel() * 2)


def divergence_block(V):
    return min(next_pow2(V), 16384)


@triton.jit
def kl_div_kernel(Y_pred, Y_true, Loss, V, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    Y_pred += row.to(tl.int64) * V
    Y_true += row.to(tl.int64) * V
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in tl.range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < V
        y_pred = tl.load(Y_pred + cols, mask=mask, other=0.)
        y = tl.load(Y_true + cols, mask=mask, other=0.)
        acc += y * (tl.log(tl.maximum(y, eps)) - y_pred)
    tl.store(Loss + row, tl.sum(acc, 0))


def log_probs(BT, V):
    return torch.log_softmax(uniform(BT, V, lo=-4, hi=4, dtype=torch.float32), 1)


@twin("kl_div")
def _(shape):
    BT, V = dims(shape)
    y_pred, y_true = log_probs(BT, V), log_probs(BT, V).exp()
    loss = empty(BT, dtype=torch.float32)
    eps = 1e-10
    block = divergence_block(V)
    args = (y_pred, y_true, loss, V, eps)
    F = torch.nn.functional
    return Case(
        triton=lambda: kl_div_kernel[(BT, )](*args, BLOCK=block, num_warps=row_warps(block)),
        torch=lambda: F.kl_div(y_pred, y_true, reduction="none").sum(1),
        tritium=[Launch("kl_div_kernel", (BT, ), args)], outputs=[loss],
        verify=lambda: check("loss", loss, F.kl_div(y_pred.double(), y_true.double(),
                                                    reduction="none").sum(1), 1e-5, 1e-4),
        bytes=2 * y_pred.numel() * 4)


@triton.jit
def jsd_kernel(X, Y, Loss, DX, V, beta, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * V
    X += base
    Y += base
    DX += base
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in tl.range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < V
        x = tl.load(X + cols, mask=mask, other=0.)
        y = tl.load(Y + cols, mask=mask, other=0.)
        q = tl.exp(x)
        p = tl.exp(y)
        log_m = tl.log(beta * p + (1.0 - beta) * q)
        loss = beta * p * (y - log_m) + (1.0 - beta) * q * (x - log_m)
        acc += tl.where(mask, loss, 0.0)
        tl.store(DX + cols, (1.0 - beta) * q * (x - log_m), mask=mask)
    tl.store(Loss + row, tl.sum(acc, 0))


@twin("jsd")
def _(shape):
    BT, V = dims(shape)
    x, y = log_probs(BT, V), log_probs(BT, V)
    loss, dx = empty(BT, dtype=torch.float32), torch.empty_like(x)
    beta = 0.5
    block = divergence_block(V)
    args = (x, y, loss, dx, V, beta)

    def reference(dtype):
        xd, yd = x.to(dtype), y.to(dtype)
        q, p = xd.exp(), yd.exp()
        log_m = torch.log(beta * p + (1 - beta) * q)
        return ((beta * p * (yd - log_m) + (1 - beta) * q * (xd - log_m)).sum(1),
                (1 - beta) * q * (xd - log_m))

    def verify():
        ref_loss, ref_dx = reference(torch.float64)
        check("loss", loss, ref_loss, 1e-5, 1e-4)
        check("dx", dx, ref_dx, 1e-7, 1e-4)

    return Case(triton=lambda: jsd_kernel[(BT, )](*args, BLOCK=block, num_warps=row_warps(block)),
                torch=lambda: reference(torch.float32), tritium=[Launch("jsd_kernel", (BT, ), args)],
                outputs=[loss, dx], verify=verify, bytes=3 * x.numel() * 4)


@triton.jit
def embedding_kernel(Ids, Weight, Out, D, BLOCK: tl.constexpr):
    token = tl.program_id(0)
    id = tl.load(Ids + token)
    cols = tl.arange(0, BLOCK)
    mask = cols < D
    tl.store(Out + token.to(tl.int64) * D + cols, tl.load(Weight + id * D + cols, mask=mask),
             mask=mask)


@twin("embedding")
def _(shape):
    T, V, D = dims(shape)
    w = randn(V, D)
    ids = torch.randint(0, V, (T, ), device="cuda", dtype=torch.int64)
    out = empty(T, D)
    args = (ids, w, out, D)
    F = torch.nn.functional
    return Case(triton=lambda: embedding_kernel[(T, )](*args, BLOCK=next_pow2(D)),
                torch=lambda: F.embedding(ids, w), tritium=[Launch("embedding_kernel", (T, ), args)],
                outputs=[out], verify=lambda: check("out", out, F.embedding(ids, w)),
                bytes=2 * out.numel() * 2)


@triton.jit
def index_select_kernel(X, Index, Out, M, N, K, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rk = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    index = tl.load(Index + rk, mask=rk < K)
    mask = (rm[:, None] < M) & (rk[None, :] < K)
    rows = rm[:, None].to(tl.int64)
    x = tl.load(X + rows * N + index[None, :], mask=mask)
    tl.store(Out + rows * K + rk[None, :], x, mask=mask)


@twin("index_select")
def _(shape):
    M, N, K = dims(shape)
    x = randn(M, N)
    index = torch.randint(0, N, (K, ), device="cuda", dtype=torch.int64)
    out = empty(M, K)
    grid = (cdiv(M, 32), cdiv(K, 128))
    args = (x, index, out, M, N, K)
    return Case(triton=lambda: index_select_kernel[grid](*args, BLOCK_M=32, BLOCK_K=128),
                torch=lambda: x.index_select(1, index),
                tritium=[Launch("index_select_kernel", grid, args)], outputs=[out],
                verify=lambda: check("out", out, x.index_select(1, index)),
                bytes=2 * out.numel() * 2)


@triton.jit
def gather_kernel(X, Index, Out, N, K, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    row = offs // K
    index = tl.load(Index + offs, mask=mask)
    tl.store(Out + offs, tl.load(X + row * N + index, mask=mask), mask=mask)


@twin("gather")
def _(shape):
    M, N, K = dims(shape)
    x = randn(M, N)
    index = torch.randint(0, N, (M, K), device="cuda", dtype=torch.int64)
    out = empty(M, K)
    grid = (cdiv(M * K, 1024), )
    args = (x, index, out, N, K, M * K)
    return Case(triton=lambda: gather_kernel[grid](*args, BLOCK=1024),
                torch=lambda: torch.gather(x, 1, index),
                tritium=[Launch("gather_kernel", grid, args)], outputs=[out],
                verify=lambda: check("out", out, torch.gather(x, 1, index)),
                bytes=out.numel() * (2 * 2 + 8))


@triton.jit
def scatter_kernel(Src, Index, Out, N, K, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    row = offs // K
    index = tl.load(Index + offs, mask=mask)
    tl.store(Out + row * N + index, tl.load(Src + offs, mask=mask), mask=mask)


@twin("scatter")
def _(shape):
    M, N, K = dims(shape)
    x, src = randn(M, N), randn(M, K)
    index = torch.rand(M, N, device="cuda").argsort(1)[:, :K].contiguous()  # distinct per row
    out = x.clone()
    grid = (cdiv(M * K, 1024), )
    args = (src, index, out, N, K, M * K)
    return Case(triton=lambda: scatter_kernel[grid](*args, BLOCK=1024),
                torch=lambda: out.scatter_(1, index, src),
                tritium=[Launch("scatter_kernel", grid, args)], reset=lambda: out.copy_(x),
                verify=lambda: check("out", out, x.scatter(1, index, src)),
                bytes=src.numel() * (2 * 2 + 8))


def flat_grid(n):
    return (cdiv(n, 1024), )


@triton.jit
def where_clamp_pow_kernel(Cond, X, Y, Out, n, lo, hi, exponent, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    cond = tl.load(Cond + offs, mask=mask)
    x = tl.load(X + offs, mask=mask).to(tl.float32)
    y = tl.load(Y + offs, mask=mask).to(tl.float32)
    tl.store(Out + offs, tl.where(cond, tl.clamp(x, lo, hi), libdevice.pow(y, exponent)), mask=mask)


@twin("where_clamp_pow")
def _(shape):
    M, N = dims(shape)
    n = M * N
    cond = torch.rand(n, device="cuda") < 0.5
    x, y, out = uniform(n, lo=-2, hi=2), uniform(n, lo=0.25, hi=2), empty(n)
    lo, hi, exponent = -0.5, 1.0, 1.5
    args = (cond, x, y, out, n, lo, hi, exponent)
    ref = lambda: torch.where(cond, x.double().clamp(lo, hi), y.double().pow(exponent))
    return Case(triton=lambda: where_clamp_pow_kernel[flat_grid(n)](*args, BLOCK=1024),
                torch=lambda: torch.where(cond, x.clamp(lo, hi), y.pow(exponent)),
                tritium=[Launch("where_clamp_pow_kernel", flat_grid(n), args)], outputs=[out],
                verify=lambda: check("out", out, ref(), 1e-3, 2e-3), bytes=n * (3 * 2 + 1))


@triton.jit
def masked_fill_kernel(X, Mask, Out, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    fill = tl.load(Mask + offs, mask=inside)
    tl.store(Out + offs, tl.where(fill, value, tl.load(X + offs, mask=inside).to(tl.float32)),
             mask=inside)


@twin("masked_fill")
def _(shape):
    M, N = dims(shape)
    n = M * N
    x, out = randn(n), empty(n)
    mask = torch.rand(n, device="cuda") < 0.3
    value = -10000.0
    args = (x, mask, out, n, value)
    return Case(triton=lambda: masked_fill_kernel[flat_grid(n)](*args, BLOCK=1024),
                torch=lambda: x.masked_fill(mask, value),
                tritium=[Launch("masked_fill_kernel", flat_grid(n), args)], outputs=[out],
                verify=lambda: check("out", out, x.masked_fill(mask, value)), bytes=n * (2 * 2 + 1))


@triton.jit
def dropout_kernel(X, Out, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask).to(tl.float32)
    keep = tl.rand(seed, offs) > p
    tl.store(Out + offs, tl.where(keep, x / (1.0 - p), 0.0), mask=mask)


@twin("dropout")
def _(shape):
    M, N = dims(shape)
    n = M * N
    x, out = uniform(n, lo=0.5, hi=2), empty(n)
    p, seed = 0.25, 1234
    args = (x, out, n, p, seed)

    def verify():  # the numbers differ from torch's: check what holds whatever they are
        scaled = x.double() / (1 - p)
        kept = out != 0
        check("out (kept)", out[kept], scaled[kept], 1e-3, 2e-3)
        sigma = (n * p * (1 - p))**0.5
        assert abs(int(kept.sum()) - n * (1 - p)) <= 5 * sigma, f"{int(kept.sum())} of {n} kept"

    return Case(triton=lambda: dropout_kernel[flat_grid(n)](*args, BLOCK=1024),
                torch=lambda: torch.nn.functional.dropout(x, p, training=True),
                tritium=[Launch("dropout_kernel", flat_grid(n), args)], outputs=[out],
                verify=verify, bytes=2 * n * 2)


@triton.jit
def concat_kernel(A, B, Out, N1, N2, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    n = N1 + N2
    from_a = cols < N1
    a = tl.load(A + row * N1 + cols, mask=from_a)
    b = tl.load(B + row * N2 + (cols - N1), mask=(~from_a) & (cols < n))
    tl.store(Out + row * n + cols, tl.where(from_a, a, b), mask=cols < n)


@twin("concat")
def _(shape):
    M, N1, N2 = dims(shape)
    a, b, out = randn(M, N1), randn(M, N2), empty(M, N1 + N2)
    grid = (M, cdiv(N1 + N2, 1024))
    args = (a, b, out, N1, N2)
    return Case(triton=lambda: concat_kernel[grid](*args, BLOCK=1024),
                torch=lambda: torch.cat([a, b], 1), tritium=[Launch("concat_kernel", grid, args)],
                outputs=[out], verify=lambda: check("out", out, torch.cat([a, b], 1)),
                bytes=2 * out.numel() * 2)


PAD = dict(top=1, bottom=2, left=3, right=5)  # bench/zoo/pad.cpp's


@triton.jit
def pad_kernel(X, Out, M, N, out_n, top, left, value, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    in_row = row - top
    in_cols = cols - left
    inside = (in_row >= 0) & (in_row < M) & (in_cols >= 0) & (in_cols < N)
    x = tl.load(X + in_row.to(tl.int64) * N + in_cols, mask=inside, other=value)
    tl.store(Out + row.to(tl.int64) * out_n + cols, x, mask=cols < out_n)


@twin("pad")
def _(shape):
    M, N = dims(shape)
    out_m, out_n = M + PAD["top"] + PAD["bottom"], N + PAD["left"] + PAD["right"]
    x, out = randn(M, N), empty(out_m, out_n)
    value = -1.5
    grid = (out_m, cdiv(out_n, 1024))
    args = (x, out, M, N, out_n, PAD["top"], PAD["left"], value)
    ref = lambda: torch.nn.functional.pad(x, (PAD["left"], PAD["right"], PAD["top"], PAD["bottom"]),
                                          value=value)
    return Case(triton=lambda: pad_kernel[grid](*args, BLOCK=1024), torch=ref,
                tritium=[Launch("pad_kernel", grid, args)], outputs=[out],
                verify=lambda: check("out", out, ref()), bytes=(x.numel() + out.numel()) * 2)


# ---------------------------------------------------------------------------------------------
# The harness.

TRITIUM_PTX = None
JIT_AB = False  # --jit-ab
TRITON_ASM = None  # --triton-asm DIR: where Triton's compiled kernels of each case are written


def tritium_kernel(kernel, shape, name, other_jit=False):
    """The PTX kernel `name` that `zoo --dump` wrote for this case, or None; with `other_jit`,
    assembled the other way than the runtime did."""
    d = os.path.join(TRITIUM_PTX, f"{kernel}.{shape}")
    ptx, meta = os.path.join(d, name + ".ptx"), os.path.join(d, name + ".json")
    if not (os.path.exists(ptx) and os.path.exists(meta)):
        return None, f"no {ptx}"
    m = json.load(open(meta))
    if m["global_scratch_bytes"]:
        return None, f"{name} needs {m['global_scratch_bytes']} bytes of global scratch"
    jit = jit_of(ptx)
    if other_jit:
        jit = "link" if jit == "whole" else "whole"
    return PtxKernel(open(ptx).read(), m["name"], m["num_threads"], m["shared_bytes"], jit), ""


def tritium_launch(kernel, shape, case, other_jit=False):
    """One function running the case's tritium launches in order, or (None, why)."""
    fns = []
    for launch in case.tritium:
        k, why = tritium_kernel(kernel, shape, launch.name, other_jit)
        fn = k.launcher(launch.grid, launch.args) if k else None
        if fn is None:
            return None, why or f"{launch.name}: its PTX parameters are not the launch's arguments"
        fns.append(fn)

    def run():
        for fn in fns:
            fn()

    return run, ""


def checked(provider, kernel, shape, case, fn):
    """Whether `fn` leaves outputs that case.verify accepts (outputs cleared first)."""
    if case.reset:
        case.reset()
    for out in case.outputs:
        out.zero_()
    try:
        fn()
        torch.cuda.synchronize()
        case.verify()
        return True
    except Exception as e:  # a wrong result, or a launch the driver refused
        print(f"zoo.py: {kernel} {shape} {provider}: {e}", file=sys.stderr)
        return False


def row(kernel, shape, provider, values):
    print(f"{kernel},{shape},{provider}," + ",".join(f"{v:.5f}" for v in values), flush=True)


def jit_functions():
    """Every @triton.jit function of the twins' modules (an autotuner's inside it too)."""
    seen = []
    for mod in (sys.modules[__name__], sys.modules.get("zoo_twins_b")):
        for value in vars(mod).values() if mod else ():
            while hasattr(value, "fn") and not isinstance(value, triton.runtime.jit.JITFunction):
                value = value.fn  # Autotuner / Heuristics wrap the JITFunction
            if isinstance(value, triton.runtime.jit.JITFunction) and value not in seen:
                seen.append(value)
    return seen


_DUMPED = set()


def dump_triton_asm(kernel, shape, ours):
    """Writes the Triton kernels this case compiled (PTX, resources) to TRITON_ASM/<kernel>.<shape>
    and prints one line per kernel, Triton's next to tritium's (`ours`: name -> PtxKernel), so
    that a slower case can be read instruction by instruction offline."""
    d = os.path.join(TRITON_ASM, f"{kernel}.{shape}")
    for fn in jit_functions():
        for caches in getattr(fn, "device_caches", {}).values():
            for compiled in list(caches[0].values()):
                if id(compiled) in _DUMPED:
                    continue
                _DUMPED.add(id(compiled))
                try:
                    compiled._init_handles()
                except Exception:
                    pass
                os.makedirs(d, exist_ok=True)
                name = compiled.metadata.name
                with open(os.path.join(d, name + ".ptx"), "w") as f:
                    f.write(compiled.asm.get("ptx", ""))
                print(f"zoo.py: {kernel} {shape} triton {name}: {compiled.metadata.num_warps} warps, "
                      f"{getattr(compiled, 'n_regs', '?')} registers, "
                      f"{getattr(compiled, 'n_spills', '?')} spills, "
                      f"{compiled.metadata.shared} B shared", file=sys.stderr)
    for name, k in ours.items():
        print(f"zoo.py: {kernel} {shape} tritium {name}: {k.threads // 32} warps, "
              f"{k.registers} registers, {k.shared} B shared", file=sys.stderr)


class CompileClock:
    """Triton's own account of the kernels it compiles (knobs.compilation.listener, Triton 3.4
    on): front end to loadable binary, without the launch. Cache hits are not counted, so with an
    empty TRITON_CACHE_DIR each specialization's first compile is a cold one."""

    def __init__(self):
        self.us, self.kernels = 0, 0
        compilation = getattr(getattr(triton, "knobs", None), "compilation", None)
        self.available = compilation is not None and hasattr(compilation, "listener")
        if self.available:
            compilation.listener = self

    def __call__(self, *args, **kwargs):
        # (src, metadata, metadata_group, times, cache_hit), by position or by name; a listener
        # that raised would fail Triton's compile, so a shape it does not know is reported.
        try:
            named = dict(zip(("src", "metadata", "metadata_group", "times", "cache_hit"), args))
            named.update(kwargs)
            if named["cache_hit"]:
                return
            times = named["times"]
            total = getattr(times, "total", None)
            if total is None:
                total = times.ir_initialization + sum(us for _, us in times.lowering_stages) + \
                    times.store_results
            self.kernels += 1
            self.us += total
        except Exception as e:
            print(f"zoo.py: compile listener: {type(e).__name__}: {e}", file=sys.stderr)


CLOCK = None  # made in main()
TRITIUM_COMPILE_MS = {}  # (kernel, shape) -> zoo's compile_ms column (--cases CSV)


def compile_rows(kernel, shape, triton_us, triton_kernels, compile_ratios):
    """Compile times beside each other: Triton's where this case compiled a kernel of its own
    (a specialization an earlier case compiled is in Triton's memory already), tritium's from
    the zoo's CSV (each case compiled in a process of its own)."""
    ours = TRITIUM_COMPILE_MS.get((kernel, shape))
    if ours is not None:
        row(kernel, shape, "tritium_compile", (ours, ours, ours))
    if triton_kernels:
        ms = triton_us / 1e3
        row(kernel, shape, "triton_compile", (ms, ms, ms))
        if ours is not None and ms > 0:
            row(kernel, shape, "compile tritium/triton", (ours / ms, ) * 3)
            compile_ratios.append(ours / ms)


def run_case(kernel, shape, ratios, compile_ratios):
    case = TWINS[kernel](shape)
    fns = {}
    before = (CLOCK.us, CLOCK.kernels)
    if checked("triton", kernel, shape, case, case.triton):
        fns["triton"] = case.triton
    if CLOCK.available:
        compile_rows(kernel, shape, CLOCK.us - before[0], CLOCK.kernels - before[1],
                     compile_ratios)
    if TRITIUM_PTX:
        fn, why = tritium_launch(kernel, shape, case)
        if fn is None:
            print(f"zoo.py: {kernel} {shape} tritium_ptx: {why}", file=sys.stderr)
        elif checked("tritium_ptx", kernel, shape, case, fn):
            fns["tritium_ptx"] = fn
        fn, why = tritium_launch(kernel, shape, case, True) if JIT_AB else (None, "")
        if fn and checked("tritium_ptx_other", kernel, shape, case, fn):
            fns["tritium_ptx_other"] = fn
    if case.torch:
        fns["torch"] = case.torch
    if TRITON_ASM:
        ours = {l.name: tritium_kernel(kernel, shape, l.name)[0] for l in case.tritium} \
            if TRITIUM_PTX else {}
        dump_triton_asm(kernel, shape, {n: k for n, k in ours.items() if k})
    times = dict(zip(fns, bench_rounds(list(fns.values()))))
    for provider, t in times.items():
        row(kernel, shape, provider, quantiles(t))
    if "triton" in times and "tritium_ptx" in times:
        r = quantiles([a / b for a, b in zip(times["tritium_ptx"], times["triton"])])
        row(kernel, shape, "tritium/triton", r)
        ratios.append(r[0])
    if "tritium_ptx_other" in times and "tritium_ptx" in times:
        row(kernel, shape, "tritium/other_jit",
            quantiles([a / b for a, b in zip(times["tritium_ptx"], times["tritium_ptx_other"])]))
    mid = {p: quantiles(t)[0] for p, t in times.items()}
    speeds = "  ".join(f"{p} {ms:.4f} ms" + (f" {case.bytes / ms / 1e6:.0f} GB/s" if case.bytes
                                              else "") +
                       (f" {case.flops / ms / 1e9:.1f} TFLOP/s" if case.flops else "")
                       for p, ms in mid.items())
    print(f"zoo.py: {kernel} {shape}: {speeds}", file=sys.stderr)


def cases_from(csv_path, ptx_dir):
    if csv_path:
        with open(csv_path) as f:
            rows = list(csv.DictReader(f))
        for r in rows:
            if r.get("compile_ms"):
                TRITIUM_COMPILE_MS[(r["kernel"], r["shape"])] = float(r["compile_ms"])
        return [(r["kernel"], r["shape"]) for r in rows]
    out = []
    for d in sorted(os.listdir(ptx_dir)):
        kernel, _, shape = d.partition(".")
        if shape:
            out.append((kernel, shape))
    return out


def main():
    global TRITIUM_PTX, TRITON_ASM, JIT_AB, CLOCK
    args, csv_path, wanted = sys.argv[1:], None, []
    while args:
        a = args.pop(0)
        if a == "--tritium-ptx" and args:
            TRITIUM_PTX = args.pop(0)
        elif a == "--triton-asm" and args:
            TRITON_ASM = args.pop(0)
        elif a == "--cases" and args:
            csv_path = args.pop(0)
        elif a == "--jit-ab":
            JIT_AB = True
        elif a.startswith("-"):
            sys.exit(__doc__.split("Usage: ")[1].split("\n")[0])
        else:
            wanted.append(a)
    if not csv_path and not TRITIUM_PTX:
        sys.exit("zoo.py: the cases come from --cases CSV (zoo --csv) or --tritium-ptx DIR")
    print("kernel,shape,provider,median_ms,q20_ms,q80_ms", flush=True)
    CLOCK = CompileClock()
    if not CLOCK.available:
        print("zoo.py: this Triton has no knobs.compilation.listener; compile times not compared",
              file=sys.stderr)
    ratios, compile_ratios = [], []
    for kernel, shape in cases_from(csv_path, TRITIUM_PTX):
        if wanted and kernel not in wanted:
            continue
        if kernel not in TWINS:
            print(f"zoo.py: {kernel}: no twin", file=sys.stderr)
            continue
        try:
            run_case(kernel, shape, ratios, compile_ratios)
        except Exception as e:  # one case's failure (out of memory, a compile error) is its own
            print(f"zoo.py: {kernel} {shape}: {type(e).__name__}: {e}", file=sys.stderr)
        torch.cuda.empty_cache()
    if ratios:
        g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geomean,all,tritium/triton,{g:.5f},,", flush=True)
    if compile_ratios:
        g = math.exp(sum(math.log(r) for r in compile_ratios) / len(compile_ratios))
        print(f"geomean,all,compile tritium/triton,{g:.5f},{min(compile_ratios):.5f},"
              f"{max(compile_ratios):.5f}", flush=True)


# Twins in other files register through this module: under `python3 zoo.py` it is __main__,
# and their `import zoo` must find this one, not load a second copy with an empty registry.
sys.modules.setdefault("zoo", sys.modules[__name__])
if os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), "zoo_twins_b.py")):
    import zoo_twins_b  # noqa: E402,F401

if __name__ == "__main__":
    main()
