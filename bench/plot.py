"""Renders benchmark CSV files as SVG plots with gnuplot, one plot per workload, as Triton's
perf_report draws them: size on the x axis, GB/s on the y axis, one line per provider.

Reads the rows bench_roofline and bench/compare/roofline.py write,
    workload,size,provider,gbps,median_ms,q20_ms,q80_ms
and draws each provider's median with its 20-80 % quantile band as error bars.

Usage: python3 bench/plot.py --out PREFIX [--title TEXT] FILE.csv...
    writes PREFIX<workload>.svg for every workload (e.g. --out docs/perf/h200_)
Needs gnuplot (Debian: gnuplot-nox); Python's standard library otherwise.
"""
import csv
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict

ORDER = ["tritium", "tritium_no_streaming", "tritium_before_single_trip", "tritium_before_reduce_prefetch", "triton", "triton_persistent", "torch", "cpp_loop"]
LABEL = {"tritium": "tritium", "tritium_no_streaming": "tritium, streaming stores off",
         "tritium_before_single_trip": "tritium before single-trip loops",
         "tritium_before_reduce_prefetch": "tritium before reductions prefetched", "triton": "Triton", "triton_persistent": "Triton (persistent launch)",
         "torch": "PyTorch", "cpp_loop": "plain C++ loop (-O3, same bytes)"}
COLOR = {"tritium": "#d62728", "tritium_no_streaming": "#ff9896", "tritium_before_single_trip": "#ff9896",
         "tritium_before_reduce_prefetch": "#ff9896", "triton": "#1f77b4", "triton_persistent": "#17becf",
         "torch": "#2ca02c", "cpp_loop": "#7f7f7f"}
XLABEL = {"vector_add_fp32": "elements", "silu_mul_fp16": "elements", "gelu_mul_fp16": "elements"}
SUBTITLE = {"vector_add_fp32": "out = x + y, fp32",
            "silu_mul_fp16": "h = g * sigmoid(g) * u, fp16",
            "gelu_mul_fp16": "h = gelu_tanh(g) * u (GeGLU), fp16",
            "softmax_fp32": "softmax over rows, fp32, 4096 rows",
            "layer_norm_fp16": "layer norm forward (Triton's looped kernel), fp16, 4096 rows",
            "layer_norm_row_fp16": "layer norm forward (row in one block), fp16, 4096 rows",
            "rmsnorm_fp16": "RMSNorm, fp16, 4096 rows"}


def load(paths):
    data = defaultdict(lambda: defaultdict(list))  # workload -> provider -> [(size, gbps, lo, hi)]
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.reader(f):
                if len(row) < 7 or row[0] == "workload":
                    continue
                workload, size, provider = row[0], int(row[1]), row[2]
                gbps, ms, q20, q80 = (float(v) for v in row[3:7])
                nbytes = gbps * ms * 1e6  # GB/s x ms -> bytes
                # The faster quantile (q20, less time) is the higher bandwidth.
                data[workload][provider].append((size, gbps, nbytes / (q80 * 1e6), nbytes / (q20 * 1e6)))
    return data


def plot(workload, series, out, title):
    providers = [p for p in ORDER if p in series] + sorted(set(series) - set(ORDER))
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for p in providers:
            path = os.path.join(tmp, f"{p}.dat")
            with open(path, "w") as f:
                for size, gbps, lo, hi in sorted(series[p]):
                    f.write(f"{size} {gbps} {lo} {hi}\n")
            files.append((p, path))
        heading = f"{workload}: {SUBTITLE.get(workload, '')}" + (f" ({title})" if title else "")
        lines = ", ".join(
            f"'{path}' using 1:2:3:4 with yerrorlines lw 2 pt 7 ps 0.6 lc rgb '{COLOR.get(p, '#000000')}' "
            f"title '{LABEL.get(p, p)}'" for p, path in files)
        script = f"""
set terminal svg size 720,440 dynamic noenhanced font 'sans,11' background rgb 'white'
set output '{out}'
set title "{heading}"
set xlabel '{XLABEL.get(workload, "columns (N)")}'
set ylabel 'GB/s'
set logscale x 2
set format x '%.0f'
set grid
set yrange [0:*]
set key left top
plot {lines}
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)


def main():
    args = sys.argv[1:]
    if "--out" not in args or not shutil.which("gnuplot"):
        sys.exit(__doc__ if "--out" not in args else "plot.py: gnuplot is not installed "
                 "(Debian: apt-get install gnuplot-nox)")
    prefix = args[args.index("--out") + 1]
    title = args[args.index("--title") + 1] if "--title" in args else ""
    skip = {prefix, title}
    paths = [a for a in args if not a.startswith("--") and a not in skip]
    os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
    for workload, series in load(paths).items():
        out = f"{prefix}{workload}.svg"
        plot(workload, series, out, title)
        print(out)


if __name__ == "__main__":
    main()
