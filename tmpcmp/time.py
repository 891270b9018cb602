import sys, os, re, subprocess, ctypes
sys.path.insert(0, "bench/compare")
import torch; torch.zeros(1, device="cuda")
from paired import PtxKernel, bench_rounds, quantiles
ptxas = os.path.join(os.path.dirname(__import__("triton.backends.nvidia", fromlist=["x"]).__file__), "bin", "ptxas")

class Cubin(PtxKernel):
    @classmethod
    def _link(cls, ptx):
        open("/tmp/k.ptx", "w").write(ptx)
        subprocess.run([ptxas, "--gpu-name", "sm_90a", "-O3", "/tmp/k.ptx", "-o", "/tmp/k.cubin"], check=True)
        return open("/tmp/k.cubin", "rb").read()

T, I = 4096, 11008
a = torch.randn(T, I, device="cuda", dtype=torch.float16); b = torch.randn_like(a); c = torch.empty_like(a)
xq = torch.randn(16384, 8192, device="cuda", dtype=torch.float16)
q = torch.empty(16384, 8192, device="cuda", dtype=torch.int8); s = torch.empty(16384, device="cuda", dtype=torch.float32)
fns, names = [], []
for f, grid, args, threads in [("ours_swiglu", (T,), (a, b, c, I), 512), ("triton_swiglu", (T,), (a, b, c, I), 512)]:
    ptx = open(f"tmpcmp/{f}.ptx").read()
    name = re.search(r"\.entry\s+(\w+)", ptx).group(1)
    for kind, cls in (("driver", PtxKernel), ("ptxas12.8", Cubin)):
        k = cls(ptx, name, threads, 0)
        fns.append(k.launcher(grid, args)); names.append(f"{f} {kind} ({k.registers} regs)")
times = bench_rounds(fns)
for n, t in zip(names, times):
    print(f"{n}: {quantiles(t)[0]*1000:.1f} us")
