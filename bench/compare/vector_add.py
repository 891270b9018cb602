"""Vector add fp32, 2^20 ... 2^28: Triton (its tutorial's kernel) and PyTorch (torch.add).

Timed exactly as bench_gpu times tritium: after warm-up, CUDA events around one launch per input
set (enough sets, about 256 MB, that each has left the L2 when its turn comes), queued behind a
1 ms spin kernel so that host launch overhead stays out; median over the samples; every output
equal to x + y. Prints CSV lines "vadd_<log2 n>,<who>,<GB/s>"
(plus "copy_28,torch,<GB/s>", a device-to-device copy, the bandwidth ceiling).
"""
import statistics
import sys

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


def triton_add(x, y, out):
    n = out.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)


def torch_add(x, y, out):
    torch.add(x, y, out=out)


def time_launches(fn, sets, reps):
    """Median device time per launch: each sample queues one launch per set behind a 1 ms spin
    kernel (so host launch overhead stays out) and brackets them with events."""
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for s in sets:  # warm-up: compile, touch every set
        fn(*s)
    for s in sets:  # poison the outputs: the check after timing sees the timed launches
        s[2].fill_(float("nan"))
    torch.cuda.synchronize()
    cycles = 2_000_000  # about 1 ms at the H100/H200's 1.98 GHz
    times = []
    for _ in range(reps):
        torch.cuda._sleep(cycles)
        start.record()
        for s in sets:
            fn(*s)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3 / len(sets))  # us
    return statistics.median(times)


def main():
    gen = torch.Generator(device="cuda").manual_seed(0)
    for lg in range(20, 29, 2):
        n = 1 << lg
        bytes_per_set = 3 * n * 4
        nsets = max(1, (256 << 20) // bytes_per_set)
        sets = []
        for _ in range(nsets):
            x = torch.rand(n, device="cuda", generator=gen) * 2 - 1
            y = torch.rand(n, device="cuda", generator=gen) * 2 - 1
            sets.append((x, y, torch.empty_like(x)))
        reps = max(10, 200 // nsets)
        for who, fn in (("triton", triton_add), ("torch", torch_add)):
            us = time_launches(fn, sets, reps)
            for s in sets:
                ref = (s[0].double() + s[1].double()).float()
                if not torch.equal(s[2], ref):
                    sys.exit(f"{who} vector add 2^{lg}: wrong result")
            print(f"vadd_{lg},{who},{bytes_per_set / (us * 1e-6) / 1e9:.1f}", flush=True)
        if lg == 28:
            src, dst = sets[0][0], sets[0][2]
            us = time_launches(lambda a, _, b: b.copy_(a), [(src, None, dst)], 20)
            print(f"copy_28,torch,{2 * n * 4 / (us * 1e-6) / 1e9:.1f}", flush=True)
        del sets
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
