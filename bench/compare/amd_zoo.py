#!/usr/bin/env python3
"""AMD ISA parity for the zoo (bench/zoo, issue 35/36): tritium's AMDGCN against Triton's, per
kernel the zoo launches at its full (GPU benchmark) shapes.

amd_parity.py does this for the examples from hand-written specializations; the zoo's twins
(bench/compare/zoo.py, zoo_twins_b.py) are launch code instead, so the triton mode runs each
twin once on a CUDA GPU and records every kernel specialization Triton's JIT is asked for (the
signature, constexprs, argument attributes, num_warps, num_stages), then compiles those for
gfx942 (wave64) and gfx1100 (wave32). The parser, the statistics and the judging are
amd_parity's; a row is a (case, arch), a case `zoo.<entry>.<shape>.<kernel>[.<n>]` (n: another
specialization of the kernel in the same case), as bench/amd/amd_kernels --zoo names its dumps.

usage:
  amd_zoo.py triton --out triton_zoo.csv [--archs gfx942,gfx1100] [--only PATTERN ...]
                    [--asm-dir DIR] [--pointer-range auto|on|off] [--capture hook|compile]
                    [--jobs N] [--time-limit S] [--cases CSV] [--hip-max-warps N] [--no-fit-lds]
      needs torch, Triton 3.6 and a CUDA GPU (the twins allocate their inputs there). PATTERN:
      a glob on the entry or <entry>.<shape>. Kernels are captured through Triton's
      knobs.runtime.jit_cache_hook, which also skips the CUDA compile and the launch
      (--capture compile instead wraps triton.compile and really runs them). Pointers get
      tt.pointer_range 32 where the tensor's storage is under 2 GiB (as HIP's launcher gives
      them) when the AMD buffer-ops knob is on. The AMD compiles run in forked processes; past
      --time-limit seconds the rest become error rows. A kernel whose LDS exceeds a
      workgroup's 64 KiB (which Triton compiles, but its HIP launch refuses) is compiled again
      with one stage fewer until it fits: the row's num_stages says which ran. Shapes: the
      entries' `shapes(true)` in
      bench/zoo/*.cpp, or --cases CSV (zoo --csv: kernel,shape).
  amd_zoo.py tritium --dir DIR --out tritium_zoo.csv [--archs ...]
      parse `amd_kernels --zoo --arch A --dump DIR/A`: DIR/<arch>/zoo.<entry>.<shape>.<kernel>
      [.<config>][.<n>].amdgcn with its .json ({name, config, num_warps, num_stages,
      num_threads, shared_bytes}); an .ir without .amdgcn is a failed compile (an error row).
      KERNEL_MAP renames tritium kernels to their twins' names.
  amd_zoo.py compare --triton A.csv --tritium B.csv [--ratchet R.csv] [--markdown OUT.md]
                     [--margin-instructions 0.10] [--allow CASE:METRIC ...] [--all]
      the targets: tritium compiles every kernel; scratch, VGPR and LDS no more than Triton's;
      the main loop's instructions no more than 1.10 x Triton's. Prints the gaps; exit status 1
      when a gap is new or grew against the ratchet record (a tritium CSV), or tritium failed
      to compile a kernel (--allow CASE[@ARCH]:METRIC lets a gap through, e.g. a launch no AMD
      GPU can take). A case on one side only is reported, not fatal.
  amd_zoo.py shapes
      print the zoo's entries and full shapes as read from bench/zoo/*.cpp.
"""
import argparse
import csv
import fnmatch
import json
import os
import re
import signal
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import amd_parity as ap  # noqa: E402  (the parser, stats_row, judge; imports without triton)

ARCHS = ap.ARCHS
# tritium kernel (tritium::jit's name) -> its twin's kernel; None: a tritium helper whose work the
# twin does with torch (bench/zoo/kernels_b_util.hpp's Zero clears accumulators; the twins call
# .zero_()). Every other zoo kernel has its twin's name (checked against bench/zoo/*.cpp).
KERNEL_MAP = {"zoo_zero_f32": None, "zoo_zero_i32": None}


