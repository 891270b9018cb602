"""Side by side: the times examples/06-11 print (their logs) and Triton's tutorial kernels
(tutorials.py's CSV "workload,peer,us"), as a markdown table for bench/RESULTS.md.

    python3 tutorials_report.py triton.csv 06_low_memory_dropout.log ... 11_persistent_matmul.log

The ratio is tritium's time over Triton's (below 1: tritium is faster); the issue's target is
at most 1.05."""
import math
import re
import sys
from collections import defaultdict


def pow2(n):
    n = int(n)
    k = int(math.log2(n))
    return f"2^{k}" if 1 << k == n else str(n)


# (pattern over an example's output line, [(workload, peer, group holding milliseconds)])
PATTERNS = [
    (r"^(\d+) elements: stored mask ([\d.]+) ms .*seeded ([\d.]+) ms",
     lambda m: [(f"dropout stored mask {pow2(m[1])}", "tritium", m[2]),
                (f"dropout seeded {pow2(m[1])}", "tritium", m[3])]),
    (r"^backward (\d+) x (\d+): ([\d.]+) ms",
     lambda m: [(f"layer norm backward {m[1]}x{m[2]}", "tritium", m[3])]),
    (r"^Z (\d+) H (\d+) N_CTX (\d+) HEAD_DIM (\d+) (causal|non-causal): ([\d.]+) ms",
     lambda m: [(f"attention Z{m[1]} H{m[2]} N{m[3]} D{m[4]} {m[5]}", "tritium", m[6])]),
    (r"^asin f32 on (\d+) elements: ([\d.]+) ms",
     lambda m: [(f"asin f32 {pow2(m[1])}", "tritium", m[2])]),
    (r"^group of 4 x (\d+)\^3: ([\d.]+) ms",
     lambda m: [(f"grouped gemm 4x{m[1]}^3", "tritium", m[2])]),
    (r"^(\d+) x (\d+) x (\d+): persistent ([\d.]+) ms .*descriptor persistent ([\d.]+) ms",
     lambda m: [(f"matmul {m[1]}x{m[2]}x{m[3]}", "tritium_persistent", m[4]),
                (f"matmul {m[1]}x{m[2]}x{m[3]}", "tritium_descriptor_persistent", m[5])]),
]

# Which Triton row each tritium row is held against.
PEER = {"tritium": "triton", "tritium_persistent": "triton_persistent",
        "tritium_descriptor_persistent": "triton_descriptor_persistent"}


def main():
    rows = defaultdict(dict)  # workload -> peer -> us
    order = []
    for line in open(sys.argv[1]):
        parts = line.strip().split(",")
        if len(parts) == 3 and parts[0] != "workload" and not parts[0].endswith("/s"):
            rows[parts[0]][parts[1]] = float(parts[2])
    for path in sys.argv[2:]:
        for line in open(path):
            for pattern, make in PATTERNS:
                m = re.match(pattern, line.strip())
                if m:
                    for workload, peer, ms in make(m):
                        rows[workload][peer] = float(ms) * 1e3
                        if workload not in order:
                            order.append(workload)
    print("| workload | tritium (us) | Triton (us) | tritium / Triton | others (us) |")
    print("|---|---|---|---|---|")
    for workload in order + sorted(w for w in rows if w not in order):
        r = rows[workload]
        mine = [p for p in r if p.startswith("tritium")] or [None]
        for p in mine:
            t = r.get(p) if p else None
            peer = PEER.get(p, "triton")
            tr = r.get(peer)
            ratio = f"{t / tr:.3f}" if t and tr else "-"
            label = workload + (f" ({p.removeprefix('tritium_')})" if p and p != "tritium" else "")
            others = ", ".join(f"{k} {v:.1f}" for k, v in r.items()
                               if not k.startswith("tritium") and k != peer)
            fmt = lambda v: f"{v:.1f}" if v else "-"
            print(f"| {label} | {fmt(t)} | {fmt(tr)} | {ratio} | {others} |")


if __name__ == "__main__":
    main()
