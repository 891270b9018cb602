import sys, os, re, subprocess, ctypes
sys.path.insert(0, "bench/compare")
import torch; torch.zeros(1, device="cuda")
from paired import PtxKernel, bench_rounds, quantiles

def variant(ptx, n):
    return ptx if n == 0 else re.sub(r"(\.maxntid [^\n]*\n)", r"\1.minnctapersm %d\n" % n, ptx, count=1)

T, I = 4096, 11008
a = torch.randn(T, I, device="cuda", dtype=torch.float16); b = torch.randn_like(a); c = torch.empty_like(a)
dc = torch.randn_like(a); da = torch.empty_like(a); db = torch.empty_like(a)
xq = torch.randn(16384, 8192, device="cuda", dtype=torch.float16)
q = torch.empty(16384, 8192, device="cuda", dtype=torch.int8); s = torch.empty(16384, device="cuda", dtype=torch.float32)
cases = [("ours_swiglu", (T,), (a, b, c, I), 512, [0, 2, 3]),
         ("triton_swiglu", (T,), (a, b, c, I), 512, [0]),
         ("ours_swbwd", (T,), (dc, a, b, da, db, I), 512, [0, 2, 3]),
         ("ours_q", (16384,), (xq, q, s, 8192), 512, [0, 4]),
         ("triton_q", (16384,), (xq, q, s, 8192), 512, [0])]
for f, grid, args, threads, variants in cases:
    ptx = open(f"tmpcmp/{f}.ptx").read()
    name = re.search(r"\.entry\s+(\w+)", ptx).group(1)
    fns, names = [], []
    for n in variants:
        k = PtxKernel(variant(ptx, n), name, threads, 0)
        fns.append(k.launcher(grid, args)); names.append(f"{f} minnctapersm {n} ({k.registers} regs)")
    for n, t in zip(names, bench_rounds(fns)):
        print(f"{n}: {quantiles(t)[0]*1000:.1f} us", flush=True)
