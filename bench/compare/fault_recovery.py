# The peer of tests/gpu/device_fault.cpp: what PyTorch and Triton can do after an out-of-bounds
# store in a Triton kernel, in the same process. Run by tools/run_reliability_gpu.sh; prints
# FAULT (the error the fault raised) and AFTER (whether a fresh PyTorch op still works).
import torch
import triton
import triton.language as tl


@triton.jit
def oob_store(out, offset):
    offs = tl.arange(0, 128).to(tl.int64) + offset
    tl.store(out + offs, tl.zeros((128,), tl.float32) + 1.0)  # no mask: offset 2^40 faults


def first_line(e):
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"


out = torch.empty(128, device="cuda")
oob_store[(1,)](out, 0)
torch.cuda.synchronize()
print(f"BEFORE ok (torch {torch.__version__}, triton {triton.__version__})")
try:
    oob_store[(1,)](out, 1 << 40)
    torch.cuda.synchronize()
    print("FAULT none")
except Exception as e:  # noqa: BLE001 - whatever the fault raises is the result
    print("FAULT", first_line(e))
try:
    x = torch.ones(1024, device="cuda")
    print("AFTER works", float((x + 1).sum().item()))
except Exception as e:  # noqa: BLE001
    print("AFTER fails", first_line(e))
try:
    torch.cuda.empty_cache()
    y = torch.zeros(128, device="cuda")
    oob_store[(1,)](y, 0)  # in bounds
    torch.cuda.synchronize()
    print("RELAUNCH works")
except Exception as e:  # noqa: BLE001
    print("RELAUNCH fails", first_line(e))
