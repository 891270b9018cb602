# fp8 GEMM on gfx942 (CDNA3's fp8 MFMA, the fnuz formats) beside Triton 3.6's AMD backend,
# statically: gemm.py's matmul (bench_gemm's kernel) with float8e4b8 A and B, B column-major
# (K contiguous, as the fp8 peers take it), f16 C, at the configurations of CASES. One parser
# (amd_parity.isa_stats) reads both compilers' AMDGCN.
#
#   python3 amd_fp8_gemm.py triton [ASM_DIR] > triton.csv   # on the GPU machine (triton imports);
#                                                          # ASM_DIR/<case>.amdgcn: Triton's text
#   python3 amd_fp8_gemm.py tritium DIR > tritium.csv
#
# tritium mode reads DIR/<case>.amdgcn, made by bench/run_amd_fp8_gemm.sh (bench_gemm traced on
# the interpreter, then `tritium compile --target gfx942` of its IR at each configuration).
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import amd_parity  # noqa: E402

SIG = ("a:*fp8e4b8 b:*fp8e4b8 bias:*fp32 c:*fp16 M:i32 N:i32 K:i32 sam:i32 sak:i32 sbk:i32 "
       "sbn:i32 scm:i32 scn:i32 BM:constexpr BN:constexpr BK:constexpr GM:constexpr "
       "EPILOGUE:constexpr")


def _case(bm, bn, bk, w, s):
    return dict(kernel="matmul_fp8_kernel", num_warps=w, num_stages=s,
                constexprs=dict(BM=bm, BN=bn, BK=bk, GM=8, EPILOGUE=False),
                args=dict(M=4096, N=4096, K=4096, sam=4096, sak=1, sbk=1, sbn=4096, scm=4096,
                          scn=1))


# Triton's AMD default of two stages; tiles a gfx942 fp8 GEMM would take.
CASES = {
    "fp8_gemm_128x128x64_w4": _case(128, 128, 64, 4, 2),
    "fp8_gemm_128x128x128_w8": _case(128, 128, 128, 8, 2),
    "fp8_gemm_256x256x64_w8": _case(256, 256, 64, 8, 2),
}
FIELDS = ["case", "compiler", "vgpr", "agpr", "scratch", "lds", "matrix", "instructions",
          "loop_instructions", "loop_matrix", "loop_lds_reads", "loop_lds_writes", "loop_waitcnt"]


def row(case, compiler, stats):
    return dict(case=case, compiler=compiler, **{k: stats.get(k, "") for k in FIELDS[2:]})


def main(argv):
    out = csv.DictWriter(sys.stdout, FIELDS)
    out.writeheader()
    if argv[:1] == ["triton"]:
        import gemm  # noqa: E402  (torch and triton)
        amd_parity.SIGNATURES["matmul_fp8_kernel"] = SIG
        amd_parity.TWINS["matmul_fp8_kernel"] = gemm.matmul_kernel.fn.fn
        amd_parity.CASES.update(CASES)
        pointer_range = amd_parity._buffer_ops_knob()
        for case in CASES:
            text, name, shared = amd_parity.compile_case(case, "gfx942", pointer_range)
            if len(argv) > 1:
                Path(argv[1]).mkdir(parents=True, exist_ok=True)
                (Path(argv[1]) / f"{case}.amdgcn").write_text(text)
            stats = amd_parity.isa_stats(text, name)
            stats["lds"] = shared
            out.writerow(row(case, "triton", stats))
        return 0
    if argv[:1] == ["tritium"] and len(argv) == 2:
        for case in CASES:
            text = (Path(argv[1]) / f"{case}.amdgcn").read_text()
            name = amd_parity.kernel_names(text)[0]
            out.writerow(row(case, "tritium", amd_parity.isa_stats(text, name)))
        return 0
    print(__doc__ or "usage: amd_fp8_gemm.py triton | tritium DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
