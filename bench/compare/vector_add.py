"""Vector add fp32, 2^20 ... 2^28: Triton (its tutorial's kernel) and PyTorch (torch.add).

Timed as bench_gpu times tritium (tritium::bench is do_bench in C++): triton.testing.do_bench,
device events around each launch with 256 MB of cache cleared before it, the median; every output
equal to x + y. Prints CSV lines "vadd_<log2 n>,<who>,<GB/s>"
(plus "copy_28,torch,<GB/s>", a device-to-device copy, the bandwidth ceiling).
"""
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


def time_launches(fn, *args):
    """Median device time of fn(*args) in us, as triton.testing.do_bench measures it."""
    return triton.testing.do_bench(lambda: fn(*args), return_mode="median") * 1e3


def main():
    gen = torch.Generator(device="cuda").manual_seed(0)
    for lg in range(20, 29, 2):
        n = 1 << lg
        x = torch.rand(n, device="cuda", generator=gen) * 2 - 1
        y = torch.rand(n, device="cuda", generator=gen) * 2 - 1
        out = torch.empty_like(x)
        for who, fn in (("triton", triton_add), ("torch", torch_add)):
            out.fill_(float("nan"))
            us = time_launches(fn, x, y, out)
            ref = (x.double() + y.double()).float()
            if not torch.equal(out, ref):
                sys.exit(f"{who} vector add 2^{lg}: wrong result")
            print(f"vadd_{lg},{who},{12 * n / (us * 1e-6) / 1e9:.1f}", flush=True)
        if lg == 28:
            us = time_launches(lambda a, b: b.copy_(a), x, out)
            print(f"copy_28,torch,{2 * n * 4 / (us * 1e-6) / 1e9:.1f}", flush=True)
        del x, y, out
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
