import sys, os, glob, re, subprocess
sys.path.insert(0, "bench/compare")
import torch; torch.zeros(1, device="cuda")
from paired import PtxKernel
ptxas = os.path.join(os.path.dirname(__import__("triton.backends.nvidia", fromlist=["x"]).__file__), "bin", "ptxas")
for f in sorted(glob.glob("tmpcmp/*.ptx")):
    ptx = open(f).read()
    name = re.search(r"\.entry\s+(\w+)", ptx).group(1)
    k = PtxKernel(ptx, name, 128, 0)
    r = subprocess.run([ptxas, "-v", "--gpu-name", "sm_90a", "-O3", f, "-o", "/tmp/x.cubin"], capture_output=True, text=True)
    regs = re.findall(r"Used (\d+) registers", r.stderr)
    print(f"{f}: driver JIT {k.registers} registers; triton ptxas {regs} {r.returncode} {r.stderr[-200:] if r.returncode else ''}")
