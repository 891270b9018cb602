"""Joins the CSV lines of bench_gpu and the peers' scripts ("<workload>,<who>,<value>") into
the side-by-side table of bench/RESULTS.md, with ratios."""
import sys
from collections import defaultdict


def main():
    rows = defaultdict(dict)
    for path in sys.argv[1:]:
        for line in open(path):
            parts = line.strip().split(",")
            if len(parts) == 3:
                rows[parts[0]][parts[1]] = float(parts[2])
    if "launch" in rows:
        r = rows["launch"]
        raw = r.get("raw")
        print("| host time per launch (us) | value | vs raw cuLaunchKernel |")
        print("|---|---|---|")
        for who in ("raw", "tritium", "tritium_backend", "torch", "triton"):
            if who in r:
                ratio = f"{r[who] / raw:.3f}x" if raw else "-"
                print(f"| {who} | {r[who]:.2f} | {ratio} |")
    vadd = sorted(k for k in rows if k.startswith("vadd_"))
    if vadd:
        print()
        print("| vector add fp32 | tritium GB/s | Triton GB/s | PyTorch GB/s | tritium / Triton |")
        print("|---|---|---|---|---|")
        for k in sorted(vadd, key=lambda s: int(s.split("_")[1])):
            r = rows[k]
            t, tr, pt = r.get("tritium"), r.get("triton"), r.get("torch")
            ratio = f"{t / tr:.3f}" if t and tr else "-"
            fmt = lambda v: f"{v:.0f}" if v else "-"
            print(f"| 2^{k.split('_')[1]} | {fmt(t)} | {fmt(tr)} | {fmt(pt)} | {ratio} |")
    if "copy_28" in rows:
        print(f"\ndevice-to-device copy, 2^28 fp32: {rows['copy_28']['torch']:.0f} GB/s (torch)")


if __name__ == "__main__":
    main()
