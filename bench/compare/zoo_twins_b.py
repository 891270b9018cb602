"""The Triton twins of the zoo's part-B kernels (bench/zoo/kernels_b_*.cpp), registered into
zoo.py's table (see zoo.py's docstring for how a twin is declared and run).

Each twin is the C++ entry's algorithm written the ordinary Triton way with the same runtime
parameters in the same order (constexprs as keywords), the same launch configuration as the
entry's GPU branch, and a PyTorch reference that checks every provider before it is timed.
Shape labels spell their sizes by name ("m16_n4096_k4096"); `sizes` reads them.
"""
import re

import torch
import triton
import triton.language as tl
from triton import cdiv
from triton.language.extra import libdevice

from zoo import Case, Launch, check, empty, next_pow2, twin, uniform

LOG2E = 1.44269504


def sizes(shape):
    """'m16_n64_k256' -> {'m': 16, 'n': 64, 'k': 256} (bench/zoo/kernels_b_util.hpp's Dims)."""
    out = {}
    for tok in shape.split("_"):
        m = re.fullmatch(r"([a-z]+)(\d+)", tok)
        if not m:
            raise ValueError(f"zoo_twins_b.py: shape {shape}: cannot read '{tok}'")
        out[m.group(1)] = int(m.group(2))
    return out


def zero_launch(buf, name):
    """bench/zoo/kernels_b_util.hpp's Zero: the tritium kernel that clears an accumulator."""
    n = buf.numel()
    return Launch(name, (cdiv(n, 1024), ), (buf, n))


# ---------------------------------------------------------------------------------------------
# w8a16_gemm