# --- the zoo's entries and full shapes ---------------------------------------------------------
def full_shapes(zoo_dir=ROOT / "bench" / "zoo"):
    """{entry: [full shapes]} from each entry's source: its `add({"name", ...})` and the list
    `shapes(bool full)` returns under `if (full)` (the GPU benchmark's shapes)."""
    out = {}
    for path in sorted(Path(zoo_dir).glob("*.cpp")):
        text = path.read_text()
        name = re.search(r"\badd\(\{\s*\"(\w+)\"", text)
        body = re.search(r"shapes\(bool full\)\s*\{(.*?)\n\}", text, re.S)
        if not name or not body:
            continue
        full = re.search(r"if\s*\(full\)\s*return\s*\{(.*?)\}\s*;", body.group(1), re.S)
        if full:
            out[name.group(1)] = re.findall(r"\"([^\"]+)\"", full.group(1))
    return dict(sorted(out.items()))


def selected_cases(args):
    if args.cases:
        with open(args.cases) as f:
            cases = [(r["kernel"], r["shape"]) for r in csv.DictReader(f)]
        cases = list(dict.fromkeys(cases))
    else:
        cases = [(e, s) for e, shapes in full_shapes().items() for s in shapes]
    pats = [p for o in args.only or [] for p in o.split(",") if p]
    return [(e, s) for e, s in cases
            if not pats or any(fnmatch.fnmatch(e, p) or fnmatch.fnmatch(f"{e}.{s}", p) for p in pats)]


# --- capturing the twins' specializations (GPU machine) -----------------------------------------
_CAPTURED = None  # the current case's specializations (a list), None outside a case
_STORAGE = {}     # the current launch's tensor arguments: name -> bytes of their storage


def _record(jit, signature, constants, attrs, num_warps, num_stages):
    if _CAPTURED is None:
        return
    ident = (jit.__name__, repr(signature), repr(sorted(constants.items(), key=repr)),
             repr(sorted(attrs.items(), key=repr)), num_warps, num_stages)
    if any(c["ident"] == ident for c in _CAPTURED):
        return  # launched again with the same specialization: one kernel
    _CAPTURED.append(dict(ident=ident, jit=jit, signature=dict(signature), constants=dict(constants),
                          attrs=dict(attrs), num_warps=num_warps, num_stages=num_stages,
                          big={k for k, n in _STORAGE.items() if n > 2**31 - 1}))


def install_capture(how):
    """Makes every JIT launch record its specialization into _CAPTURED (see the usage)."""
    import triton
    from triton.runtime.jit import JITFunction
    run = JITFunction.run

    def run_recording(self, *args, **kwargs):
        # HIP's launcher gives a pointer tt.pointer_range 32 when its tensor's storage is under
        # 2 GiB; the hook sees only CUDA's specialization, so keep the sizes of this launch.
        _STORAGE.clear()
        bound = dict(zip(self.arg_names, args))
        bound.update((k, v) for k, v in kwargs.items() if k in self.arg_names)
        for k, v in bound.items():
            if hasattr(v, "untyped_storage"):
                _STORAGE[k] = v.untyped_storage().size()
        return run(self, *args, **kwargs)

    JITFunction.run = run_recording
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if how == "hook" and runtime is not None and hasattr(runtime, "jit_cache_hook"):
        def hook(*, fn, compile, **_):
            _record(fn.jit_function, compile["signature"], compile["constants"],
                    compile["configs"][0], compile["num_warps"], compile["num_stages"])
            return True  # JITFunction.run then returns None: no CUDA compile, no launch
        runtime.jit_cache_hook = hook
        return "hook"
    # Wrap compile: JITFunction.create_binder imports it from triton.compiler when a kernel
    # first runs on a device (so reset_jit_caches() before each case makes it ask again).
    import triton.compiler as tc
    import triton.compiler.compiler as tcc
    real = tcc.compile

    def compile_recording(src, target=None, options=None, **kw):
        if getattr(src, "fn", None) is not None:
            o = options or {}
            _record(src.fn, src.signature, src.constants, src.attrs, o.get("num_warps"),
                    o.get("num_stages"))
        return real(src, target=target, options=options, **kw)

    tc.compile = tcc.compile = triton.compile = compile_recording
    return "compile"


