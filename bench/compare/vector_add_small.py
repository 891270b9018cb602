"""Vector add fp32 at 2^20 (issue 10's small size), repeated: tritium's PTX (as `bench_roofline
--device cuda --dump DIR --n 1048576 vector_add_fp32` wrote it), two variants of its header
(no .minnctapersm; .reqntid for .maxntid), Triton's PTX, all loaded through the driver's JIT
and launched by cuLaunchKernel (roofline.py's PtxKernel), and Triton's own launch, timed by
do_bench in 7 interleaved rounds. Prints each one's median of the rounds' medians and range.

Usage: python3 bench/compare/vector_add_small.py DIR
"""
import glob, json, os, re, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roofline as R
import torch, triton
from triton.testing import do_bench
d = sys.argv[1]
n = 1 << 20
x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
out = torch.empty_like(x)
tri = lambda: R.add_kernel[(triton.cdiv(n, 1024), )](x, y, out, n, BLOCK_SIZE=1024)
comp = tri()
tdir = glob.glob(os.path.join(d, "vector_add_fp32.*"))[0]
meta = json.load(open(os.path.join(tdir, "add_kernel.json")))
tptx = open(os.path.join(tdir, "add_kernel.ptx")).read()
print("tritium meta", {k: meta[k] for k in ("name", "num_threads", "shared_bytes")})
print("tritium header:", [l for l in tptx.splitlines() if l.startswith((".maxntid", ".minnctapersm", ".reqntid", ".target", ".version"))])
print("triton header:", [l for l in comp.asm["ptx"].splitlines() if l.startswith((".maxntid", ".minnctapersm", ".reqntid", ".target", ".version"))], comp.metadata.num_warps)
variants = {
    "tritium": tptx,
    "tritium_no_minncta": re.sub(r"\.minnctapersm \d+\n", "", tptx),
    "tritium_reqntid": re.sub(r"\.maxntid (\d+), 1, 1\n(\.minnctapersm \d+\n)?", r".reqntid \1, 1, 1\n", tptx),
}
ks = {k: R.PtxKernel(v, meta["name"], meta["num_threads"], meta["shared_bytes"]) for k, v in variants.items()}
ks["triton_ptx"] = R.PtxKernel(comp.asm["ptx"], comp.metadata.name, comp.metadata.num_warps * 32, comp.metadata.shared)
fns = {k: v.launcher((triton.cdiv(n, 1024), ), (x, y, out, n)) for k, v in ks.items()}
fns["triton"] = tri
for k, f in fns.items():
    out.zero_(); f(); assert torch.equal(out, x + y), k
res = {k: [] for k in fns}
for rep in range(7):
    for k, f in fns.items():
        res[k].append(do_bench(f))
for k, v in res.items():
    v = sorted(v)
    print(f"{k:22s} median of 7 medians {v[3]*1e3:.3f} us  ({12*n/(v[3]*1e-3)/1e9:.0f} GB/s)  range {v[0]*1e3:.3f}-{v[-1]*1e3:.3f}")
