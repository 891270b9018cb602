"""Side-by-side tables from benchmark CSV files (Python's standard library only).

Reads the rows bench_roofline and bench/compare/roofline.py write,
    workload,size,provider,gbps,median_ms,q20_ms,q80_ms
from any number of files (one run: tritium's and its peers'), and prints one Markdown table
per workload: a row per size, a column of GB/s per provider, and tritium's ratio to the
reference peer (Triton where it ran, else the plain C++ loop). With --paired FILE (roofline.py
--paired: workload,size,ratio,q20,q80,rounds), a column of the median over rounds of Triton's
time over tritium's, both timed round by round in Triton's harness.

Usage: python3 bench/report.py FILE.csv... [--paired FILE]
"""
import csv
import sys
from collections import defaultdict

ORDER = ["tritium", "triton", "tritium_ptx", "triton_ptx", "triton_persistent", "torch", "cpp_loop"]
NAMES = {"tritium": "tritium", "triton": "Triton", "triton_persistent": "Triton (tutorial's persistent launch)",
         "torch": "PyTorch", "cpp_loop": "plain C++ loop",
         # roofline.py --tritium-ptx: both PTX texts through the driver's JIT linker, in Python
         "tritium_ptx": "tritium in Triton's harness", "triton_ptx": "Triton PTX, driver JIT"}


def load(paths):
    data = defaultdict(lambda: defaultdict(dict))  # workload -> size -> provider -> gbps
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.reader(f):
                if len(row) < 4 or row[0] == "workload":
                    continue
                data[row[0]][int(row[1])][row[2]] = float(row[3])
    return data


def reference(providers):
    for p in ("triton", "cpp_loop"):
        if p in providers:
            return p
    return None


def load_paired(path):
    paired = {}  # (workload, size) -> (ratio, q20, q80)
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if len(row) >= 5:
                paired[(row[0], int(row[1]))] = tuple(float(v) for v in row[2:5])
    return paired


def main():
    args = sys.argv[1:]
    paired = {}
    if "--paired" in args:
        i = args.index("--paired")
        paired = load_paired(args[i + 1])
        del args[i:i + 2]
    paths = [a for a in args if not a.startswith("--")]
    data = load(paths)
    for workload in data:
        sizes = sorted(data[workload])
        providers = {p for s in sizes for p in data[workload][s]}
        cols = [p for p in ORDER if p in providers] + sorted(providers - set(ORDER))
        ref = reference(providers)
        header = ["size"] + [f"{NAMES.get(p, p)} GB/s" for p in cols]
        if ref and "tritium" in providers:
            header.append(f"tritium / {NAMES.get(ref, ref)}")
        same = {"tritium_ptx", "triton_ptx"} <= providers
        if same:
            header.append("same JIT: tritium PTX / Triton PTX")
        pairs = any(w == workload for w, _ in paired)
        if pairs:
            header.append("paired rounds: tritium / Triton (q20-q80)")
        print(f"\n**{workload}**\n")
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        ratios = []
        for s in sizes:
            row = data[workload][s]
            cells = [str(s)] + [f"{row[p]:.0f}" if p in row else "-" for p in cols]
            if ref and "tritium" in providers:
                if "tritium" in row and ref in row:
                    ratios.append(row["tritium"] / row[ref])
                    cells.append(f"{ratios[-1]:.2f}")
                else:
                    cells.append("-")
            if same:
                both = "tritium_ptx" in row and "triton_ptx" in row
                cells.append(f"{row['tritium_ptx'] / row['triton_ptx']:.2f}" if both else "-")
            if pairs:
                r = paired.get((workload, s))
                cells.append(f"{r[0]:.3f} ({r[1]:.2f}-{r[2]:.2f})" if r else "-")
            print("| " + " | ".join(cells) + " |")
        if ratios:
            print(f"\nmin ratio {min(ratios):.2f}, max {max(ratios):.2f}")


if __name__ == "__main__":
    main()
