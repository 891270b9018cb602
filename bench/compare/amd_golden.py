#!/usr/bin/env python3
"""Triton's side of the AMD golden numbers (docs/gpu-codegen.md, tests/gpu_codegen): compiles
the kernel tritium's tests compile (tools/sample_kernels.hpp `matmul`, same source line by line)
for gfx942 (wave64) and gfx1100 (wave32) without a GPU, at the blocks the tests use, and prints
VGPRs, scratch bytes, matrix instructions and instruction lines of Triton's ISA.

usage: amd_golden.py [--stages N]   (needs the triton package; no AMD GPU)
"""
import argparse
import re
import sys

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def matmul(a, b, c, M, N, K, stride_am, stride_bk, stride_cm,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a_ptrs)
        y = tl.load(b_ptrs)
        acc = tl.dot(x, y, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    c_ptrs = c + rm[:, None] * stride_cm + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptrs, acc.to(tl.float16), mask)


def source(bm, bn, bk):
    names = ["a", "b", "c", "M", "N", "K", "stride_am", "stride_bk", "stride_cm", "BM", "BN", "BK"]
    types = ["*fp16"] * 3 + ["i32"] * 6 + ["constexpr"] * 3
    sig = dict(zip(names, types))
    values = {"BM": bm, "BN": bn, "BK": bk}
    # The constexpr argument key changed between Triton releases: names, then index tuples.
    for consts in (values, {(names.index(k),): v for k, v in values.items()}):
        try:
            return ASTSource(fn=matmul, signature=sig, constexprs=consts)
        except Exception:  # noqa: BLE001
            continue
    raise RuntimeError("cannot build the ASTSource for this Triton version")


def stat(asm, key):
    m = re.search(rf"{key}:\s*(\d+)", asm)
    return int(m.group(1)) if m else -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stages", type=int, default=2)
    args = ap.parse_args()
    print(f"triton {triton.__version__}")
    print("arch,block,warps,stages,vgprs,scratch_bytes,matrix_instructions,instruction_lines")
    for arch, warp in (("gfx942", 64), ("gfx1100", 32)):
        for bm, bn, bk, warps in ((128, 128, 64, 8), (64, 64, 32, 4)):
            try:
                k = triton.compile(source(bm, bn, bk), target=GPUTarget("hip", arch, warp),
                                   options={"num_warps": warps, "num_stages": args.stages})
                asm = k.asm["amdgcn"]
                mat = len(re.findall(r"\bv_(mfma|wmma)_", asm))
                lines = sum(1 for l in asm.splitlines()
                            if l.startswith("\t") and re.match(r"\t[sv]_|\tbuffer_|\tglobal_|\tds_|\tflat_", l))
                print(f"{arch},{bm}x{bn}x{bk},{warps},{args.stages},{stat(asm, 'NumVgprs')},"
                      f"{stat(asm, 'ScratchSize')},{mat},{lines}")
            except Exception as e:  # noqa: BLE001
                print(f"{arch},{bm}x{bn}x{bk},{warps},{args.stages},error: {e!r}"[:400])
    sys.stdout.flush()


if __name__ == "__main__":
    main()
