"""Per-kernel summary of an Nsight Compute CSV (ncu --csv --metrics gpu__time_duration.sum):
one line per kernel name and grid, with the launch count and the median and minimum duration
in microseconds. ncu runs each kernel alone, caches flushed and clocks at base (its defaults),
so the numbers are the kernels' own time, without launch gaps: what events around a 6 us
kernel cannot separate from the launch.

Usage: ncu --csv --metrics gpu__time_duration.sum PROGRAM... | python3 ncu_summary.py LABEL
"""
import csv
import statistics
import sys
from collections import defaultdict


def main():
    label = sys.argv[1] if len(sys.argv) > 1 else ""
    rows = [line for line in sys.stdin if line.startswith('"')]
    times = defaultdict(list)
    for r in csv.DictReader(rows):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "nsecond")
        us = value / 1e3 if unit.startswith("n") else value if unit.startswith("u") else value * 1e3
        name = r["Kernel Name"].split("(")[0][:60]
        times[(name, r.get("Grid Size", ""), r.get("Block Size", ""))].append(us)
    for (name, grid, block), t in times.items():
        print(f"{label},{name},grid {grid} block {block},{len(t)},{statistics.median(t):.2f},"
              f"{min(t):.2f}")


if __name__ == "__main__":
    main()