def reset_jit_caches(modules):
    from triton.runtime.jit import JITFunction
    for m in modules:
        for v in vars(m).values():
            if isinstance(v, JITFunction):
                v.device_caches.clear()


def capture_case(zoo, entry, shape, how, modules):
    """([(case name, spec)] of the twin's kernels at this shape in launch order, error): what
    was launched before a failure is kept."""
    global _CAPTURED
    import torch
    if how == "compile":
        reset_jit_caches(modules)
    _CAPTURED, err = [], ""
    try:
        case = zoo.TWINS[entry](shape)
        case.triton()
        torch.cuda.synchronize()
        del case
    except Exception as e:  # noqa: BLE001  (out of memory, a twin's own error)
        err = ap._one_line(e)
    finally:
        specs, _CAPTURED = _CAPTURED, None
        torch.cuda.empty_cache()
    out, count = [], {}
    for s in specs:
        name = s["jit"].__name__
        n = count[name] = count.get(name, -1) + 1
        out.append((f"zoo.{entry}.{shape}.{name}" + (f".{n}" if n else ""), s))
    return out, err


def config_string(spec):
    names = spec["jit"].arg_names
    return " ".join(f"{names[k[0]] if isinstance(k, tuple) and len(k) == 1 else k}={v}"
                    for k, v in spec["constants"].items())


