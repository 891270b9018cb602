# Peers for examples/14_attention_backward, on the GPU machine: the same Flash Attention v2
# forward (storing M, the base-2 logsumexp of each row) and backward (Delta preprocess, a dK/dV
# kernel over blocks of K and V rows, a dQ kernel over blocks of Q rows; causal with the
# diagonal blocks masked in a stage of their own) as Triton kernels, checked once against
# PyTorch, and PyTorch's F.scaled_dot_product_attention forward + backward. Times are
# triton.testing.do_bench medians (L2 flushed before each run). Prints CSV:
#   attention_bwd fp16 Z4 H32 N{n} D{d} {causal|full},{peer},{us fwd+bwd},{us bwd}
# with peers triton and torch_sdpa. Exits non-zero when a check fails (timing still runs).
import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.testing import do_bench
from triton.tools.tensor_descriptor import TensorDescriptor

DEV = "cuda"
SM_SCALE = 0.5


# --- forward: O and M = m + log2(l) per row ---------------------------------------------------
@triton.jit
def _fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, qk_scale, offs_m, offs_n,
               N_CTX, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr):
    # STAGE 1: blocks left of the diagonal (causal); 2: the diagonal block (causal, masked);
    # 3: every block (not causal).
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([offset_y + start_n, 0])
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        if STAGE == 2:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = tl.where(mask, qk, -1.0e6)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = desc_v.load([offset_y + start_n, 0])
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def _fwd(sm_scale, M, desc_q, desc_k, desc_v, desc_o, N_CTX, HEAD_DIM: tl.constexpr,
         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    # [Z, H, N_CTX, HEAD_DIM] contiguous: head (z, h) starts at row off_hz * N_CTX.
    offset_y = off_hz * N_CTX
    qo_offset_y = offset_y + start_m * BLOCK_M
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # 1/log(2)
    q = desc_q.load([qo_offset_y, 0])
    if STAGE & 1:
        acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, qk_scale,
                                   offs_m, offs_n, N_CTX, BLOCK_M, BLOCK_N, 4 - STAGE)
    if STAGE & 2:
        acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, qk_scale,
                                   offs_m, offs_n, N_CTX, BLOCK_M, BLOCK_N, 2)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    tl.store(M + off_hz * N_CTX + offs_m, m_i)
    desc_o.store([qo_offset_y, 0], acc.to(tl.float16))


# --- backward ---------------------------------------------------------------------------------
@triton.jit
def _bwd_preprocess(O, DO, Delta, N_CTX, BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr):
    # Delta[row] = sum_d O[row, d] * dO[row, d]
    off_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    off_hz = tl.program_id(1)
    off_d = tl.arange(0, HEAD_DIM)
    offs = off_hz.to(tl.int64) * N_CTX * HEAD_DIM + off_m[:, None] * HEAD_DIM + off_d[None, :]
    o = tl.load(O + offs).to(tl.float32)
    do = tl.load(DO + offs).to(tl.float32)
    tl.store(Delta + off_hz * N_CTX + off_m, tl.sum(o * do, axis=1))


