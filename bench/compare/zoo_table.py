"""The zoo's table for bench/RESULTS.md and docs/perf/README.md, from zoo.py's CSV files.

Usage: python3 zoo_table.py [--before CSV] CSV [CSV...]
Later files win for the cases they hold (a targeted rerun after a fix); --before adds a column
with the paired ratio of an earlier run. Prints a markdown table (times in microseconds, the
paired median of tritium's time over Triton's per case) and the geometric mean of the ratios.
"""
import csv
import math
import sys


def load(path):
    cases = {}
    for row in csv.DictReader(open(path)):
        if row["kernel"] != "geomean":
            cases.setdefault((row["kernel"], row["shape"]), {})[row["provider"]] = row
    return cases


def main():
    args, before = sys.argv[1:], {}
    if args[:1] == ["--before"]:
        before, args = load(args[1]), args[2:]
    if not args:
        sys.exit(__doc__)
    cases = {}
    for path in args:
        cases.update(load(path))

    def us(case, provider):
        row = case.get(provider)
        return f"{float(row['median_ms']) * 1000:.1f}" if row else "-"

    def ratio(case):
        row = case.get("tritium/triton")
        return float(row["median_ms"]) if row else None

    print("| kernel | shape | tritium µs | Triton µs | PyTorch µs | tritium / Triton |"
          + (" before |" if before else ""))
    print("|---|---|---|---|---|---|" + ("---|" if before else ""))
    logs = []
    for key in sorted(cases):
        case, r = cases[key], ratio(cases[key])
        if r:
            logs.append(math.log(r))
        cells = [key[0], key[1], us(case, "tritium_ptx"), us(case, "triton"), us(case, "torch"),
                 f"{r:.3f}" if r else "-"]
        if before:
            b = ratio(before.get(key, {}))
            cells.append(f"{b:.3f}" if b else "-")
        print("| " + " | ".join(cells) + " |")
    if logs:
        over = sum(1 for v in logs if v > math.log(1.10))
        print(f"\nGeometric mean of tritium / Triton over {len(logs)} cases: "
              f"{math.exp(sum(logs) / len(logs)):.3f}; above 1.10: {over}.")


if __name__ == "__main__":
    main()
