"""What the GPU comparisons share (roofline.py, zoo.py): a kernel from PTX text launched under
PyTorch's stream (tritium's kernels, from the PTX that TRITIUM_DUMP writes, timed under the same
harness as Triton's), and do_bench's protocol for several functions round by round, so that
their times pair up."""
import ctypes
import os
import re
import subprocess
import tempfile

import torch


def jit_of(ptx_path):
    """How tritium's runtime assembled the PTX at `ptx_path`: "whole" or "link", from the `.jit`
    file TRITIUM_DUMP writes beside it (runtime/cuda/jit_choice.hpp); "link" without one."""
    path = os.path.splitext(ptx_path)[0] + ".jit"
    if os.path.exists(path):
        with open(path) as f:
            return "whole" if f.read().startswith("whole") else "link"
    return "link"


class PtxKernel:
    """A kernel from PTX text, assembled by the CUDA driver as tritium's runtime assembled it
    (runtime/cuda/cuda_backend.cpp: `jit` "link", its JIT linker, or "whole",
    cuModuleLoadData on the PTX) and launched with cuLaunchKernel on PyTorch's current stream,
    so that do_bench times it as it times Triton's launches.
    Arguments: tensors (their device address), ints and floats, converted by the PTX's own
    parameter types; `extra` zeros fill trailing parameters the caller does not name (Triton's
    scratch pointers)."""
    _cuda = None

    def __init__(self, ptx, name, threads, shared, jit="link"):
        if PtxKernel._cuda is None:
            PtxKernel._cuda = ctypes.CDLL("libcuda.so.1")
            torch.cuda.init()
        cu = PtxKernel._cuda
        self.module, self.fn = ctypes.c_void_p(), ctypes.c_void_p()
        image = ptx.encode() + b"\0" if jit == "whole" else self._link(ptx)
        self._ok(cu.cuModuleLoadData(ctypes.byref(self.module), image), "load")
        self._ok(cu.cuModuleGetFunction(ctypes.byref(self.fn), self.module, name.encode()),
                 "function " + name)
        if shared > 48 * 1024:  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            self._ok(cu.cuFuncSetAttribute(self.fn, 8, shared), "shared memory")
        entry = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\((.*?)\)", ptx, re.S)
        self.types = re.findall(r"\.param\s+\.(\w+)", entry.group(1)) if entry else []
        self.threads, self.shared = threads, shared
        self.registers = ctypes.c_int()
        cu.cuFuncGetAttribute(ctypes.byref(self.registers), 4, self.fn)  # NUM_REGS
        self.registers = self.registers.value

    @classmethod
    def _link(cls, ptx):
        """The cubin of `ptx` as tritium's runtime makes it: with the ptxas TRITIUM_PTXAS names
        where it is set, else from cuLinkCreate / cuLinkAddData / cuLinkComplete."""
        if os.environ.get("TRITIUM_PTXAS"):
            return cls._assemble(os.environ["TRITIUM_PTXAS"], ptx)
        cu = cls._cuda
        state, text = ctypes.c_void_p(), ptx.encode() + b"\0"
        cls._ok(cu.cuLinkCreate_v2(0, None, None, ctypes.byref(state)), "cuLinkCreate")
        try:
            cls._ok(cu.cuLinkAddData_v2(state, 1, text, ctypes.c_size_t(len(text)), b"kernel", 0,
                                        None, None), "cuLinkAddData")  # 1: CU_JIT_INPUT_PTX
            cubin, size = ctypes.c_void_p(), ctypes.c_size_t()
            cls._ok(cu.cuLinkComplete(state, ctypes.byref(cubin), ctypes.byref(size)),
                    "cuLinkComplete")
            return ctypes.string_at(cubin, size.value)  # owned by the link state: copied
        finally:
            cu.cuLinkDestroy(state)

    @staticmethod
    def _assemble(ptxas, ptx):
        arch = re.search(r"\.target\s+(\w+)", ptx).group(1)
        with tempfile.TemporaryDirectory(prefix="paired-ptxas-") as d:
            src, out = os.path.join(d, "kernel.ptx"), os.path.join(d, "kernel.cubin")
            with open(src, "w") as f:
                f.write(ptx)
            subprocess.run([ptxas, "-arch=" + arch, "-o", out, src], check=True)
            with open(out, "rb") as f:
                return f.read()

    @staticmethod
    def _ok(code, what):
        if code != 0:
            raise RuntimeError(f"paired.py: CUDA error {code} ({what})")

    def launcher(self, grid, args):
        """A function that launches on `grid` with `args`, or None where the PTX's parameters
        are not `args` (plus trailing pointers, passed as 0)."""
        if len(self.types) < len(args) or any(t not in ("u64", "b64") for t in self.types[len(args):]):
            return None
        ctype = {"u64": ctypes.c_uint64, "b64": ctypes.c_uint64, "u32": ctypes.c_uint32,
                 "b32": ctypes.c_uint32, "s32": ctypes.c_int32, "f32": ctypes.c_float,
                 "s64": ctypes.c_int64, "f64": ctypes.c_double}
        values = []
        for t, a in zip(self.types, list(args) + [0] * (len(self.types) - len(args))):
            if t not in ctype:
                return None
            values.append(ctype[t](a.data_ptr() if isinstance(a, torch.Tensor) else a))
        params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
        grid = tuple(grid) + (1, ) * (3 - len(grid))
        cu = PtxKernel._cuda

        def launch():
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            self._ok(cu.cuLaunchKernel(self.fn, *grid, self.threads, 1, 1, self.shared, stream,
                                       params, None), "launch")

        launch.keep = (values, params)  # alive as long as the launcher
        return launch


def quantiles(values):
    """The median and the 0.2 and 0.8 quantiles, as do_bench computes them (torch.quantile)."""
    return torch.quantile(torch.tensor(values, dtype=torch.float64),
                          torch.tensor([0.5, 0.2, 0.8], dtype=torch.float64)).tolist()


def bench_rounds(fns, warmup_ms=25, rep_ms=100):
    """do_bench's protocol (256 MB cleared before every run, device events, warm-up and repeat
    budgets from a five-run estimate) for several functions, round by round with the order
    rotating: each function's times, in round order, so that round i of each can be paired."""
    cache = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    estimate = []
    for fn in fns:
        fn()
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            cache.zero_()
            fn()
        stop.record()
        torch.cuda.synchronize()
        estimate.append(max(start.elapsed_time(stop) / 5, 1e-3))
    for fn, ms in zip(fns, estimate):
        for _ in range(max(1, int(warmup_ms / ms))):
            fn()
    reps = max(10, int(rep_ms * len(fns) / sum(estimate)))
    n = len(fns)
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
               for _ in range(reps)] for _ in fns]
    for i in range(reps):
        for k in range(n):
            f = (k + i) % n
            cache.zero_()
            events[f][i][0].record()
            fns[f]()
            events[f][i][1].record()
    torch.cuda.synchronize()
    return [[a.elapsed_time(b) for a, b in ev] for ev in events]