@triton.jit
def _bwd_dkdv_inner(dk, dv, k, v, Q, DO, M, Delta, offs_n, qk_scale, lo, hi,
                    HEAD_DIM: tl.constexpr, BLOCK_M1: tl.constexpr, MASK: tl.constexpr):
    # Blocks of Q rows [lo, hi) against this program's K and V rows (offs_n).
    offs_d = tl.arange(0, HEAD_DIM)
    for start_m in tl.range(lo, hi, BLOCK_M1):
        start_m = tl.multiple_of(start_m, BLOCK_M1)
        offs_m = start_m + tl.arange(0, BLOCK_M1)
        q = tl.load(Q + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
        m = tl.load(M + offs_m)
        # P^T, recomputed from the forward's logsumexp: [BLOCK_N1, BLOCK_M1]
        pT = tl.math.exp2(tl.dot(k, tl.trans(q)) * qk_scale - m[None, :])
        if MASK:
            pT = tl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
        do = tl.load(DO + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
        dv = tl.dot(pT.to(tl.float16), do, dv)  # dV += P^T dO
        delta = tl.load(Delta + offs_m)
        dpT = tl.dot(v, tl.trans(do))  # dP^T = V dO^T
        dsT = pT * (dpT - delta[None, :])
        dk = tl.dot(dsT.to(tl.float16), q, dk)  # dK += dS^T Q
    return dk, dv


@triton.jit
def _bwd_dkdv(sm_scale, Q, K, V, DO, DK, DV, M, Delta, N_CTX, HEAD_DIM: tl.constexpr,
              BLOCK_M1: tl.constexpr, BLOCK_N1: tl.constexpr, CAUSAL: tl.constexpr):
    start_n = tl.program_id(0) * BLOCK_N1
    off_hz = tl.program_id(1)
    base = off_hz.to(tl.int64) * N_CTX * HEAD_DIM
    Q += base
    K += base
    V += base
    DO += base
    DK += base
    DV += base
    M += off_hz * N_CTX
    Delta += off_hz * N_CTX
    offs_n = start_n + tl.arange(0, BLOCK_N1)
    offs_d = tl.arange(0, HEAD_DIM)
    kv = offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    k = tl.load(K + kv)
    v = tl.load(V + kv)
    dk = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    if CAUSAL:
        # the diagonal blocks (masked), then every Q block below them
        dk, dv = _bwd_dkdv_inner(dk, dv, k, v, Q, DO, M, Delta, offs_n, qk_scale, start_n,
                                 start_n + BLOCK_N1, HEAD_DIM, BLOCK_M1, True)
        dk, dv = _bwd_dkdv_inner(dk, dv, k, v, Q, DO, M, Delta, offs_n, qk_scale,
                                 start_n + BLOCK_N1, N_CTX, HEAD_DIM, BLOCK_M1, False)
    else:
        dk, dv = _bwd_dkdv_inner(dk, dv, k, v, Q, DO, M, Delta, offs_n, qk_scale, 0, N_CTX,
                                 HEAD_DIM, BLOCK_M1, False)
    tl.store(DV + kv, dv.to(tl.float16))
    tl.store(DK + kv, (dk * sm_scale).to(tl.float16))


@triton.jit
def _bwd_dq_inner(dq, q, do, m, delta, K, V, offs_m, qk_scale, lo, hi, HEAD_DIM: tl.constexpr,
                  BLOCK_N2: tl.constexpr, MASK: tl.constexpr):
    # Blocks of K and V rows [lo, hi) against this program's Q rows (offs_m).
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in tl.range(lo, hi, BLOCK_N2):
        start_n = tl.multiple_of(start_n, BLOCK_N2)
        offs_n = start_n + tl.arange(0, BLOCK_N2)
        k = tl.load(K + offs_n[:, None] * HEAD_DIM + offs_d[None, :])
        v = tl.load(V + offs_n[:, None] * HEAD_DIM + offs_d[None, :])
        p = tl.math.exp2(tl.dot(q, tl.trans(k)) * qk_scale - m[:, None])
        if MASK:
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        dp = tl.dot(do, tl.trans(v))  # dP = dO V^T
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(tl.float16), k, dq)  # dQ += dS K
    return dq


@triton.jit
def _bwd_dq(sm_scale, Q, K, V, DO, DQ, M, Delta, N_CTX, HEAD_DIM: tl.constexpr,
            BLOCK_M2: tl.constexpr, BLOCK_N2: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M2
    off_hz = tl.program_id(1)
    base = off_hz.to(tl.int64) * N_CTX * HEAD_DIM
    Q += base
    K += base
    V += base
    DO += base
    DQ += base
    M += off_hz * N_CTX
    Delta += off_hz * N_CTX
    offs_m = start_m + tl.arange(0, BLOCK_M2)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    q = tl.load(Q + rows)
    do = tl.load(DO + rows)
    m = tl.load(M + offs_m)
    delta = tl.load(Delta + offs_m)
    dq = tl.zeros([BLOCK_M2, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    if CAUSAL:
        # the diagonal blocks (masked), then every K block left of them
        dq = _bwd_dq_inner(dq, q, do, m, delta, K, V, offs_m, qk_scale, start_m,
                           start_m + BLOCK_M2, HEAD_DIM, BLOCK_N2, True)
        dq = _bwd_dq_inner(dq, q, do, m, delta, K, V, offs_m, qk_scale, 0, start_m, HEAD_DIM,
                           BLOCK_N2, False)
    else:
        dq = _bwd_dq_inner(dq, q, do, m, delta, K, V, offs_m, qk_scale, 0, N_CTX, HEAD_DIM,
                           BLOCK_N2, False)
    tl.store(DQ + rows, (dq * sm_scale).to(tl.float16))


# --- host side --------------------------------------------------------------------------------
FWD_CONFIGS = [(128, 64, 8, 3), (128, 128, 8, 3), (128, 64, 4, 3), (64, 64, 4, 3)]  # BM,BN,w,s
BWD_CONFIGS = [(4, 5), (8, 3), (4, 3)]  # num_warps, num_stages (the first is the tutorial's)
PRE_BLOCK, BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2 = 128, 32, 128, 128, 32


class Attention:
    """Buffers and launches for one shape; q, k, v, do: fp16 [Z, H, N_CTX, HEAD_DIM]."""

    def __init__(self, q, k, v, do, causal):
        self.q, self.k, self.v, self.do, self.causal = q, k, v, do, causal
        Z, H, N, D = q.shape
        assert N % 128 == 0, "N_CTX must be a multiple of 128"
        self.shape = (Z, H, N, D)
        self.o = torch.empty_like(q)
        self.M = torch.empty((Z, H, N), device=q.device, dtype=torch.float32)
        self.delta = torch.empty_like(self.M)
        self.dq, self.dk, self.dv = (torch.empty_like(q) for _ in range(3))
        self.fwd_cfg = FWD_CONFIGS[0]
        self.bwd_cfg = BWD_CONFIGS[0]
        self._descs = {}

    def _desc(self, t, rows):
        Z, H, N, D = self.shape
        key = (t.data_ptr(), rows)
        if key not in self._descs:
            self._descs[key] = TensorDescriptor(t, shape=[Z * H * N, D], strides=[D, 1],
                                                block_shape=[rows, D])
        return self._descs[key]

    def forward(self):
        Z, H, N, D = self.shape
        BM, BN, w, s = self.fwd_cfg
        _fwd[(N // BM, Z * H, 1)](SM_SCALE, self.M, self._desc(self.q, BM),
                                  self._desc(self.k, BN), self._desc(self.v, BN),
                                  self._desc(self.o, BM), N, HEAD_DIM=D, BLOCK_M=BM,
                                  BLOCK_N=BN, STAGE=3 if self.causal else 1, num_warps=w,
                                  num_stages=s)

    def backward(self):
        Z, H, N, D = self.shape
        w, s = self.bwd_cfg
        _bwd_preprocess[(N // PRE_BLOCK, Z * H, 1)](self.o, self.do, self.delta, N,
                                                     BLOCK_M=PRE_BLOCK, HEAD_DIM=D)
        _bwd_dkdv[(N // BLOCK_N1, Z * H, 1)](SM_SCALE, self.q, self.k, self.v, self.do, self.dk,
                                             self.dv, self.M, self.delta, N, HEAD_DIM=D,
                                             BLOCK_M1=BLOCK_M1, BLOCK_N1=BLOCK_N1,
                                             CAUSAL=self.causal, num_warps=w, num_stages=s)
        _bwd_dq[(N // BLOCK_M2, Z * H, 1)](SM_SCALE, self.q, self.k, self.v, self.do, self.dq,
                                           self.M, self.delta, N, HEAD_DIM=D, BLOCK_M2=BLOCK_M2,
                                           BLOCK_N2=BLOCK_N2, CAUSAL=self.causal, num_warps=w,
                                           num_stages=s)

    def fwd_bwd(self):
        self.forward()
        self.backward()

    def tune(self):
        """The fastest forward and backward configurations that compile, one shape at a time."""
        D = self.shape[3]
        best = None
        for cfg in FWD_CONFIGS:
            if cfg[1] > D:
                continue
            self.fwd_cfg = cfg
            try:
                ms = do_bench(self.forward, return_mode="median")
            except Exception as e:  # a configuration that does not fit
                print(f"# attention_bwd fwd config {cfg}: {e}", file=sys.stderr)
                continue
            if best is None or ms < best[0]:
                best = (ms, cfg)
        assert best is not None, "no forward configuration ran"
        self.fwd_cfg = best[1]
        self.forward()
        best = None
        for cfg in BWD_CONFIGS:
            self.bwd_cfg = cfg
            try:
                ms = do_bench(self.backward, return_mode="median")
            except Exception as e:
                print(f"# attention_bwd bwd config {cfg}: {e}", file=sys.stderr)
                continue
            if best is None or ms < best[0]:
                best = (ms, cfg)
        assert best is not None, "no backward configuration ran"
        self.bwd_cfg = best[1]


def inputs(Z, H, N, D, seed):
    g = torch.Generator(device=DEV).manual_seed(seed)
    q, k, v = (torch.randn((Z, H, N, D), device=DEV, dtype=torch.float16, generator=g) * 0.5
               for _ in range(3))
    do = torch.randn((Z, H, N, D), device=DEV, dtype=torch.float16, generator=g)
    return q, k, v, do


def check(Z, H, N, D, causal):
    """Our kernels against PyTorch's attention and autograd in float32."""
    q, k, v, do = inputs(Z, H, N, D, seed=N + D + causal)
    a = Attention(q, k, v, do, causal)
    a.tune()  # configurations that compile on this GPU
    a.fwd_bwd()
    qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
    ref = F.scaled_dot_product_attention(qf, kf, vf, is_causal=causal, scale=SM_SCALE)
    ref_dq, ref_dk, ref_dv = torch.autograd.grad(ref, (qf, kf, vf), do.float())
    with torch.no_grad():
        errs = {name: (got.float() - want).abs().max().item()
                for name, got, want in (("o", a.o, ref), ("dq", a.dq, ref_dq),
                                        ("dk", a.dk, ref_dk), ("dv", a.dv, ref_dv))}
    ok = all(e <= 1e-2 for e in errs.values())
    print(f"# check Z{Z} H{H} N{N} D{D} {'causal' if causal else 'full'}: " +
          ", ".join(f"{n} {e:.1e}" for n, e in errs.items()) + (" ok" if ok else " WRONG"),
          file=sys.stderr)
    return ok


def time_sdpa(q, k, v, do, causal):
    """PyTorch's fused attention: forward + backward, and the backward alone, in us."""
    qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))

    def fwd_bwd():
        o = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, scale=SM_SCALE)
        torch.autograd.grad(o, (qg, kg, vg), do)

    o = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, scale=SM_SCALE)

    def bwd():
        torch.autograd.grad(o, (qg, kg, vg), do, retain_graph=True)

    return (do_bench(fwd_bwd, return_mode="median") * 1e3,
            do_bench(bwd, return_mode="median") * 1e3)


def main():
    status = 0
    for D in (64, 128):
        for causal in (False, True):
            try:
                if not check(1, 2, 1024, D, causal):
                    status = 1
            except Exception as e:
                print(f"# check D{D} causal={causal} failed: {e}", file=sys.stderr)
                status = 1
    print("workload,peer,us_fwd_plus_bwd,us_bwd", flush=True)
    Z, H = 4, 32
    for N in (1024, 4096):
        for D in (64, 128):
            for causal in (False, True):
                wl = f"attention_bwd fp16 Z{Z} H{H} N{N} D{D} {'causal' if causal else 'full'}"
                q, k, v, do = inputs(Z, H, N, D, seed=1)
                try:
                    a = Attention(q, k, v, do, causal)
                    a.tune()
                    us_all = do_bench(a.fwd_bwd, return_mode="median") * 1e3
                    us_bwd = do_bench(a.backward, return_mode="median") * 1e3
                    print(f"{wl},triton,{us_all:.1f},{us_bwd:.1f}", flush=True)
                    print(f"# {wl}: triton fwd {a.fwd_cfg}, bwd {a.bwd_cfg}", file=sys.stderr)
                except Exception as e:
                    print(f"# {wl} triton failed: {e}", file=sys.stderr)
                    status = 1
                us_all, us_bwd = time_sdpa(q, k, v, do, causal)
                print(f"{wl},torch_sdpa,{us_all:.1f},{us_bwd:.1f}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
