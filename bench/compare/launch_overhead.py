"""Host time per cached launch of a tiny kernel, 20 000 launches, median of 7 rounds, as
bench_gpu measures tritium: Triton (its tutorial's add_kernel on 128 elements, one program) and
PyTorch (torch.add(x, y, out=out) on 128 elements). Prints CSV lines "launch,<who>,<us>"."""
import statistics
import time

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


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
    n = 128
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    ref = (x.double() + y.double()).float()
    for who, launch in (
        ("triton", lambda out: add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=1024)),
        ("torch", lambda out: torch.add(x, y, out=out)),
    ):
        out = torch.full((n,), float("nan"), device="cuda")
        us = host_time_per_launch(lambda: launch(out))
        if not torch.equal(out, ref):
            raise SystemExit(f"{who}: wrong result")
        print(f"launch,{who},{us:.3f}", flush=True)


if __name__ == "__main__":
    main()
