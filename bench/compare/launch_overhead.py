"""Host time per cached launch of a tiny kernel, 20 000 launches, median of 7 rounds: Triton
(the same kernel as bench_gpu's tiny_kernel: add 1 to 128 floats) and PyTorch (x.add_(1) on
128 floats). Prints CSV lines "launch,<who>,<us>"."""
import statistics
import time

import torch
import triton
import triton.language as tl


@triton.jit
def tiny_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


def host_time_per_launch(launch, launches=20000, rounds=7):
    launch()  # compile and load
    torch.cuda.synchronize()
    results = []
    for _ in range(rounds + 1):  # the first round is warm-up
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(launches):
            launch()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        results.append((t1 - t0) / launches * 1e6)
    return statistics.median(results[1:])


def main():
    x = torch.zeros(128, device="cuda")
    n = 128
    grid = (1,)
    tri = host_time_per_launch(lambda: tiny_kernel[grid](x, n, BLOCK=128))
    expected = 20000 * 8 + 1
    if x[0].item() != expected:
        raise SystemExit(f"triton tiny kernel: x = {x[0].item()}, expected {expected}")
    print(f"launch,triton,{tri:.3f}", flush=True)
    y = torch.zeros(128, device="cuda")
    pt = host_time_per_launch(lambda: y.add_(1))
    print(f"launch,torch,{pt:.3f}", flush=True)


if __name__ == "__main__":
    main()