def compile_amd(case, spec, arch, pointer_range, asm_dir, max_warps=0, fit_lds=True):
    """One CSV row: the spec compiled by Triton for arch (run in a forked process)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    jit, sig = spec["jit"], spec["signature"]
    attrs = {k: list(v) for k, v in spec["attrs"].items()}
    if pointer_range:
        for i, name in enumerate(jit.arg_names):
            ty = sig.get(name)
            if isinstance(ty, str) and ty.startswith("*") and name not in spec["big"]:
                attrs[(i, )] = attrs.get((i, ), []) + [["tt.pointer_range", 32]]
    src = ASTSource(jit, sig, spec["constants"], attrs)
    opts = {"num_warps": spec["num_warps"], "num_stages": spec["num_stages"]}
    if max_warps and opts["num_warps"] > max_warps:  # as a HIP launch of the twin would cap it
        opts["num_warps"] = max_warps
    while True:
        k = triton.compile(src, target=GPUTarget("hip", arch, ARCHS[arch]), options=opts)
        shared = getattr(k.metadata, "shared", None)
        # Triton compiles a pipeline whose LDS no AMD workgroup gets (3 stages of a 128 x 256
        # GEMM: 96 KiB); its HIP launch would raise OutOfResources, and its autotuner would
        # prune the config. The peer is the launchable kernel: one stage fewer, until it fits.
        if not fit_lds or (shared or 0) <= ap.LDS_LIMIT or opts["num_stages"] <= 1:
            break
        opts["num_stages"] -= 1
    text, name = k.asm["amdgcn"], getattr(k.metadata, "name", None) or jit.__name__
    if asm_dir:
        d = Path(asm_dir) / arch
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{case}.amdgcn").write_text(text)
        (d / f"{case}.json").write_text(json.dumps(dict(name=name, shared_bytes=shared, **opts)) + "\n")
    return ap.stats_row(case, name, arch, text, shared=shared, **opts)


def _try(work, task, deadline):
    if time.time() >= deadline:
        return "not compiled: --time-limit reached"
    try:
        return work(task)
    except Exception as e:  # noqa: BLE001
        return ap._one_line(e)


def run_forked(tasks, work, jobs, deadline):
    """work(task) -> JSON-able row for each task, `jobs` forked processes at a time (an LLVM
    crash or hang costs one row, not the run); {index: row or error string}."""
    # Python warns of fork() in a threaded process (torch's threads): a child only compiles (no
    # CUDA, no torch), and one stuck on a lock another thread held is killed at the time limit.
    warnings.filterwarnings("ignore", message=".*fork", category=DeprecationWarning)
    tmp, out, running, todo = tempfile.mkdtemp(prefix="amd_zoo."), {}, {}, list(range(len(tasks)))
    while todo or running:
        while todo and len(running) < jobs and time.time() < deadline:
            i = todo.pop(0)
            path = os.path.join(tmp, f"{i}.json")
            pid = os.fork()
            if pid == 0:  # the child: compile, write the row, leave without Python's exit handlers
                code = 0
                try:
                    row = work(tasks[i])
                    with open(path + ".tmp", "w") as f:
                        json.dump(row, f)
                    os.rename(path + ".tmp", path)
                except BaseException as e:  # noqa: BLE001
                    with open(path + ".tmp", "w") as f:
                        json.dump(ap._one_line(e), f)
                    os.rename(path + ".tmp", path)
                    code = 1
                os._exit(code)
            running[pid] = (i, path, time.time())
        if not running and todo:  # past the deadline
            for i in todo:
                out[i] = "not compiled: --time-limit reached"
            break
        time.sleep(0.05)
        for pid, (i, path, start) in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if not done and time.time() > max(deadline, start + 60):
                os.kill(pid, signal.SIGKILL)  # our own child, past the time limit
                done, status = os.waitpid(pid, 0)
                out[i] = "killed: --time-limit reached"
            if done:
                del running[pid]
                if i in out:
                    continue
                if os.path.exists(path):
                    out[i] = json.load(open(path))
                else:
                    out[i] = (f"the compiler died (signal {os.WTERMSIG(status)})"
                              if os.WIFSIGNALED(status) else f"no result (exit {status >> 8})")
    return out


def mode_triton(args):
    cases = selected_cases(args)
    if not cases:
        print("error: no zoo case selected", file=sys.stderr)
        return 2
    # A fresh cache: every compile is done here by this Triton, none read back from files an
    # earlier run (another Triton or LLVM build, edited twins) left.
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="amd_zoo.triton_cache.")
    start = time.time()
    deadline = start + args.time_limit if args.time_limit else float("inf")
    try:
        import triton
        import zoo  # the twins (and zoo_twins_b's, registered into zoo.TWINS)
    except Exception as e:  # noqa: BLE001
        print(f"error: cannot import the twins (torch, triton): {ap._one_line(e)}", file=sys.stderr)
        return 2
    modules = [m for m in (sys.modules.get("zoo"), sys.modules.get("zoo_twins_b")) if m]
    how = install_capture(args.capture)
    pointer_range = {"on": True, "off": False}.get(args.pointer_range, None)
    if pointer_range is None:
        pointer_range = ap._buffer_ops_knob()
    archs = args.archs.split(",")
    print(f"# triton {triton.__version__}, capture by {how}, pointer_range 32 "
          f"{'on' if pointer_range else 'off'}, {len(cases)} cases", file=sys.stderr, flush=True)
    rows, tasks = {}, []  # rows by order key; tasks: (order key, case, spec, arch)
    for ci, (entry, shape) in enumerate(cases):
        t0 = time.time()
        err, specs = "no twin in zoo.py / zoo_twins_b.py", []
        if entry in zoo.TWINS:
            specs, err = capture_case(zoo, entry, shape, how, modules)
        if err or not specs:  # a row for the case itself (after the kernels it did launch)
            for arch in archs:
                rows[(ci, len(specs), arch)] = ap.stats_row(
                    f"zoo.{entry}.{shape}", "", arch, None, error=err or "no kernel launched")
        for si, (name, spec) in enumerate(specs):
            for arch in archs:
                tasks.append(((ci, si, arch), name, spec, arch))
        print(f"# {entry} {shape}: {err or ' '.join(n.split('.')[3] for n, _ in specs)} "
              f"({time.time() - t0:.1f} s)", file=sys.stderr, flush=True)

    def work(task):
        _, name, spec, arch = task
        row = compile_amd(name, spec, arch, pointer_range, args.asm_dir, args.hip_max_warps,
                          not args.no_fit_lds)
        row["config"] = config_string(spec)
        return row

    t0 = time.time()
    if args.jobs > 1:
        done = run_forked(tasks, work, args.jobs, deadline)
    else:  # in this process (for a debugger): a crash ends the run
        done = {i: _try(work, t, deadline) for i, t in enumerate(tasks)}
    for i, (key, name, spec, arch) in enumerate(tasks):
        r = done.get(i, "not compiled")
        if not isinstance(r, dict):  # the error's text
            r = ap.stats_row(name, spec["jit"].__name__, arch, None, error=str(r),
                             num_warps=spec["num_warps"], num_stages=spec["num_stages"])
            r["config"] = config_string(spec)
        rows[key] = r
        print(f"# {name} {arch}: {r['error'] or 'ok'}", file=sys.stderr)
    print(f"# {len(tasks)} AMD compiles in {time.time() - t0:.0f} s ({args.jobs} jobs), "
          f"{time.time() - start:.0f} s in all", file=sys.stderr)
    order = {a: i for i, a in enumerate(archs)}
    write_rows([rows[k] for k in sorted(rows, key=lambda k: (k[0], k[1], order[k[2]]))], args.out)
    return 0


def write_rows(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=ap.ROW_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in ap.ROW_FIELDS})
    print(f"# wrote {len(rows)} rows to {path}", file=sys.stderr)


# --- tritium's dumps ------------------------------------------------------------------------------
def tritium_case(stem):
    """`zoo.<entry>.<shape>.<kernel>[.<config>][.<n>]` -> (case name in Triton's terms, the
    twin's kernel, config), or None if the stem is no zoo dump. A helper without a twin keeps
    its own name (a tritium-only row)."""
    parts = stem.split(".")
    if len(parts) < 4 or parts[0] != "zoo":
        return None
    entry, shape, kernel, rest = parts[1], parts[2], parts[3], parts[4:]
    n = rest.pop() if rest and rest[-1].isdigit() else ""
    config = ".".join(rest)
    twin = KERNEL_MAP.get(kernel, kernel) or kernel  # a helper keeps its name: tritium-only
    return ".".join(p for p in ("zoo", entry, shape, twin, config, n) if p), twin, config


def mode_tritium(args):
    root = Path(args.dir)
    if not root.is_dir():
        print(f"error: {root} is not a directory", file=sys.stderr)
        return 2
    archs = args.archs.split(",") if args.archs else \
        [a for a in ARCHS if (root / a).is_dir()] + \
        sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in ARCHS)
    rows = []
    for arch in archs:
        d = root / arch
        stems = {}
        for p in sorted(d.glob("zoo.*")) if d.is_dir() else []:
            for ext in (".amdgcn", ".json", ".ir"):
                if p.name.endswith(ext):
                    stems.setdefault(p.name[:-len(ext)], None)
        for stem in stems:
            named = tritium_case(stem)
            if named is None:
                continue
            case, twin, config = named
            asm, side = d / f"{stem}.amdgcn", d / f"{stem}.json"
            meta = {}
            if side.is_file():
                try:
                    meta = json.loads(side.read_text())
                except ValueError as e:
                    meta = {"error": f"bad {side.name}: {e}"}
            warps = meta.get("num_warps")
            if warps is None and ap._int(meta.get("num_threads")) and arch in ARCHS:
                warps = ap._int(meta.get("num_threads")) // ARCHS[arch]
            error = meta.get("error") or ("" if asm.is_file() else
                                          f"no {stem}.amdgcn: tritium did not compile it")
            text = asm.read_text(errors="replace") if asm.is_file() else None
            row = ap.stats_row(case, meta.get("name") or twin, arch, text,
                               shared=ap._int(meta.get("shared_bytes")), error=error,
                               num_warps=warps, num_stages=meta.get("num_stages"))
            row["config"] = meta.get("config") or config
            rows.append(row)
    write_rows(rows, args.out)
    return 0


# --- the comparison -----------------------------------------------------------------------------
SHOWN = [("vgpr", "vgpr"), ("agpr", "agpr"), ("scratch", "scratch"), ("lds", "lds"),
         ("instr", "instructions"), ("loop_instr", "loop_instructions"), ("waitcnt", "waitcnt"),
         ("mma", "matrix")]


def mode_compare(args):
    tt, TT = ap.read_csv(args.tritium), ap.read_csv(args.triton)
    if args.ratchet and not Path(args.ratchet).is_file():
        print(f"error: no ratchet record {args.ratchet}", file=sys.stderr)
        return 2
    record = ap.read_csv(args.ratchet) if args.ratchet else None
    margins = dict(vgpr=0.0, lds=0.0, instructions=args.margin_instructions, total=None)
    allow = [tuple(a.rsplit(":", 1)) for o in args.allow or [] for a in o.split(",") if ":" in a]

    def allowed(case, arch, metric):  # --allow CASE[@ARCH]:METRIC, globs
        return any((fnmatch.fnmatch(case, c) or fnmatch.fnmatch(f"{case}@{arch}", c))
                   and fnmatch.fnmatch(metric, m) for c, m in allow)

    order = {c: i for i, c in enumerate(dict.fromkeys(c for c, _ in list(TT) + list(tt)))}
    arch_order = {a: i for i, a in enumerate(ARCHS)}
    keys = sorted(set(tt) | set(TT), key=lambda k: (order[k[0]], arch_order.get(k[1], 9), k[1]))
    header = ["case", "arch"] + [h for h, _ in SHOWN] + ["status"]
    table, shown, fails, known, notes = [], [], [], [], []
    for case, arch in keys:
        t, T = tt.get((case, arch)), TT.get((case, arch))
        where, status = f"{case}@{arch}", []
        if t is not None and t.get("error"):
            also = " (Triton failed too)" if T is not None and T.get("error") else ""
            if allowed(case, arch, "error"):
                known.append(f"{where} error: tritium: {t['error']}{also} (--allow)")
                status.append("allowed error")
            else:  # fatal, ratchet or not
                fails.append(f"{where} error: tritium: {t['error']}{also}")
                status.append("TRITIUM FAILED")
        elif t is None:
            notes.append(f"{where}: triton only" + (f" (triton failed: {T['error']})"
                                                       if T.get("error") else ""))
            status.append("no tritium")
        elif T is None:
            helper = KERNEL_MAP.get((case.split(".") + ["", "", "", ""])[3], "") is None
            notes.append(f"{where}: tritium only" + (" (a helper without a twin)" if helper else ""))
            status.append("no triton")
        elif T.get("error"):
            notes.append(f"{where}: triton failed: {T['error']}")
            status.append("triton failed")
        else:
            for metric, why in ap.judge(t, T, margins):
                rec = record.get((case, arch)) if record else None
                now, was = ap._num(t, metric), ap._num(rec, metric)
                slack = 1 + (args.ratchet_margin if metric.endswith("instructions") else 0)
                if allowed(case, arch, metric):
                    known.append(f"{where} {metric}: {why} (--allow)")
                    status.append(f"allowed {metric}")
                elif now is not None and was is not None and now <= was * slack:
                    known.append(f"{where} {metric}: {why} (known gap: record {was})")
                    status.append(f"known {metric}")
                else:
                    why += f" (worse than the record, {was})" if was is not None else " (new gap)"
                    fails.append(f"{where} {metric}: {why}")
                    status.append(f"WORSE {metric}")
        for who, row in (("tritium", t), ("Triton", T)):  # kernels no such GPU would launch
            if row is None or row.get("error"):
                continue
            if (ap._num(row, "lds") or 0) > ap.LDS_LIMIT:
                notes.append(f"{where}: {who}'s LDS {ap._num(row, 'lds')} B > {ap.LDS_LIMIT} B, "
                                "more than a workgroup gets: it would not launch")
            if (ap._num(row, "num_warps") or 0) * ARCHS.get(arch, 0) > 1024:
                notes.append(f"{where}: {who}'s {row['num_warps']} warps x {ARCHS[arch]} lanes "
                                "> 1024 threads: it would not launch")
        for f in ("num_warps", "num_stages"):  # a gap may be the launch's, not the compiler's
            if t is not None and T is not None and t.get(f) and T.get(f) and t[f] != T[f]:
                notes.append(f"{where}: {f} differs: tritium {t[f]}, Triton {T[f]}")
        cells = [case, arch]
        for _, field in SHOWN:
            a = "-" if t is None or t.get("error") else (t.get(field) or ".")
            b = "-" if T is None or T.get("error") else (T.get(field) or ".")
            cells.append(f"{a}/{b}")
        cells.append(", ".join(status) or "ok")
        table.append(cells)
        if args.all or (status and t is not None and T is not None):
            shown.append(cells)
    print("tritium/Triton per metric (-: no code, .: none, e.g. no loop)"
          + ("" if args.all else "; rows with a gap or a failure"))
    widths = [max(len(r[i]) for r in [header] + shown) for i in range(len(header))]
    for r in [header] + shown:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    for line in notes:
        print(f"note: {line}")
    for line in known:
        print(f"known: {line}")
    for line in fails:
        print(f"WORSE: {line}")
    both = sum(1 for k in keys if k in tt and k in TT)
    ok = sum(1 for r in table if r[-1] == "ok")
    print(f"{len(keys)} (case, arch) rows, {both} on both sides, {ok} at or better than Triton, "
          f"{len(known)} known gaps, {len(fails)} new or grown gaps and tritium failures, "
          f"{sum(1 for k in keys if (k in tt) != (k in TT))} on one side only")
    if args.markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in table]
        lines += ["", "Cells are tritium/Triton 3.6; `-`: no code, `.`: none (no loop). A gap: "
                  "VGPR, scratch or LDS above Triton's, the main loop's instructions above "
                  f"{1 + args.margin_instructions:g} x Triton's, or no tritium code.", ""]
        lines += [f"- note: {n}" for n in notes] + [f"- known: {k}" for k in known] + \
            [f"- worse: {f}" for f in fails]
        Path(args.markdown).write_text("\n".join(lines).rstrip() + "\n")
    return 1 if fails else 0


def mode_shapes(args):
    shapes = full_shapes()
    for entry, s in shapes.items():
        print(f"{entry}: {' '.join(s)}")
    print(f"{len(shapes)} entries, {sum(map(len, shapes.values()))} shapes", file=sys.stderr)
    return 0


def main(argv=None):
    p0 = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p0.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("triton", help="capture the twins' kernels on CUDA, compile them for AMD")
    p.add_argument("--out", required=True)
    p.add_argument("--archs", default=",".join(ARCHS))
    p.add_argument("--only", nargs="+", metavar="PATTERN", help="entries or entry.shape (globs)")
    p.add_argument("--cases", help="the (kernel, shape) cases from a CSV (zoo --csv)")
    p.add_argument("--asm-dir", help="also write DIR/<arch>/<case>.amdgcn and .json")
    p.add_argument("--pointer-range", choices=["auto", "on", "off"], default="auto")
    p.add_argument("--capture", choices=["hook", "compile"], default="hook")
    p.add_argument("--hip-max-warps", type=int, default=0, metavar="N",
                   help="compile with at most N warps (Liger's calculate_settings gives 16 on "
                        "HIP where CUDA gets 32, as bench/zoo's row_warps does); 0: the twin's")
    p.add_argument("--no-fit-lds", action="store_true",
                   help="keep the twin's num_stages where the kernel's LDS exceeds 64 KiB "
                        "(by default a stage is dropped until it fits, as a launch needs)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--time-limit", type=float, default=0,
                   help="seconds; compiles not started by then become error rows (0: none)")
    p = sub.add_parser("tritium", help="parse amd_kernels --zoo's dumps")
    p.add_argument("--dir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--archs", help="default: the arch folders present")
    p = sub.add_parser("compare", help="tritium against Triton")
    p.add_argument("--triton", required=True)
    p.add_argument("--tritium", required=True)
    p.add_argument("--ratchet", metavar="TRITIUM_CSV",
                   help="tritium's recorded statistics: a gap passes while no worse than this")
    p.add_argument("--ratchet-margin", type=float, default=0.02,
                   help="instruction counts may exceed the record by this fraction")
    p.add_argument("--margin-instructions", type=float, default=0.10)
    p.add_argument("--markdown")
    p.add_argument("--all", action="store_true", help="print every row, not only the gaps")
    p.add_argument("--allow", action="append", metavar="CASE[@ARCH]:METRIC",
                   help="let these gaps through (globs; METRIC 'error' for a failed compile)")
    sub.add_parser("shapes", help="print the entries' full shapes")
    args = p0.parse_args(argv)
    if args.mode == "triton":
        for a in args.archs.split(","):
            if a not in ARCHS:
                p0.error(f"unknown arch {a} (known: {', '.join(ARCHS)})")
    return {"triton": mode_triton, "tritium": mode_tritium, "compare": mode_compare,
            "shapes": mode_shapes}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