@triton.jit
def w8a16_gemm_kernel(a_ptr, b_ptr, scale_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = tl.swizzle2d(pid // num_pid_n, pid % num_pid_n, tl.cdiv(M, BLOCK_M), num_pid_n,
                                GROUP_M)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_bn[None, :]
    scale = tl.load(scale_ptr + offs_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_mask = offs_k < K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=k_mask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_mask[:, None], other=0)
        w = b.to(tl.float16) * scale[None, :]
        acc = tl.dot(a, w, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_cm[:, None] * N + offs_cn[None, :], acc.to(tl.float16),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def weight_only_tiles(M):
    """(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages) of kernels_b_w8a16_gemm.cpp."""
    return (16, 64, 128, 8, 4, 4) if M <= 16 else (128, 128, 64, 8, 8, 3)


@twin("w8a16_gemm")
def _(shape):
    s = sizes(shape)
    M, N, K = s["m"], s["n"], s["k"]
    a = uniform(M, K)
    b = torch.randint(-127, 128, (K, N), device="cuda", dtype=torch.int8)
    scale = uniform(N, lo=0.5 / 127, hi=1.5 / 127)
    c = empty(M, N)
    bm, bn, bk, g, warps, stages = weight_only_tiles(M)
    grid = (cdiv(M, bm) * cdiv(N, bn), )
    args = (a, b, scale, c, M, N, K)
    ref = lambda: a.float() @ (b.half() * scale[None, :]).float()
    return Case(
        triton=lambda: w8a16_gemm_kernel[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                               GROUP_M=g, num_warps=warps, num_stages=stages),
        torch=lambda: torch.matmul(a, b.half() * scale[None, :]),
        tritium=[Launch("w8a16_gemm_kernel", grid, args)], outputs=[c],
        verify=lambda: check("c", c, ref(), 1e-2, 2e-3),
        bytes=2 * M * K + K * N + 2 * N + 2 * M * N, flops=2 * M * N * K)


# ---------------------------------------------------------------------------------------------
# w4a16_gemm

W4_GROUP = 128


@triton.jit
def w4a16_gemm_kernel(a_ptr, b_ptr, scale_ptr, zero_ptr, c_ptr, M, N, K,
                      GROUP_SIZE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    tl.static_assert(GROUP_SIZE % BLOCK_K == 0)
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = tl.swizzle2d(pid // num_pid_n, pid % num_pid_n, tl.cdiv(M, BLOCK_M), num_pid_n,
                                GROUP_M)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + (offs_k // 2)[:, None] * N + offs_bn[None, :]
    shifter = ((offs_k % 2) * 4).to(tl.uint8)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_mask = offs_k < K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=k_mask[None, :], other=0.0)
        packed = tl.load(b_ptrs, mask=k_mask[:, None], other=0)
        q = (packed >> shifter[:, None]) & 0xF
        g = (k * BLOCK_K) // GROUP_SIZE
        scale = tl.load(scale_ptr + g * N + offs_bn)
        zero = tl.load(zero_ptr + g * N + offs_bn)
        w = (q.to(tl.float16) - zero.to(tl.float16)[None, :]) * scale[None, :]
        acc = tl.dot(a, w, acc)
        a_ptrs += BLOCK_K
        b_ptrs += (BLOCK_K // 2) * N
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_cm[:, None] * N + offs_cn[None, :], acc.to(tl.float16),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@twin("w4a16_gemm")
def _(shape):
    s = sizes(shape)
    M, N, K = s["m"], s["n"], s["k"]
    groups = K // W4_GROUP
    a = uniform(M, K)
    q = torch.randint(0, 16, (K, N), device="cuda", dtype=torch.uint8)
    packed = (q[0::2] | (q[1::2] << 4)).contiguous()
    zeros = torch.randint(6, 10, (groups, N), device="cuda", dtype=torch.uint8)
    scales = uniform(groups, N, lo=0.5 / 8, hi=1.5 / 8)
    c = empty(M, N)
    bm, bn, bk, g, warps, stages = weight_only_tiles(M)
    grid = (cdiv(M, bm) * cdiv(N, bn), )
    args = (a, packed, scales, zeros, c, M, N, K)

    def dequant():
        z = zeros.repeat_interleave(W4_GROUP, 0).float()
        sc = scales.repeat_interleave(W4_GROUP, 0).float()
        return ((q.float() - z) * sc).half()

    return Case(
        triton=lambda: w4a16_gemm_kernel[grid](*args, GROUP_SIZE=W4_GROUP, BLOCK_M=bm,
                                               BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g,
                                               num_warps=warps, num_stages=stages),
        torch=lambda: torch.matmul(a, dequant()),
        tritium=[Launch("w4a16_gemm_kernel", grid, args)], outputs=[c],
        verify=lambda: check("c", c, a.float() @ dequant().float(), 1e-2, 2e-3),
        bytes=2 * M * K + K * N // 2 + 3 * groups * N + 2 * M * N, flops=2 * M * N * K)


# ---------------------------------------------------------------------------------------------
# acc_plus_dot_gemm


@triton.jit
def acc_plus_dot_gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                             stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :], c,
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@twin("acc_plus_dot_gemm")
def _(shape):
    s = sizes(shape)
    M, N, K = s["m"], s["n"], s["k"]
    a, b, c = uniform(M, K), uniform(K, N), empty(M, N)
    bm, bn, bk, g, warps, stages = 128, 256, 64, 8, 8, 3
    grid = (cdiv(M, bm) * cdiv(N, bn), )
    args = (a, b, c, M, N, K, K, 1, N, 1, N, 1)
    return Case(
        triton=lambda: acc_plus_dot_gemm_kernel[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                                      GROUP_M=g, num_warps=warps,
                                                      num_stages=stages),
        torch=lambda: torch.matmul(a, b), tritium=[Launch("acc_plus_dot_gemm_kernel", grid, args)],
        outputs=[c], verify=lambda: check("c", c, a.float() @ b.float(), 1e-2, 2e-3),
        bytes=2 * (M * K + K * N + M * N), flops=2 * M * N * K)


# ---------------------------------------------------------------------------------------------
# fused_moe


@triton.jit
def fused_moe_kernel(a_ptr, b_ptr, c_ptr, topk_weights_ptr, sorted_token_ids_ptr,
                     expert_ids_ptr, num_tokens_post_padded_ptr, N, K, EM, num_valid_tokens,
                     stride_am, stride_ak, stride_be, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr, MUL_ROUTED_WEIGHT: tl.constexpr,
                     TOP_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(EM, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    num_tokens_post_padded = tl.load(num_tokens_post_padded_ptr)
    if pid_m * BLOCK_M >= num_tokens_post_padded:
        return
    offs_token_id = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_token = tl.load(sorted_token_ids_ptr + offs_token_id)
    token_mask = offs_token < num_valid_tokens
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_token[:, None] // TOP_K * stride_am + offs_k[None, :] * stride_ak)
    off_experts = tl.load(expert_ids_ptr + pid_m)
    b_ptrs = b_ptr + off_experts * stride_be + (offs_k[:, None] * stride_bk +
                                                offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=token_mask[:, None] & (offs_k[None, :] < K - k * BLOCK_K),
                    other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if MUL_ROUTED_WEIGHT:
        moe_weight = tl.load(topk_weights_ptr + offs_token, mask=token_mask, other=0)
        accumulator = accumulator * moe_weight[:, None]
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_token[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, accumulator.to(tl.float16),
             mask=token_mask[:, None] & (offs_cn[None, :] < N))


def moe_align(topk_ids, E, block_m):
    """vLLM's moe_align_block_size, on the host (as bench/zoo/kernels_b_fused_moe.cpp)."""
    flat = topk_ids.flatten()
    num_valid = flat.numel()
    em = num_valid + E * (block_m - 1)
    sorted_ids = torch.full((em, ), num_valid, device="cuda", dtype=torch.int32)
    expert_ids = torch.zeros(cdiv(em, block_m), device="cuda", dtype=torch.int32)
    order = torch.argsort(flat, stable=True).to(torch.int32)
    counts = torch.bincount(flat, minlength=E).tolist()
    pos = start = 0
    for e, n in enumerate(counts):
        sorted_ids[pos:pos + n] = order[start:start + n]
        start += n
        padded = cdiv(n, block_m) * block_m
        expert_ids[pos // block_m:(pos + padded) // block_m] = e
        pos += padded
    return sorted_ids, expert_ids, torch.tensor([pos], device="cuda", dtype=torch.int32), em


@twin("fused_moe")
def _(shape):
    s = sizes(shape)
    T, E, top_k, K, N = s["t"], s["e"], s["top"], s["h"], s["n"]
    a = uniform(T, K)
    w = uniform(E, N, K, lo=-K**-0.5, hi=K**-0.5)
    topk_ids = torch.rand(T, E, device="cuda").topk(top_k, 1).indices.to(torch.int32)
    raw = torch.rand(T, top_k, device="cuda") * 0.9 + 0.1
    topk_weights = (raw / raw.sum(1, keepdim=True)).contiguous()
    num_valid = T * top_k
    bm, bn, bk, g, warps, stages = ((64, 128, 64, 8, 4, 4) if num_valid // E >= 64 else
                                    (16, 64, 128, 1, 4, 4))
    sorted_ids, expert_ids, npp, em = moe_align(topk_ids, E, bm)
    c = empty(num_valid, N)
    grid = (cdiv(em, bm) * cdiv(N, bn), )
    args = (a, w, c, topk_weights, sorted_ids, expert_ids, npp, N, K, em, num_valid, K, 1, N * K,
            1, K, N, 1)
    flat_ids, flat_w = topk_ids.flatten().long(), topk_weights.flatten()

    def reference(dtype):
        out = torch.empty(num_valid, N, device="cuda", dtype=dtype)
        for e in range(E):
            rows = (flat_ids == e).nonzero().flatten()
            out[rows] = ((a[rows // top_k].to(dtype) @ w[e].to(dtype).t()) *
                         flat_w[rows, None].to(dtype))
        return out

    experts_used = int((torch.bincount(flat_ids, minlength=E) > 0).sum())
    return Case(
        triton=lambda: fused_moe_kernel[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                              GROUP_M=g, MUL_ROUTED_WEIGHT=True, TOP_K=top_k,
                                              num_warps=warps, num_stages=stages),
        torch=lambda: reference(torch.float16), tritium=[Launch("fused_moe_kernel", grid, args)],
        outputs=[c], verify=lambda: check("c", c, reference(torch.float32), 1e-2, 4e-3),
        bytes=2 * T * K + 2 * experts_used * N * K + 2 * num_valid * N,
        flops=2 * num_valid * N * K)


# ---------------------------------------------------------------------------------------------
# moe_topk_gating


@triton.jit
def moe_topk_gating_kernel(logits_ptr, weights_ptr, ids_ptr, T, E: tl.constexpr,
                           TOP_K: tl.constexpr, BLOCK_T: tl.constexpr):
    offs_t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    offs_e = tl.arange(0, E)
    t_mask = offs_t < T
    logits = tl.load(logits_ptr + offs_t[:, None] * E + offs_e[None, :], mask=t_mask[:, None],
                     other=0.0)
    z = logits - tl.max(logits, 1)[:, None]
    num = tl.exp(z)
    probs = num / tl.sum(num, 1)[:, None]
    total = tl.zeros((BLOCK_T, ), dtype=tl.float32)
    remaining = probs
    for j in tl.static_range(TOP_K):
        w, i = tl.max(remaining, 1, return_indices=True)
        total = total + w
        remaining = tl.where(offs_e[None, :] == i[:, None], -1.0, remaining)
    remaining = probs
    for j in tl.static_range(TOP_K):
        w, i = tl.max(remaining, 1, return_indices=True)
        tl.store(weights_ptr + offs_t * TOP_K + j, w / total, mask=t_mask)
        tl.store(ids_ptr + offs_t * TOP_K + j, i, mask=t_mask)
        remaining = tl.where(offs_e[None, :] == i[:, None], -1.0, remaining)


@twin("moe_topk_gating")
def _(shape):
    s = sizes(shape)
    T, E, top_k = s["t"], s["e"], s["top"]
    logits = torch.randn(T, E, device="cuda") * 2
    weights = empty(T, top_k, dtype=torch.float32)
    ids = empty(T, top_k, dtype=torch.int32)
    block_t = 128
    grid = (cdiv(T, block_t), )
    args = (logits, weights, ids, T)

    def reference():
        p = torch.softmax(logits.double(), 1)
        v, i = p.topk(top_k, 1)
        return v / v.sum(1, keepdim=True), i

    def verify():
        v, i = reference()
        check("weights", weights, v, 1e-6, 1e-5)
        check("ids", ids, i)

    return Case(
        triton=lambda: moe_topk_gating_kernel[grid](*args, E=E, TOP_K=top_k, BLOCK_T=block_t,
                                                    num_warps=4),
        torch=reference, tritium=[Launch("moe_topk_gating_kernel", grid, args)],
        outputs=[weights, ids], verify=verify, bytes=4 * T * E + 8 * T * top_k)


# ---------------------------------------------------------------------------------------------
# histogram


@triton.jit
def histogram_kernel(x_ptr, bins_ptr, n, NUM_BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    counts = tl.histogram(x, NUM_BINS, mask=mask)
    tl.atomic_add(bins_ptr + tl.arange(0, NUM_BINS), counts, sem="relaxed")


@twin("histogram")
def _(shape):
    s = sizes(shape)
    n, nb = s["n"], s["bins"]
    u = torch.rand(n, device="cuda")
    x = (u * u * nb).to(torch.int32)
    bins = empty(nb, dtype=torch.int32)
    block = 4096
    grid = (cdiv(n, block), )
    args = (x, bins, n)

    def run_triton():
        bins.zero_()
        histogram_kernel[grid](*args, NUM_BINS=nb, BLOCK=block, num_warps=4)

    return Case(triton=run_triton, torch=lambda: torch.bincount(x, minlength=nb),
                tritium=[zero_launch(bins, "zoo_zero_i32"),
                         Launch("histogram_kernel", grid, args)], outputs=[bins],
                verify=lambda: check("bins", bins, torch.bincount(x, minlength=nb)),
                bytes=4 * n + 4 * nb)


# ---------------------------------------------------------------------------------------------
# sort_rows, topk_rows


@triton.jit
def sort_rows_kernel(x_ptr, y_ptr, V: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, V)
    x = tl.load(x_ptr + row * V + cols)
    tl.store(y_ptr + row * V + cols, tl.sort(x, 0, descending=True))


@twin("sort_rows")
def _(shape):
    s = sizes(shape)
    R, V = s["r"], s["v"]
    x = torch.softmax(torch.randn(R, V, device="cuda") * 3, 1)
    y = empty(R, V, dtype=torch.float32)
    args = (x, y)
    return Case(triton=lambda: sort_rows_kernel[(R, )](*args, V=V, num_warps=16),
                torch=lambda: torch.sort(x, 1, descending=True),
                tritium=[Launch("sort_rows_kernel", (R, ), args)], outputs=[y],
                verify=lambda: check("y", y, torch.sort(x, 1, descending=True).values),
                bytes=8 * R * V)


@triton.jit
def topk_rows_kernel(x_ptr, y_ptr, k, V: tl.constexpr, K_POW2: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * V + tl.arange(0, V))
    top = tl.topk(x, K_POW2)
    offs = tl.arange(0, K_POW2)
    tl.store(y_ptr + row * k + offs, top, mask=offs < k)


@twin("topk_rows")
def _(shape):
    s = sizes(shape)
    R, V, k = s["r"], s["v"], s["k"]
    x = torch.randn(R, V, device="cuda") * 3
    y = empty(R, k, dtype=torch.float32)
    args = (x, y, k)
    return Case(
        triton=lambda: topk_rows_kernel[(R, )](*args, V=V, K_POW2=next_pow2(k), num_warps=16),
        torch=lambda: torch.topk(x, k, 1), tritium=[Launch("topk_rows_kernel", (R, ), args)],
        outputs=[y], verify=lambda: check("y", y, torch.topk(x, k, 1).values),
        bytes=4 * R * V + 4 * R * k)


# ---------------------------------------------------------------------------------------------
# paged_attention_decode


@triton.jit
def paged_attention_decode_kernel(q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr,
                                  context_lens_ptr, out_ptr, sm_scale, max_pages_per_seq,
                                  HQ: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr,
                                  PAGE: tl.constexpr, BLOCK_H: tl.constexpr,
                                  BLOCK_N: tl.constexpr):
    QUERY_GROUP: tl.constexpr = HQ // HKV
    b = tl.program_id(0)
    kv_head = tl.program_id(1)
    offs_h = tl.arange(0, BLOCK_H)
    h_mask = offs_h < QUERY_GROUP
    q_heads = kv_head * QUERY_GROUP + offs_h
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + b * (HQ * D) + q_heads[:, None] * D + offs_d[None, :],
                mask=h_mask[:, None], other=0.0)
    context_len = tl.load(context_lens_ptr + b)
    qk_scale = sm_scale * 1.44269504
    m_i = tl.full((BLOCK_H, ), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_H, ), dtype=tl.float32)
    acc = tl.zeros((BLOCK_H, D), dtype=tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(0, context_len, BLOCK_N):
        tok = start_n + offs_n
        n_mask = tok < context_len
        page = tl.load(block_tables_ptr + b * max_pages_per_seq + tok // PAGE, mask=n_mask,
                       other=0)
        slot = page * PAGE + tok % PAGE
        kv_offs = slot[:, None] * (HKV * D) + kv_head * D + offs_d[None, :]
        k = tl.load(k_cache_ptr + kv_offs, mask=n_mask[:, None], other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        qk = tl.where(n_mask[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp2(qk - m_ij[:, None])
        alpha = tl.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_cache_ptr + kv_offs, mask=n_mask[:, None], other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(out_ptr + b * (HQ * D) + q_heads[:, None] * D + offs_d[None, :], acc.to(tl.float16),
             mask=h_mask[:, None])


def paged_cache(lens, page, hkv, d):
    """Pages of the sequences' KV in a shuffled order: (k_cache, v_cache, block_tables)."""
    B = len(lens)
    pages = [cdiv(n, page) for n in lens]
    max_pages = max(1, max(pages))
    order = torch.randperm(max(1, sum(pages)), device="cuda").to(torch.int32)
    tables = torch.zeros(B, max_pages, device="cuda", dtype=torch.int32)
    nxt = 0
    for b, n in enumerate(pages):
        tables[b, :n] = order[nxt:nxt + n]
        nxt += n
    k_cache = uniform(max(1, sum(pages)), page, hkv, d)
    v_cache = uniform(max(1, sum(pages)), page, hkv, d)
    return k_cache, v_cache, tables, max_pages


def gather_pages(cache, table, n, page):
    """The first n tokens' rows of one sequence: [n, HKV, D]."""
    return cache[table[:cdiv(n, page)].long()].flatten(0, 1)[:n]


@twin("paged_attention_decode")
def _(shape):
    s = sizes(shape)
    B, HQ, HKV, D, PAGE, max_ctx = s["b"], s["hq"], s["hkv"], s["d"], s["page"], s["ctx"]
    lens_list = torch.randint(max_ctx // 2, max_ctx + 1, (B, )).tolist()
    lens = torch.tensor(lens_list, device="cuda", dtype=torch.int32)
    k_cache, v_cache, tables, max_pages = paged_cache(lens_list, PAGE, HKV, D)
    q = uniform(B, HQ, D)
    out = empty(B, HQ, D)
    sm_scale = D**-0.5
    block_h, block_n = max(16, next_pow2(HQ // HKV)), 64
    grid = (B, HKV)
    args = (q, k_cache, v_cache, tables, lens, out, sm_scale, max_pages)

    def reference(dtype=torch.float32):
        res = torch.empty(B, HQ, D, device="cuda", dtype=dtype)
        for b, n in enumerate(lens_list):
            k = gather_pages(k_cache, tables[b], n, PAGE).to(dtype).repeat_interleave(HQ // HKV, 1)
            v = gather_pages(v_cache, tables[b], n, PAGE).to(dtype).repeat_interleave(HQ // HKV, 1)
            p = torch.softmax(torch.einsum("hd,nhd->hn", q[b].to(dtype), k) * sm_scale, -1)
            res[b] = torch.einsum("hn,nhd->hd", p, v)
        return res

    return Case(
        triton=lambda: paged_attention_decode_kernel[grid](
            *args, HQ=HQ, HKV=HKV, D=D, PAGE=PAGE, BLOCK_H=block_h, BLOCK_N=block_n, num_warps=4,
            num_stages=2), torch=lambda: reference(torch.float16),
        tritium=[Launch("paged_attention_decode_kernel", grid, args)], outputs=[out],
        verify=lambda: check("out", out, reference(), 2e-3, 1e-2),
        bytes=4 * q.numel() + 2 * 2 * sum(lens_list) * HKV * D,
        flops=4 * sum(lens_list) * HQ * D)


# ---------------------------------------------------------------------------------------------
# conv2d_implicit_gemm


@triton.jit
def conv2d_implicit_gemm_kernel(x_ptr, w_ptr, y_ptr, N, H, W, C, KO, KR: tl.constexpr,
                                KS: tl.constexpr, PADDING: tl.constexpr, BLOCK_M: tl.constexpr,
                                BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    P = H
    Q = W
    gemm_m = N * P * Q
    gemm_k = C * (KR * KS)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_mask = offs_m < gemm_m
    n_img = offs_m // (P * Q)
    pq = offs_m % (P * Q)
    oh = pq // Q
    ow = pq % Q
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < KO
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(gemm_k, BLOCK_K)):
        offs_k = k * BLOCK_K + tl.arange(0, BLOCK_K)
        k_mask = offs_k < gemm_k
        r = offs_k // (KS * C)
        s = (offs_k // C) % KS
        c = offs_k % C
        ih = oh[:, None] + r[None, :] - PADDING
        iw = ow[:, None] + s[None, :] - PADDING
        a_mask = m_mask[:, None] & k_mask[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a = tl.load(x_ptr + ((n_img[:, None] * H + ih) * W + iw) * C + c[None, :], mask=a_mask,
                    other=0.0)
        b = tl.load(w_ptr + offs_k[:, None] * KO + offs_n[None, :],
                    mask=k_mask[:, None] & n_mask[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(y_ptr + offs_m[:, None] * KO + offs_n[None, :], acc.to(tl.float16),
             mask=m_mask[:, None] & n_mask[None, :])


@twin("conv2d_implicit_gemm")
def _(shape):
    s = sizes(shape)
    N, H, W, C, KO = s["n"], s["h"], s["w"], s["c"], s["k"]
    x = uniform(N, H, W, C)
    wr = (9 * C)**-0.5
    w = uniform(3, 3, C, KO, lo=-wr, hi=wr)
    y = empty(N, H, W, KO)
    bm, bn, bk, warps, stages = (128, 64, 32, 4, 3) if KO <= 64 else (128, 128, 32, 8, 3)
    grid = (cdiv(N * H * W, bm), cdiv(KO, bn))
    args = (x, w, y, N, H, W, C, KO)
    F = torch.nn.functional
    # NCHW views of the NHWC tensors: cuDNN picks its channels-last kernels for them.
    x_nchw, w_kcrs = x.permute(0, 3, 1, 2), w.permute(3, 2, 0, 1)
    ref = lambda: F.conv2d(x_nchw.float(), w_kcrs.float(), padding=1).permute(0, 2, 3, 1)
    return Case(
        triton=lambda: conv2d_implicit_gemm_kernel[grid](*args, KR=3, KS=3, PADDING=1, BLOCK_M=bm,
                                                         BLOCK_N=bn, BLOCK_K=bk,
                                                         num_warps=warps, num_stages=stages),
        torch=lambda: F.conv2d(x_nchw, w_kcrs, padding=1),
        tritium=[Launch("conv2d_implicit_gemm_kernel", grid, args)], outputs=[y],
        verify=lambda: check("y", y, ref(), 1e-2, 2e-3),
        bytes=2 * (x.numel() + w.numel() + y.numel()), flops=2 * N * H * W * KO * 9 * C)


# ---------------------------------------------------------------------------------------------
# selective_scan, linear_recurrence


@triton.jit
def selective_scan_kernel(u_ptr, delta_ptr, A_ptr, B_ptr, C_ptr, D_ptr, y_ptr, L, DM,
                          N: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(0)
    offs_d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    d_mask = offs_d < DM
    offs_n = tl.arange(0, N)
    A = tl.load(A_ptr + offs_d[:, None] * N + offs_n[None, :], mask=d_mask[:, None], other=0.0)
    D = tl.load(D_ptr + offs_d, mask=d_mask, other=0.0)
    h = tl.zeros((BLOCK_D, N), dtype=tl.float32)
    for t in range(0, L):
        row = b * L + t
        u = tl.load(u_ptr + row * DM + offs_d, mask=d_mask, other=0.0).to(tl.float32)
        dt = tl.load(delta_ptr + row * DM + offs_d, mask=d_mask, other=0.0).to(tl.float32)
        dt = tl.where(dt <= 20.0, libdevice.log1p(tl.exp(dt)), dt)
        Bt = tl.load(B_ptr + row * N + offs_n).to(tl.float32)
        Ct = tl.load(C_ptr + row * N + offs_n).to(tl.float32)
        dA = tl.exp(dt[:, None] * A)
        h = dA * h + (dt * u)[:, None] * Bt[None, :]
        y = tl.sum(h * Ct[None, :], 1) + D * u
        tl.store(y_ptr + row * DM + offs_d, y.to(tl.float16), mask=d_mask)


@twin("selective_scan")
def _(shape):
    s = sizes(shape)
    B, L, DM, N = s["b"], s["l"], s["d"], s["n"]
    u = uniform(B, L, DM)
    delta = uniform(B, L, DM, lo=-4, hi=-1)
    Bm, Cm = uniform(B, L, N), uniform(B, L, N)
    A = -torch.arange(1, N + 1, device="cuda", dtype=torch.float32).repeat(DM, 1).contiguous()
    D = uniform(DM, lo=0.5, hi=1.5, dtype=torch.float32)
    y = empty(B, L, DM)
    block_d = 64
    grid = (B, cdiv(DM, block_d))
    args = (u, delta, A, Bm, Cm, D, y, L, DM)

    def reference():
        dt = torch.nn.functional.softplus(delta.float())
        h = torch.zeros(B, DM, N, device="cuda")
        out = torch.empty(B, L, DM, device="cuda")
        for t in range(L):
            h = (torch.exp(dt[:, t, :, None] * A) * h +
                 (dt[:, t] * u[:, t].float())[:, :, None] * Bm[:, t, None, :].float())
            out[:, t] = (h * Cm[:, t, None, :].float()).sum(-1) + D * u[:, t].float()
        return out

    return Case(
        triton=lambda: selective_scan_kernel[grid](*args, N=N, BLOCK_D=block_d, num_warps=4),
        tritium=[Launch("selective_scan_kernel", grid, args)], outputs=[y],
        verify=lambda: check("y", y, reference(), 2e-3, 2e-3),
        bytes=2 * 3 * u.numel() + 2 * 2 * Bm.numel() + 4 * (A.numel() + D.numel()))


@triton.jit
def _recurrence_combine(a1, x1, a2, x2):
    return a1 * a2, a2 * x1 + x2


@triton.jit
def linear_recurrence_kernel(a_ptr, x_ptr, h_ptr, R, L, BLOCK_R: tl.constexpr,
                             BLOCK_L: tl.constexpr):
    offs_r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    r_mask = offs_r < R
    offs_l = tl.arange(0, BLOCK_L)
    h = tl.zeros((BLOCK_R, ), dtype=tl.float32)
    for start in range(0, L, BLOCK_L):
        cols = start + offs_l
        mask = r_mask[:, None] & (cols < L)[None, :]
        offs = offs_r[:, None] * L + cols[None, :]
        a = tl.load(a_ptr + offs, mask=mask, other=1.0)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        a_cum, x_cum = tl.associative_scan((a, x), 1, _recurrence_combine)
        hs = a_cum * h[:, None] + x_cum
        tl.store(h_ptr + offs, hs, mask=mask)
        h = tl.sum(tl.where(offs_l[None, :] == BLOCK_L - 1, hs, 0.0), 1)


@twin("linear_recurrence")
def _(shape):
    s = sizes(shape)
    R, L = s["r"], s["l"]
    a = uniform(R, L, lo=0.5, hi=0.999, dtype=torch.float32)
    x = uniform(R, L, dtype=torch.float32)
    h = empty(R, L, dtype=torch.float32)
    block_r, block_l = 4, 1024
    grid = (cdiv(R, block_r), )
    args = (a, x, h, R, L)

    def reference():
        out = torch.empty(R, L, device="cuda", dtype=torch.float64)
        state = torch.zeros(R, device="cuda", dtype=torch.float64)
        a64, x64 = a.double(), x.double()
        for t in range(L):
            state = a64[:, t] * state + x64[:, t]
            out[:, t] = state
        return out

    return Case(
        triton=lambda: linear_recurrence_kernel[grid](*args, BLOCK_R=block_r, BLOCK_L=block_l,
                                                      num_warps=4),
        tritium=[Launch("linear_recurrence_kernel", grid, args)], outputs=[h],
        verify=lambda: check("h", h, reference(), 1e-4, 1e-4), bytes=12 * a.numel())


# ---------------------------------------------------------------------------------------------
# int8_per_token_quant


@triton.jit
def int8_per_token_quant_kernel(x_ptr, q_ptr, scale_ptr, H, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < H
    x = tl.load(x_ptr + row * H + cols, mask=mask, other=0.0).to(tl.float32)
    absmax = tl.maximum(tl.max(tl.abs(x)), 1e-10)
    scale = absmax / 127.0
    q = libdevice.round(x * (127.0 / absmax))
    tl.store(q_ptr + row * H + cols, tl.clamp(q, -127.0, 127.0).to(tl.int8), mask=mask)
    tl.store(scale_ptr + row, scale)


@twin("int8_per_token_quant")
def _(shape):
    s = sizes(shape)
    T, H = s["t"], s["h"]
    ranges = torch.exp(torch.rand(T, 1, device="cuda") * 6 - 3)
    x = ((torch.rand(T, H, device="cuda") * 2 - 1) * ranges).half()
    q = empty(T, H, dtype=torch.int8)
    scale = empty(T, dtype=torch.float32)
    block = next_pow2(H)
    args = (x, q, scale, H)

    def reference():
        absmax = x.double().abs().amax(1).clamp(min=1e-10)
        return (x.double() * (127 / absmax[:, None])).round().clamp(-127, 127), absmax / 127

    def torch_quant():
        absmax = x.float().abs().amax(1, keepdim=True).clamp(min=1e-10)
        return (x.float() * (127 / absmax)).round().clamp(-127, 127).to(torch.int8), absmax / 127

    def verify():
        ref_q, ref_s = reference()
        check("scales", scale, ref_s, 0, 1e-6)
        check("q", q, ref_q, 1)  # rounding ties may fall either way in f32

    return Case(
        triton=lambda: int8_per_token_quant_kernel[(T, )](
            *args, BLOCK=block, num_warps=min(max(block // 256, 1), 16)), torch=torch_quant,
        tritium=[Launch("int8_per_token_quant_kernel", (T, ), args)], outputs=[q, scale],
        verify=verify, bytes=3 * T * H + 4 * T)


# ---------------------------------------------------------------------------------------------
# fp8_per_token_quant


@triton.jit
def fp8_per_token_quant_kernel(x_ptr, q_ptr, scale_ptr, H, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < H
    x = tl.load(x_ptr + row * H + cols, mask=mask, other=0.0).to(tl.float32)
    absmax = tl.maximum(tl.max(tl.abs(x)), 1e-10)
    tl.store(q_ptr + row * H + cols, (x * (448.0 / absmax)).to(tl.float8e4nv), mask=mask)
    tl.store(scale_ptr + row, absmax / 448.0)


@twin("fp8_per_token_quant")
def _(shape):
    s = sizes(shape)
    T, H = s["t"], s["h"]
    ranges = torch.exp(torch.rand(T, 1, device="cuda") * 6 - 3)
    x = ((torch.rand(T, H, device="cuda") * 2 - 1) * ranges).half()
    q = empty(T, H, dtype=torch.float8_e4m3fn)
    scale = empty(T, dtype=torch.float32)
    block = next_pow2(H)
    args = (x, q, scale, H)

    def reference():
        absmax = x.double().abs().amax(1).clamp(min=1e-10)
        return x.double() * (448 / absmax[:, None]), absmax / 448

    def torch_quant():  # vLLM's reference: scale, divide, clamp to the e4m3 range, convert
        absmax = x.float().abs().amax(1, keepdim=True).clamp(min=1e-10)
        return (x.float() * (448 / absmax)).clamp(-448, 448).to(torch.float8_e4m3fn), absmax / 448

    def verify():
        ref_q, ref_s = reference()
        check("scales", scale, ref_s, 0, 1e-6)
        check("q", q.float(), ref_q, 2.0**-10, 0.0626)  # e4m3's 3 mantissa bits

    return Case(
        triton=lambda: fp8_per_token_quant_kernel[(T, )](
            *args, BLOCK=block, num_warps=min(max(block // 256, 1), 16)), torch=torch_quant,
        tritium=[Launch("fp8_per_token_quant_kernel", (T, ), args)], outputs=[q, scale],
        verify=verify, bytes=3 * T * H + 4 * T)


# ---------------------------------------------------------------------------------------------
# embedding_bag


@triton.jit
def embedding_bag_kernel(weight_ptr, indices_ptr, offsets_ptr, out_ptr, D,
                         BLOCK_D: tl.constexpr):
    bag = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = cols < D
    start = tl.load(offsets_ptr + bag)
    end = tl.load(offsets_ptr + bag + 1)
    acc = tl.zeros((BLOCK_D, ), dtype=tl.float32)
    for i in range(start, end):
        row = tl.load(indices_ptr + i)
        acc += tl.load(weight_ptr + row.to(tl.int64) * D + cols, mask=mask, other=0.0)
    tl.store(out_ptr + bag * D + cols, acc, mask=mask)


@twin("embedding_bag")
def _(shape):
    s = sizes(shape)
    V, D, bags, avg = s["v"], s["d"], s["bags"], s["avg"]
    weight = uniform(V, D, dtype=torch.float32)
    counts = torch.randint(1, 2 * avg, (bags, ), device="cuda")
    offsets = torch.zeros(bags + 1, device="cuda", dtype=torch.int32)
    offsets[1:] = counts.cumsum(0)
    nnz = int(offsets[-1])
    indices = torch.randint(0, V, (nnz, ), device="cuda", dtype=torch.int32)
    out = empty(bags, D, dtype=torch.float32)
    block_d = min(next_pow2(D), 256)
    grid = (bags, cdiv(D, block_d))
    args = (weight, indices, offsets, out, D)
    F = torch.nn.functional
    bag_of = torch.repeat_interleave(torch.arange(bags, device="cuda"), counts)

    def reference():
        return torch.zeros(bags, D, device="cuda", dtype=torch.float64).index_add_(
            0, bag_of, weight.double()[indices.long()])

    return Case(
        triton=lambda: embedding_bag_kernel[grid](*args, BLOCK_D=block_d, num_warps=2),
        torch=lambda: F.embedding_bag(indices, weight, offsets[:-1], mode="sum"),
        tritium=[Launch("embedding_bag_kernel", grid, args)], outputs=[out],
        verify=lambda: check("out", out, reference(), 1e-4, 1e-5),
        bytes=4 * (nnz * D + nnz + bags + 1 + bags * D))


# ---------------------------------------------------------------------------------------------
# rope_kv_cache_write


@triton.jit
def rope_kv_cache_write_kernel(k_ptr, v_ptr, positions_ptr, cos_sin_ptr, slot_mapping_ptr,
                               k_cache_ptr, v_cache_ptr, HKV: tl.constexpr, D: tl.constexpr,
                               PAGE: tl.constexpr):
    HALF: tl.constexpr = D // 2
    t = tl.program_id(0)
    slot = tl.load(slot_mapping_ptr + t)
    if slot < 0:
        return
    pos = tl.load(positions_ptr + t)
    offs_h = tl.arange(0, HKV)
    offs_half = tl.arange(0, HALF)
    cos = tl.load(cos_sin_ptr + pos * D + offs_half)[None, :]
    sin = tl.load(cos_sin_ptr + pos * D + HALF + offs_half)[None, :]
    src = t * (HKV * D) + offs_h[:, None] * D + offs_half[None, :]
    k1 = tl.load(k_ptr + src).to(tl.float32)
    k2 = tl.load(k_ptr + src + HALF).to(tl.float32)
    page = slot // PAGE
    in_page = slot % PAGE
    dst = page * (PAGE * HKV * D) + in_page * (HKV * D) + offs_h[:, None] * D + offs_half[None, :]
    tl.store(k_cache_ptr + dst, (k1 * cos - k2 * sin).to(tl.float16))
    tl.store(k_cache_ptr + dst + HALF, (k2 * cos + k1 * sin).to(tl.float16))
    offs_d = tl.arange(0, D)
    v = tl.load(v_ptr + t * (HKV * D) + offs_h[:, None] * D + offs_d[None, :])
    tl.store(v_cache_ptr + page * (PAGE * HKV * D) + in_page * (HKV * D) + offs_h[:, None] * D +
             offs_d[None, :], v)


@twin("rope_kv_cache_write")
def _(shape):
    s = sizes(shape)
    T, HKV, D, PAGE = s["t"], s["hkv"], s["d"], s["page"]
    max_pos = 8192
    k, v = uniform(T, HKV, D), uniform(T, HKV, D)
    positions = torch.randint(0, max_pos, (T, ), device="cuda", dtype=torch.int32)
    inv_freq = 1.0 / (10000.0**(torch.arange(0, D, 2, device="cuda", dtype=torch.float32) / D))
    angle = torch.arange(max_pos, device="cuda", dtype=torch.float32)[:, None] * inv_freq[None, :]
    cos_sin = torch.cat((angle.cos(), angle.sin()), 1).contiguous()
    num_pages = 2 * cdiv(T, PAGE)
    slots = torch.randperm(num_pages * PAGE, device="cuda")[:T].to(torch.int32)
    k_cache, v_cache = empty(num_pages, PAGE, HKV, D), empty(num_pages, PAGE, HKV, D)
    args = (k, v, positions, cos_sin, slots, k_cache, v_cache)

    def reference():
        rk = torch.zeros(num_pages * PAGE, HKV, D, device="cuda", dtype=torch.float64)
        rv = torch.zeros_like(rk)
        cs = cos_sin.double()[positions.long()]
        c, sn = cs[:, None, :D // 2], cs[:, None, D // 2:]
        x1, x2 = k.double()[..., :D // 2], k.double()[..., D // 2:]
        rk[slots.long()] = torch.cat((x1 * c - x2 * sn, x2 * c + x1 * sn), -1)
        rv[slots.long()] = v.double()
        return rk.view(num_pages, PAGE, HKV, D), rv.view(num_pages, PAGE, HKV, D)

    def verify():
        rk, rv = reference()
        check("k_cache", k_cache, rk, 1e-3, 1 / 1024)
        check("v_cache", v_cache, rv)

    return Case(
        triton=lambda: rope_kv_cache_write_kernel[(T, )](*args, HKV=HKV, D=D, PAGE=PAGE,
                                                         num_warps=4),
        tritium=[Launch("rope_kv_cache_write_kernel", (T, ), args)],
        outputs=[k_cache, v_cache], verify=verify, bytes=2 * 4 * k.numel() + 8 * T + 4 * T * D)


# ---------------------------------------------------------------------------------------------
# bmm, split_k_gemm


@triton.jit
def bmm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = tl.swizzle2d(pid // num_pid_n, pid % num_pid_n, tl.cdiv(M, BLOCK_M), num_pid_n,
                                GROUP_M)
    a_ptr += batch * M * K
    b_ptr += batch * K * N
    c_ptr += batch * M * N
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_bn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_cm[:, None] * N + offs_cn[None, :], acc.to(tl.float16),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@twin("bmm")
def _(shape):
    s = sizes(shape)
    B, M, N, K = s["b"], s["m"], s["n"], s["k"]
    a, b, c = uniform(B, M, K), uniform(B, K, N), empty(B, M, N)
    bm, bn, bk, g, warps, stages = 128, 128, 64, 8, 8, 3
    grid = (cdiv(M, bm) * cdiv(N, bn), B)
    args = (a, b, c, M, N, K)
    return Case(
        triton=lambda: bmm_kernel[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g,
                                        num_warps=warps, num_stages=stages),
        torch=lambda: torch.bmm(a, b), tritium=[Launch("bmm_kernel", grid, args)], outputs=[c],
        verify=lambda: check("c", c, torch.bmm(a.float(), b.float()), 1e-2, 2e-3),
        bytes=2 * (a.numel() + b.numel() + c.numel()), flops=2 * B * M * N * K)


@triton.jit
def split_k_gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
                        GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = tl.swizzle2d(pid // num_pid_n, pid % num_pid_n, tl.cdiv(M, BLOCK_M), num_pid_n,
                                GROUP_M)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_bn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K * SPLIT_K)):
        k_remaining = K - k * (BLOCK_K * SPLIT_K)
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_remaining, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_remaining, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * SPLIT_K
        b_ptrs += BLOCK_K * SPLIT_K * N
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.atomic_add(c_ptr + offs_cm[:, None] * N + offs_cn[None, :], acc,
                  mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N), sem="relaxed")


@twin("split_k_gemm")
def _(shape):
    s = sizes(shape)
    M, N, K, split = s["m"], s["n"], s["k"], s["split"]
    a, b = uniform(M, K), uniform(K, N)
    c = empty(M, N, dtype=torch.float32)
    bm, bn, bk, g, warps, stages = 64, 64, 64, 8, 4, 4
    grid = (cdiv(M, bm) * cdiv(N, bn), split)
    args = (a, b, c, M, N, K)

    def run_triton():
        c.zero_()
        split_k_gemm_kernel[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, SPLIT_K=split,
                                  GROUP_M=g, num_warps=warps, num_stages=stages)

    return Case(triton=run_triton, torch=lambda: torch.matmul(a, b),
                tritium=[zero_launch(c, "zoo_zero_f32"),
                         Launch("split_k_gemm_kernel", grid, args)], outputs=[c],
                verify=lambda: check("c", c, a.double() @ b.double(), 1e-3, 1e-5),
                bytes=2 * (a.numel() + b.numel()) + 8 * c.numel(), flops=2 * M * N * K)


# ---------------------------------------------------------------------------------------------
# prefix_prefill_attention


@triton.jit
def prefix_prefill_attention_kernel(q_ptr, k_ptr, v_ptr, k_cache_ptr, v_cache_ptr,
                                    block_tables_ptr, start_loc_ptr, new_lens_ptr,
                                    prefix_lens_ptr, out_ptr, sm_scale, max_pages_per_seq,
                                    HQ: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr,
                                    PAGE: tl.constexpr, BLOCK_M: tl.constexpr,
                                    BLOCK_N: tl.constexpr):
    GROUP: tl.constexpr = HQ // HKV
    b = tl.program_id(0)
    head = tl.program_id(1)
    start_m = tl.program_id(2)
    kv_head = head // GROUP
    q_len = tl.load(new_lens_ptr + b)
    prefix_len = tl.load(prefix_lens_ptr + b)
    start_loc = tl.load(start_loc_ptr + b)
    if start_m * BLOCK_M >= q_len:
        return
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    m_mask = offs_m < q_len
    q = tl.load(q_ptr + (start_loc + offs_m)[:, None] * (HQ * D) + head * D + offs_d[None, :],
                mask=m_mask[:, None], other=0.0)
    qk_scale = sm_scale * 1.44269504
    m_i = tl.full((BLOCK_M, ), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M, ), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, D), dtype=tl.float32)
    for start_n in range(0, prefix_len, BLOCK_N):
        tok = start_n + offs_n
        n_mask = tok < prefix_len
        page = tl.load(block_tables_ptr + b * max_pages_per_seq + tok // PAGE, mask=n_mask,
                       other=0)
        kv_offs = (page * PAGE + tok % PAGE)[:, None] * (HKV * D) + kv_head * D + offs_d[None, :]
        k = tl.load(k_cache_ptr + kv_offs, mask=n_mask[:, None], other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        qk = tl.where(n_mask[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp2(qk - m_ij[:, None])
        alpha = tl.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_cache_ptr + kv_offs, mask=n_mask[:, None], other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_ij
    end_n = tl.minimum((start_m + 1) * BLOCK_M, q_len)
    for start_n in range(0, end_n, BLOCK_N):
        tok = start_n + offs_n
        n_mask = tok < q_len
        kv_offs = (start_loc + tok)[:, None] * (HKV * D) + kv_head * D + offs_d[None, :]
        k = tl.load(k_ptr + kv_offs, mask=n_mask[:, None], other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        visible = (offs_m[:, None] >= tok[None, :]) & n_mask[None, :]
        qk = tl.where(visible, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp2(qk - m_ij[:, None])
        alpha = tl.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + kv_offs, mask=n_mask[:, None], other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(out_ptr + (start_loc + offs_m)[:, None] * (HQ * D) + head * D + offs_d[None, :],
             acc.to(tl.float16), mask=m_mask[:, None])


@twin("prefix_prefill_attention")
def _(shape):
    s = sizes(shape)
    B, HQ, HKV, D, PAGE = s["b"], s["hq"], s["hkv"], s["d"], s["page"]
    max_prefix, max_new = s["prefix"], s["new"]
    prefix = [max_prefix] + torch.randint(max_prefix // 2, max_prefix + 1, (B - 1, )).tolist()
    news = [max_new] + torch.randint(1, max_new + 1, (B - 1, )).tolist()
    starts = [sum(news[:b]) for b in range(B)]
    total = sum(news)
    k_cache, v_cache, tables, max_pages = paged_cache(prefix, PAGE, HKV, D)
    q, k, v = uniform(total, HQ, D), uniform(total, HKV, D), uniform(total, HKV, D)
    out = empty(total, HQ, D)
    as_i32 = lambda xs: torch.tensor(xs, device="cuda", dtype=torch.int32)
    start_loc, new_lens, prefix_lens = as_i32(starts), as_i32(news), as_i32(prefix)
    sm_scale = D**-0.5
    block_m, block_n = 128, 64
    grid = (B, HQ, cdiv(max_new, block_m))
    args = (q, k, v, k_cache, v_cache, tables, start_loc, new_lens, prefix_lens, out, sm_scale,
            max_pages)

    def reference(dtype=torch.float32):
        res = torch.empty(total, HQ, D, device="cuda", dtype=dtype)
        for b in range(B):
            P, n, st = prefix[b], news[b], starts[b]
            keys = torch.cat((gather_pages(k_cache, tables[b], P, PAGE), k[st:st + n]))
            vals = torch.cat((gather_pages(v_cache, tables[b], P, PAGE), v[st:st + n]))
            keys = keys.to(dtype).repeat_interleave(HQ // HKV, 1)
            vals = vals.to(dtype).repeat_interleave(HQ // HKV, 1)
            scores = torch.einsum("ihd,jhd->hij", q[st:st + n].to(dtype), keys) * sm_scale
            i = torch.arange(n, device="cuda")[:, None]
            j = torch.arange(P + n, device="cuda")[None, :]
            scores = scores.masked_fill(j > P + i, float("-inf"))
            res[st:st + n] = torch.einsum("hij,jhd->ihd", torch.softmax(scores, -1), vals)
        return res

    flops = sum(4 * HQ * D * n * (P + (n + 1) / 2) for P, n in zip(prefix, news))
    return Case(
        triton=lambda: prefix_prefill_attention_kernel[grid](
            *args, HQ=HQ, HKV=HKV, D=D, PAGE=PAGE, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=8,
            num_stages=2), torch=lambda: reference(torch.float16),
        tritium=[Launch("prefix_prefill_attention_kernel", grid, args)], outputs=[out],
        verify=lambda: check("out", out, reference(), 2e-3, 1e-2),
        bytes=2 * (2 * q.numel() + 2 * k.numel()) + 4 * sum(prefix) * HKV * D, flops=flops)
