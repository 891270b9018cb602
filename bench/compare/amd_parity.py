#!/usr/bin/env python3
"""AMD ISA parity: tritium's AMDGCN against Triton's, kernel by kernel, for the examples.

Triton's twins of the examples' kernels (same arguments in the same order, same blocks, loads,
masks, dtypes and math, line by line) are compiled for gfx942 (wave64) and gfx1100 (wave32)
without an AMD GPU, at the fixed configurations of CASES. One parser reads both compilers'
AMDGCN text and counts, per kernel and for its largest innermost loop: instruction lines,
VGPR/AGPR/SGPR, scratch, LDS, matrix instructions, 128-bit global loads and stores, narrow
stores, s_waitcnt, LDS reads and writes by width, ds_bpermute, DPP. Loops are the natural loops
of the function's control-flow graph (LLVM places some `if` bodies after the code, branching back,
so a backward branch alone is no loop); loop_* columns are the largest innermost loop's body.

usage:
  amd_parity.py triton --out triton.csv [--archs gfx942,gfx1100] [--only NAME ...]
                       [--asm-dir DIR] [--pointer-range auto|on|off]
      compile the twins (needs the triton package, 3.6; no GPU, no torch) and write one row per
      (case, arch); --asm-dir also keeps Triton's text as DIR/<arch>/<case>.amdgcn (+ .json).
  amd_parity.py tritium --dir DIR --out tritium.csv [--archs gfx942,gfx1100]
      parse tritium's dumps DIR/<arch>/<case>.amdgcn, with an optional DIR/<arch>/<case>.json
      beside each, as `tritium compile --dump` writes it: {"shared_bytes": N (dynamic LDS of
      the launch), "name" (or "kernel"): symbol, "num_threads" (or "num_warps"), and optionally
      "num_stages", "error": "..."}; <case> is a row name of CASES.
  amd_parity.py compare --triton triton.csv --tritium tritium.csv [--margin-instructions 0.10]
                        [--margin-vgpr 0] [--margin-lds 0] [--margin-total F]
                        [--allow CASE:METRIC ...] [--ratchet TRITIUM_CSV] [--markdown FILE]
      join on (case, arch), print tritium/Triton per metric and mark where tritium is worse:
      vgpr, scratch, lds, loop_instructions (> (1 + margin) x Triton's), error (no code).
      Exit status 1 if any such row is not let through by --allow (CASE may be a glob, or
      CASE@ARCH; METRIC '*' for all).
  amd_parity.py cases
      print CASES as JSON (signature, constexprs, scalar arguments, warps, stages): what the
      C++ side compiles and the names it dumps under.

Specialisation (both sides): pointers 16-byte aligned, i32 arguments equal to 1 are constants
and multiples of 16 are marked divisible by 16, from the scalar values in CASES (a typical
launch of the example); Triton's pointers also get tt.pointer_range 32 (buffer ops, as its
launcher gives tensors under 2 GiB) when its AMD buffer-ops knob is on (--pointer-range).
Only the triton mode imports triton; the rest runs on plain python3.
"""
from __future__ import annotations  # the twins' `tl.constexpr` annotations stay strings

import argparse
import csv
import fnmatch
import json
import os
import re
import sys
from pathlib import Path

tl = None  # triton.language, bound by load_twins(); the twins look it up at compile time
triton = None

# --- the cases -------------------------------------------------------------------------------
# One row per (case, arch). `kernel` is the example's kernel function (tritium's symbol) and the
# twin's name; `constexprs` the compile-time arguments; `args` the scalar arguments of a typical
# launch (they decide the specialisation: == 1 -> constant, % 16 == 0 -> divisible by 16).
SIGNATURES = {
    "add_kernel": "x_ptr:*fp32 y_ptr:*fp32 output_ptr:*fp32 n_elements:i32 BLOCK_SIZE:constexpr",
    "softmax_kernel": "output_ptr:*fp32 input_ptr:*fp32 input_row_stride:i32 "
                      "output_row_stride:i32 n_rows:i32 n_cols:i32 BLOCK_SIZE:constexpr",
    "layer_norm_fwd_fused": "X:*fp16 Y:*fp16 W:*fp16 B:*fp16 Mean:*fp32 Rstd:*fp32 stride:i32 "
                            "N:i32 eps:fp32 BLOCK_SIZE:constexpr",
    "layer_norm_bwd_dx_fused": "DX:*fp16 DY:*fp16 DW:*fp16 DB:*fp16 X:*fp16 W:*fp16 Mean:*fp32 "
                               "Rstd:*fp32 Lock:*i32 stride:i32 N:i32 GROUP_SIZE_M:constexpr "
                               "BLOCK_SIZE_N:constexpr",
    "layer_norm_bwd_dwdb": "DW:*fp16 DB:*fp16 FINAL_DW:*fp16 FINAL_DB:*fp16 M:i32 N:i32 "
                           "BLOCK_SIZE_M:constexpr BLOCK_SIZE_N:constexpr",
    "matmul_bias_relu_kernel": "a_ptr:*fp16 b_ptr:*fp16 bias_ptr:*fp32 c_ptr:*fp16 M:i32 N:i32 "
                               "K:i32 stride_am:i32 stride_ak:i32 stride_bk:i32 stride_bn:i32 "
                               "stride_cm:i32 stride_cn:i32 BLOCK_SIZE_M:constexpr "
                               "BLOCK_SIZE_N:constexpr BLOCK_SIZE_K:constexpr "
                               "GROUP_SIZE_M:constexpr FUSE_EPILOGUE:constexpr",
    "attn_fwd": "sm_scale:fp32 M:*fp32 Z:i32 H:i32 Q:*fp16 K:*fp16 V:*fp16 Out:*fp16 N_CTX:i32 "
                "HEAD_DIM:constexpr BLOCK_M:constexpr BLOCK_N:constexpr STAGE:constexpr",
    "rmsnorm_gate_up_kernel": "x_ptr:*fp16 norm_w_ptr:*fp16 g_ptr:*fp16 u_ptr:*fp16 h_ptr:*fp16 "
                              "M:i32 N:i32 K:i32 eps:fp32 BLOCK_M:constexpr BLOCK_N:constexpr "
                              "BLOCK_K:constexpr",
    "gate_up_silu_kernel": "a_ptr:*fp16 g_ptr:*fp16 u_ptr:*fp16 h_ptr:*fp16 M:i32 N:i32 K:i32 "
                           "BLOCK_M:constexpr BLOCK_N:constexpr BLOCK_K:constexpr",
    "grouped_matmul_kernel": "group_a_ptrs:*i64 group_b_ptrs:*i64 group_c_ptrs:*i64 "
                             "group_gemm_sizes:*i32 g_lds:*i32 group_size:i32 NUM_SM:constexpr "
                             "BLOCK_SIZE_M:constexpr BLOCK_SIZE_N:constexpr BLOCK_SIZE_K:constexpr",
    "matmul_kernel_persistent": "a_ptr:*fp16 b_ptr:*fp16 c_ptr:*fp16 M:i32 N:i32 K:i32 "
                                "stride_am:i32 stride_ak:i32 stride_bk:i32 stride_bn:i32 "
                                "stride_cm:i32 stride_cn:i32 BLOCK_SIZE_M:constexpr "
                                "BLOCK_SIZE_N:constexpr BLOCK_SIZE_K:constexpr "
                                "GROUP_SIZE_M:constexpr NUM_SMS:constexpr",
    "matmul_kernel_descriptor_persistent": "a_ptr:*fp16 b_ptr:*fp16 c_ptr:*fp16 M:i32 N:i32 K:i32 "
                                           "BLOCK_SIZE_M:constexpr BLOCK_SIZE_N:constexpr "
                                           "BLOCK_SIZE_K:constexpr GROUP_SIZE_M:constexpr "
                                           "NUM_SMS:constexpr",
}


def signature(kernel):
    return [tuple(p.split(":")) for p in SIGNATURES[kernel].split()]


def _gemm(m, n, k, w, s):
    return dict(kernel="matmul_bias_relu_kernel", example="02_fused_gemm_bias_relu",
                num_warps=w, num_stages=s,
                constexprs=dict(BLOCK_SIZE_M=m, BLOCK_SIZE_N=n, BLOCK_SIZE_K=k, GROUP_SIZE_M=8,
                                FUSE_EPILOGUE=True),
                args=dict(M=4096, N=4096, K=4096, stride_am=4096, stride_ak=1, stride_bk=4096,
                          stride_bn=1, stride_cm=4096, stride_cn=1),
                tritium=f"02.fused.matmul_bias_relu_kernel.BLOCK_SIZE_M{m}-BLOCK_SIZE_N{n}-"
                        f"BLOCK_SIZE_K{k}-GROUP_SIZE_M8-w{w}-s{s}")


def _attn(d, w):
    return dict(kernel="attn_fwd", example="08_fused_attention", num_warps=w, num_stages=3,
                constexprs=dict(HEAD_DIM=d, BLOCK_M=128, BLOCK_N=64, STAGE=1),  # 1: not causal
                args=dict(sm_scale=0.5, Z=4, H=32, N_CTX=4096),
                tritium=f"08.d{d}.attn_fwd.BLOCK_M128-BLOCK_N64-w{w}-s3")


def _llama(kernel, m, n, k, w, s, tokens):
    args = dict(M=tokens, N=11008, K=4096)
    if kernel == "rmsnorm_gate_up_kernel":
        args["eps"] = 1e-6
    phase = "decode" if tokens < 128 else "prefill"
    return dict(kernel=kernel, example="03_llama_mlp", num_warps=w, num_stages=s,
                constexprs=dict(BLOCK_M=m, BLOCK_N=n, BLOCK_K=k), args=args,
                tritium=f"03.{phase}.{kernel}.BLOCK_M{m}-BLOCK_N{n}-BLOCK_K{k}-w{w}-s{s}")


# Every case is a configuration the example's own autotuner (or fixed choice) offers on an AMD
# GPU at that shape, so that bench/amd/amd_kernels (which runs the examples' launch code on an
# offline GPU) compiles the same specialization; `tritium` is the stem of its files there.
# Stages: the example's (tritium::jit's default is 3 where an example sets none; loops without
# a dot do not pipeline either way).
CASES = {
    # 01: BLOCK 1024, the default 4 warps; n as the tutorial (98432).
    "vector_add_b1024_w4": dict(kernel="add_kernel", example="01_vector_add", num_warps=4,
                                num_stages=3, constexprs=dict(BLOCK_SIZE=1024),
                                args=dict(n_elements=98432), tritium="01.add_kernel"),
    # 04: 4096 x 1024 (BLOCK = next_pow2(n_cols)), default warps.
    "softmax_b1024_w4": dict(kernel="softmax_kernel", example="04_fused_softmax", num_warps=4,
                             num_stages=3, constexprs=dict(BLOCK_SIZE=1024),
                             args=dict(input_row_stride=1024, output_row_stride=1024,
                                       n_rows=4096, n_cols=1024),
                             tritium="04.softmax_kernel"),
    # 05: 4096 x 4096, BLOCK = next_pow2(N), default warps (05 sets none).
    "layer_norm_fwd_b4096_w4": dict(kernel="layer_norm_fwd_fused", example="05_layer_norm",
                                    num_warps=4, num_stages=3, constexprs=dict(BLOCK_SIZE=4096),
                                    args=dict(stride=4096, N=4096, eps=1e-5),
                                    tritium="05.layer_norm_fwd_fused"),
    # 07 at N = 4096: Config(N) gives BLOCK 4096, 8 warps, GROUP_SIZE_M 128; dwdb 32 x 128.
    "layer_norm_bwd_dx_b4096_w8": dict(kernel="layer_norm_bwd_dx_fused",
                                       example="07_layer_norm_backward", num_warps=8,
                                       num_stages=3,
                                       constexprs=dict(GROUP_SIZE_M=128, BLOCK_SIZE_N=4096),
                                       args=dict(stride=4096, N=4096),
                                       tritium="07.layer_norm_bwd_dx_fused"),
    "layer_norm_bwd_dwdb_32x128_w4": dict(kernel="layer_norm_bwd_dwdb",
                                          example="07_layer_norm_backward", num_warps=4,
                                          num_stages=3,
                                          constexprs=dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=128),
                                          args=dict(M=128, N=4096),
                                          tritium="07.layer_norm_bwd_dwdb"),
    # 02 at 4096^3: three of configs_for's tiles.
    "gemm_bias_relu_64x64x64_w4": _gemm(64, 64, 64, 4, 3),
    "gemm_bias_relu_128x128x64_w8": _gemm(128, 128, 64, 8, 4),
    "gemm_bias_relu_256x128x64_w8": _gemm(256, 128, 64, 8, 4),
    # 08: B4 H32 N_CTX 4096, not causal; configs_for's (128, 64, 8, 3) and (128, 64, 4, 3).
    "attn_fwd_d64_128x64_w4": _attn(64, 4),
    "attn_fwd_d64_128x64_w8": _attn(64, 8),
    "attn_fwd_d128_128x64_w4": _attn(128, 4),
    "attn_fwd_d128_128x64_w8": _attn(128, 8),
    # 03, hidden 4096 / intermediate 11008: decoding (16 tokens) takes rmsnorm_gate_up_kernel
    # with a 16-row tile of configs_for; a prefill (4096 tokens) runs gate_up_silu_kernel
    # (prefill_configs_for's first tile).
    "llama_decode_16x64x128_w4": _llama("rmsnorm_gate_up_kernel", 16, 64, 128, 4, 4, 16),
    "llama_prefill_128x128x64_w8": _llama("gate_up_silu_kernel", 128, 128, 64, 8, 3, 4096),
    # 10: tiles_for's 128x128x32, 4 warps; NUM_SM = MI300X's 304 CUs; 4 problems.
    "grouped_gemm_128x128x32_w4": dict(kernel="grouped_matmul_kernel", example="10_grouped_gemm",
                                       num_warps=4, num_stages=3,
                                       constexprs=dict(NUM_SM=304, BLOCK_SIZE_M=128,
                                                       BLOCK_SIZE_N=128, BLOCK_SIZE_K=32),
                                       args=dict(group_size=4),
                                       tritium="10.grouped_matmul_kernel"),
    # 11: config_for's 128x256x64, GROUP_SIZE_M 8, 8 warps, 3 stages; 8192 x 8192 x 512.
    "persistent_matmul_128x256x64_w8": dict(
        kernel="matmul_kernel_persistent", example="11_persistent_matmul", num_warps=8,
        num_stages=3, constexprs=dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64,
                                      GROUP_SIZE_M=8, NUM_SMS=304),
        args=dict(M=8192, N=8192, K=512, stride_am=512, stride_ak=1, stride_bk=8192, stride_bn=1,
                  stride_cm=8192, stride_cn=1),
        tritium="11.matmul_kernel_persistent"),
    "persistent_matmul_desc_128x256x64_w8": dict(
        kernel="matmul_kernel_descriptor_persistent", example="11_persistent_matmul",
        num_warps=8, num_stages=3,
        constexprs=dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8,
                        NUM_SMS=304),
        args=dict(M=8192, N=8192, K=512),
        tritium="11.matmul_kernel_descriptor_persistent"),
}

ARCHS = {"gfx942": 64, "gfx1100": 32}  # target: wave size
LDS_LIMIT = 65536  # LDS bytes a workgroup may have on both targets


def config_string(case):
    c = CASES[case]
    return " ".join(f"{k}={v}" for k, v in c["constexprs"].items())


def specialisation(case):
    """[(name, type, value, spec)] for every argument: spec 'const' (== 1), 'D', or ''."""
    c, out = CASES[case], []
    for name, ty in signature(c["kernel"]):
        if ty == "constexpr":
            out.append((name, ty, c["constexprs"][name], "const"))
        elif ty.startswith("*"):
            out.append((name, ty, None, "D"))
        elif ty == "i32":
            v = c["args"][name]
            out.append((name, ty, v, "const" if v == 1 else "D" if v % 16 == 0 else ""))
        else:
            out.append((name, ty, c["args"][name], ""))
    return out


# --- the ISA parser --------------------------------------------------------------------------
INSTR_RE = re.compile(r"^[ \t]+((?:[sv]_|buffer_|global_|ds_|flat_|scratch_)\w*|exp)(?=\s|$)(.*)$")
LABEL_RE = re.compile(r"^([.\w$]+):")
BRANCH_RE = re.compile(r"^[ \t]+(s_cbranch_\w+|s_branch)\s+([.\w$]+)")
DPP_RE = re.compile(r"\b(row_shr|row_shl|row_ror|row_mirror|row_half_mirror|row_bcast|"
                    r"row_newbcast|row_share|row_xmask|quad_perm|wave_shr|wave_shl|wave_ror|"
                    r"wave_rol|dpp8)\b")
MEM = r"(?:global|buffer|flat)"
COUNTS = [  # name, test on (opcode, operands)
    ("matrix", lambda o, a: re.match(r"v_(mfma|smfmac|wmma|swmmac)", o)),
    ("global_loads", lambda o, a: re.match(MEM + "_load", o)),
    ("global_stores", lambda o, a: re.match(MEM + "_store", o)),
    ("global_load_b128", lambda o, a: re.match(MEM + r"_load_(dwordx4|b128)$", o)),
    ("global_store_b128", lambda o, a: re.match(MEM + r"_store_(dwordx4|b128)$", o)),
    ("global_store_narrow", lambda o, a: re.match(MEM + r"_store_(short|byte|b16|b8|d16_hi_b)", o)),
    ("waitcnt", lambda o, a: re.match(r"s_wait(cnt|_)", o)),
    ("barrier", lambda o, a: o.startswith("s_barrier")),
    ("lds_reads", lambda o, a: re.match(r"ds_(read|load)", o)),
    ("lds_writes", lambda o, a: re.match(r"ds_(write|store)", o)),
    ("bpermute", lambda o, a: re.match(r"ds_(bpermute|permute|swizzle)", o)),
    ("dpp", lambda o, a: "_dpp" in o or o.startswith("v_permlane") or DPP_RE.search(a)),
]
BODY_FIELDS = ["instructions"] + [n for n, _ in COUNTS] + ["lds_read_hist", "lds_write_hist"]
STAT_FIELDS = (["instructions", "vgpr", "agpr", "sgpr", "scratch", "vgpr_spill", "lds",
                "lds_static"] + BODY_FIELDS[1:] + ["loops"] + ["loop_" + f for f in BODY_FIELDS])
ROW_FIELDS = ["case", "kernel", "config", "arch", "num_warps", "num_stages", "error"] + STAT_FIELDS


def _lds_width(op):
    key = re.sub(r"^ds_(read|load|write|store)_?", "", op)
    return key.replace("2addr_stride64_", "2st64_").replace("2addr_", "2_") or "?"


def body_stats(instrs):
    """Counts over [(opcode, operands)]."""
    out = {"instructions": len(instrs)}
    for name, test in COUNTS:
        out[name] = sum(1 for o, a in instrs if test(o, a))
    for field, pat in (("lds_read_hist", r"ds_(read|load)"), ("lds_write_hist", r"ds_(write|store)")):
        hist = {}
        for o, _ in instrs:
            if re.match(pat, o):
                hist[_lds_width(o)] = hist.get(_lds_width(o), 0) + 1
        out[field] = " ".join(f"{k}:{v}" for k, v in sorted(hist.items()))
    return out


def kernel_names(text):
    names = re.findall(r"^\s*\.amdhsa_kernel\s+(\S+)", text, re.M)
    if not names:
        names = [n for n in re.findall(r"^\s*\.globl\s+(\S+)", text, re.M)
                 if re.search(rf"^{re.escape(n)}:", text, re.M)]
    return list(dict.fromkeys(names))


def _yaml_kernels(text):
    """The amdhsa.kernels entries of the metadata: {name: {key: value}} (top-level keys only)."""
    m = re.search(r"^amdhsa\.kernels:[ \t]*$", text, re.M)
    out, cur, key_indent = {}, None, None
    if not m:
        return out
    for line in text[m.end():].splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():  # the next top-level key, or the end of the document
            break
        e = re.match(r"^(\s*)- (\.[\w-]+):\s*(.*)$", line)
        if e and (key_indent is None or len(e.group(1)) + 2 == key_indent):
            cur, key_indent = {}, len(e.group(1)) + 2
            cur[e.group(2)] = e.group(3).strip().strip("'\"")
            continue
        k = re.match(r"^(\s*)(\.[\w-]+):\s*(.*)$", line)
        if cur is not None and k and len(k.group(1)) == key_indent:
            cur[k.group(2)] = k.group(3).strip().strip("'\"")
            if k.group(2) == ".name":
                out[cur[".name"]] = cur
    return out


def _int(v):
    try:
        return int(str(v).strip(), 0)
    except (TypeError, ValueError):
        return None


def _blocks(lines):
    """Basic blocks of a function's lines: [(labels, [(opcode, operands)], succ labels, falls)]."""
    blocks = [([], [], [], True)]
    for line in lines:
        lm = LABEL_RE.match(line)
        if lm:
            if blocks[-1][0] or blocks[-1][1]:
                blocks.append(([], [], [], True))
            blocks[-1][0].append(lm.group(1))
            continue
        im = INSTR_RE.match(line)
        if not im:
            continue
        op = im.group(1)
        blocks[-1][1].append((op, im.group(2).split(";")[0]))
        bm = BRANCH_RE.match(line)
        if bm or op in ("s_endpgm", "s_setpc_b64", "s_endpgm_saved"):
            labels, body, succ, _ = blocks[-1]
            if bm:
                succ.append(bm.group(2))
            blocks[-1] = (labels, body, succ, op.startswith("s_cbranch"))
            blocks.append(([], [], [], True))
    return [b for i, b in enumerate(blocks) if b[0] or b[1] or i == 0]


def _loop_stats(lines):
    """Natural loops of the function's control-flow graph (a back edge goes to a block that
    dominates its source); the statistics of the largest innermost loop, prefixed loop_."""
    blocks = _blocks(lines)
    n = len(blocks)
    where = {lab: i for i, b in enumerate(blocks) for lab in b[0]}
    succ = [[where[s] for s in b[2] if s in where] + ([i + 1] if b[3] and i + 1 < n else [])
            for i, b in enumerate(blocks)]
    pred = [[] for _ in range(n)]
    for i, ss in enumerate(succ):
        for j in ss:
            pred[j].append(i)
    reach, todo = {0}, [0]  # dominators over the blocks reachable from the entry
    while todo:
        for j in succ[todo.pop()]:
            if j not in reach:
                reach.add(j)
                todo.append(j)
    dom = {i: set(reach) for i in reach}
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for i in sorted(reach - {0}):
            ps = [dom[p] for p in pred[i] if p in reach]
            new = {i} | (set.intersection(*ps) if ps else set())
            if new != dom[i]:
                dom[i], changed = new, True
    loops = {}  # header -> body blocks
    for u in reach:
        for h in succ[u]:
            if h in dom[u]:
                body, todo = loops.setdefault(h, {h}), [u]
                while todo:
                    b = todo.pop()
                    if b not in body:
                        body.add(b)
                        todo.extend(p for p in pred[b] if p in reach)
    inner = [b for h, b in loops.items() if not any(o != h and o in b for o in loops)]
    out = {"loops": len(loops)}
    if inner:
        best = max((sum((blocks[i][1] for i in sorted(b)), []) for b in inner), key=len)
        out.update({"loop_" + k: v for k, v in body_stats(best).items()})
    return out


def isa_stats(text, name):
    """The statistics of kernel `name` in AMDGCN text (raises KeyError if it is not there)."""
    start = re.search(rf"^{re.escape(name)}:", text, re.M)
    if not start:
        raise KeyError(name)
    end = re.compile(r"^\.Lfunc_end\d+:", re.M).search(text, start.end())
    body_end = end.start() if end else len(text)
    # The text after the function up to the next kernel: LLVM's "; Kernel info" comments.
    nxt = [m.start() for n in kernel_names(text) if n != name
           for m in [re.search(rf"^{re.escape(n)}:", text, re.M)] if m and m.start() > body_end]
    tail = text[body_end:min(nxt) if nxt else len(text)]
    lines = text[start.end():body_end].splitlines()

    instrs = [(im.group(1), im.group(2).split(";")[0]) for im in map(INSTR_RE.match, lines) if im]
    out = body_stats(instrs)
    out.update(_loop_stats(lines))
    # Resources: the metadata (both compilers emit it), then LLVM's comments and directives.
    meta = _yaml_kernels(text).get(name, {})
    desc = re.search(rf"^\s*\.amdhsa_kernel\s+{re.escape(name)}\s*$(.*?)^\s*\.end_amdhsa_kernel",
                     text, re.M | re.S)
    desc = desc.group(1) if desc else ""

    def comment(key):
        m = re.search(rf"^;\s*{key}:\s*(\d+)", tail, re.M)
        return int(m.group(1)) if m else None

    def directive(key):
        m = re.search(rf"^\s*\.amdhsa_{key}\s+(\S+)\s*$", desc, re.M)
        return _int(m.group(1)) if m else None

    def setsym(key):
        m = re.search(rf"^\s*\.set\s+{re.escape(name)}\.{key},\s*(\S+)\s*$", text, re.M)
        return _int(m.group(1)) if m else None

    def first(*vals):
        return next((v for v in vals if v is not None), None)

    agpr = first(_int(meta.get(".agpr_count")), comment("NumAgprs"), setsym("num_agpr"),
                 0 if meta else None)  # the metadata of targets without AGPRs has no count
    arch_vgpr = first(comment("NumVgprs"), setsym("num_vgpr"))
    out["vgpr"] = first(_int(meta.get(".vgpr_count")), comment("TotalNumVgprs"),
                        None if arch_vgpr is None else arch_vgpr + (agpr or 0),
                        directive("next_free_vgpr"))
    out["agpr"] = agpr
    out["sgpr"] = first(_int(meta.get(".sgpr_count")), comment("TotalNumSgprs"),
                        comment("NumSgprs"), directive("next_free_sgpr"))
    out["scratch"] = first(_int(meta.get(".private_segment_fixed_size")), comment("ScratchSize"),
                           directive("private_segment_fixed_size"), setsym("private_seg_size"))
    out["vgpr_spill"] = _int(meta.get(".vgpr_spill_count"))
    out["lds_static"] = first(_int(meta.get(".group_segment_fixed_size")),
                              directive("group_segment_fixed_size"), comment("LDSByteSize"))
    return out


def stats_row(case, kernel, arch, text, shared=None, error="", num_warps=None, num_stages=None):
    """A CSV row: the case's identity, then the statistics of `kernel` in `text`."""
    c = CASES.get(case, {})
    row = dict(case=case, kernel=kernel, config=config_string(case) if c else "", arch=arch,
               num_warps=num_warps if num_warps is not None else c.get("num_warps", ""),
               num_stages=num_stages if num_stages is not None else c.get("num_stages", ""),
               error=error)
    if text is None or error:
        return row
    names = kernel_names(text)
    if kernel not in names and len(names) == 1:
        kernel = row["kernel"] = names[0]
    try:
        st = isa_stats(text, kernel)
    except KeyError:
        row["error"] = f"kernel {kernel} not in the text (has: {' '.join(names) or 'none'})"
        return row
    # LDS: the static segment plus the dynamic bytes the launch asks for (Triton's
    # metadata.shared; tritium's shared_bytes): both compilers allocate LDS dynamically.
    st["lds"] = (st["lds_static"] or 0) + (shared or 0) if (
        st["lds_static"] is not None or shared is not None) else None
    row.update(st)
    return row


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=ROW_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in ROW_FIELDS})
    w = csv.DictWriter(sys.stdout, fieldnames=ROW_FIELDS, extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in ROW_FIELDS})


def read_csv(path):
    with open(path, newline="") as f:
        return {(r["case"], r["arch"]): r for r in csv.DictReader(f)}


# --- Triton's twins ----------------------------------------------------------------------------
# Each mirrors the example's kernel line by line. They are plain functions until load_twins()
# imports triton and wraps them in triton.jit (so this file imports without triton).
TWINS = {}


def _jit(fn):
    TWINS[fn.__name__] = fn
    return fn


@_jit  # examples/01_vector_add.cpp
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


@_jit  # examples/04_fused_softmax.cpp
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, 0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, 0)
        softmax_output = numerator / denominator
        output_ptrs = output_ptr + row_idx * output_row_stride + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


@_jit  # examples/05_layer_norm.cpp
def layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in tl.range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, 0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in tl.range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        _var += x * x
    var = tl.sum(_var, 0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in tl.range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask).to(tl.float32)
        b = tl.load(B + cols, mask=mask).to(tl.float32)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@_jit  # examples/07_layer_norm_backward.cpp
def layer_norm_bwd_dx_fused(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
                            GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DWp = DW + lock_id * N + cols
    DBp = DB + lock_id * N + cols
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.0)
    wdy = tl.where(mask, wdy, 0.0)
    c1 = tl.sum(xhat * wdy, 0) / N
    c2 = tl.sum(wdy, 0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx, mask=mask)
    partial_dw = (dy * xhat).to(tl.float16)
    partial_db = dy.to(tl.float16)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DWp, mask=mask)
        partial_db += tl.load(DBp, mask=mask)
    tl.store(DWp, partial_dw, mask=mask)
    tl.store(DBp, partial_db, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@_jit  # examples/07_layer_norm_backward.cpp
def layer_norm_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_SIZE_M: tl.constexpr,
                        BLOCK_SIZE_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in tl.range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.0)
        db += tl.load(DB + offs, mask=mask, other=0.0)
    sum_dw = tl.sum(dw, 0)
    sum_db = tl.sum(db, 0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


@_jit  # examples/02_fused_gemm_bias_relu.cpp
def matmul_bias_relu_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, stride_am, stride_ak,
                            stride_bk, stride_bn, stride_cm, stride_cn,
                            BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                            BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                            FUSE_EPILOGUE: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        k_remaining = K - k * BLOCK_SIZE_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_remaining, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_remaining, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if FUSE_EPILOGUE:
        bias = tl.load(bias_ptr + offs_bn)
        accumulator = tl.maximum(accumulator + bias[None, :], 0.0)
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@_jit  # examples/attention_forward.hpp (Triton's tutorial 06 with in-kernel descriptors)
def attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, qk_scale,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr,
                   offs_m, offs_n, N_CTX):
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    offsetk_y = offset_y + lo
    offsetv_y = offset_y + lo
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.trans(desc_k.load([offsetk_y, 0]))
        qk = tl.dot(q, k)
        if STAGE == 2:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(mask, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.exp2(qk)
        alpha = tl.exp2(m_i - m_ij)
        l_ij = tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([offsetv_y, 0])
        acc = tl.dot(p.to(tl.float16), v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
        offsetk_y += BLOCK_N
        offsetv_y += BLOCK_N
    return acc, l_i, m_i


@_jit  # examples/attention_forward.hpp
def attn_fwd(sm_scale, M, Z, H, Q, K, V, Out, N_CTX, HEAD_DIM: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr):
    tl.static_assert(BLOCK_N <= HEAD_DIM, "BLOCK_N must not exceed HEAD_DIM")
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    y_dim = Z * H * N_CTX
    desc_q = tl.make_tensor_descriptor(Q, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(V, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(Out, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    offset_y = off_z * (N_CTX * H) + off_h * N_CTX
    qo_offset_y = offset_y + start_m * BLOCK_M
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504
    q = desc_q.load([qo_offset_y, 0])
    if STAGE & 1:
        acc, l_i, m_i = attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m,
                                       qk_scale, BLOCK_M, BLOCK_N, 4 - STAGE, offs_m, offs_n,
                                       N_CTX)
    if STAGE & 2:
        acc, l_i, m_i = attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m,
                                       qk_scale, BLOCK_M, BLOCK_N, 2, offs_m, offs_n, N_CTX)
    m_i += tl.log2(l_i)
    acc = acc / l_i[:, None]
    m_ptrs = M + off_hz * N_CTX + offs_m
    tl.store(m_ptrs, m_i)
    desc_o.store([qo_offset_y, 0], acc.to(tl.float16))


@_jit  # examples/03_llama_mlp.cpp, step 3
def rmsnorm_gate_up_kernel(x_ptr, norm_w_ptr, g_ptr, u_ptr, h_ptr, M, N, K, eps,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m, pid_n = tl.swizzle2d(tl.program_id(1), tl.program_id(0), tl.cdiv(M, BLOCK_M),
                                tl.cdiv(N, BLOCK_N), 8)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m[:, None] < M
    n_mask = offs_n[None, :] < N
    sum_sq = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    x_ptrs = x_ptr + (offs_m % M)[:, None] * K + offs_k[None, :]
    w_ptrs = norm_w_ptr + offs_k
    b_offs = offs_k[:, None] * N + (offs_n % N)[None, :]
    g_ptrs = g_ptr + b_offs
    u_ptrs = u_ptr + b_offs
    for k in tl.range(0, tl.cdiv(K, BLOCK_K)):
        k_mask = offs_k < K - k * BLOCK_K
        x = tl.load(x_ptrs, mask=k_mask[None, :], other=0.0).to(tl.float32)
        sum_sq += tl.sum(x * x, 1)
        w = tl.load(w_ptrs, mask=k_mask, other=0.0).to(tl.float32)
        xw = (x * w[None, :]).to(tl.float16)
        acc_g = tl.dot(xw, tl.load(g_ptrs, mask=k_mask[:, None], other=0.0), acc_g)
        acc_u = tl.dot(xw, tl.load(u_ptrs, mask=k_mask[:, None], other=0.0), acc_u)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
        g_ptrs += BLOCK_K * N
        u_ptrs += BLOCK_K * N
    rstd = tl.rsqrt(sum_sq / K + eps)[:, None]
    acc_g = acc_g * rstd
    acc_u = acc_u * rstd
    h = acc_g * tl.sigmoid(acc_g) * acc_u
    tl.store(h_ptr + offs_m[:, None] * N + offs_n[None, :], h.to(tl.float16), mask=m_mask & n_mask)


@_jit  # examples/03_llama_mlp.cpp, step 4
def gate_up_silu_kernel(a_ptr, g_ptr, u_ptr, h_ptr, M, N, K, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m, pid_n = tl.swizzle2d(tl.program_id(1), tl.program_id(0), tl.cdiv(M, BLOCK_M),
                                tl.cdiv(N, BLOCK_N), 8)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1],
                                       block_shape=[BLOCK_M, BLOCK_K])
    g_desc = tl.make_tensor_descriptor(g_ptr, shape=[K, N], strides=[N, 1],
                                       block_shape=[BLOCK_K, BLOCK_N])
    u_desc = tl.make_tensor_descriptor(u_ptr, shape=[K, N], strides=[N, 1],
                                       block_shape=[BLOCK_K, BLOCK_N])
    h_desc = tl.make_tensor_descriptor(h_ptr, shape=[M, N], strides=[N, 1],
                                       block_shape=[BLOCK_M, BLOCK_N])
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        acc_g = tl.dot(a, g_desc.load([k * BLOCK_K, pid_n * BLOCK_N]), acc_g)
        acc_u = tl.dot(a, u_desc.load([k * BLOCK_K, pid_n * BLOCK_N]), acc_u)
    h_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], (acc_g * tl.sigmoid(acc_g) * acc_u).to(tl.float16))


@_jit  # examples/10_grouped_gemm.cpp
def grouped_matmul_kernel(group_a_ptrs, group_b_ptrs, group_c_ptrs, group_gemm_sizes, g_lds,
                          group_size, NUM_SM: tl.constexpr, BLOCK_SIZE_M: tl.constexpr,
                          BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    tile_idx = tl.program_id(0)
    last_problem_end = 0
    for g in tl.range(0, group_size):
        gm = tl.load(group_gemm_sizes + g * 3)
        gn = tl.load(group_gemm_sizes + g * 3 + 1)
        gk = tl.load(group_gemm_sizes + g * 3 + 2)
        num_m_tiles = tl.cdiv(gm, BLOCK_SIZE_M)
        num_n_tiles = tl.cdiv(gn, BLOCK_SIZE_N)
        num_tiles = num_m_tiles * num_n_tiles
        while (tile_idx >= last_problem_end and tile_idx < last_problem_end + num_tiles):
            k = gk
            lda = tl.load(g_lds + g * 3)
            ldb = tl.load(g_lds + g * 3 + 1)
            ldc = tl.load(g_lds + g * 3 + 2)
            a_ptr = tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(group_b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(group_c_ptrs + g).to(tl.pointer_type(tl.float16))
            tile_idx_in_gemm = tile_idx - last_problem_end
            tile_m_idx = tile_idx_in_gemm // num_n_tiles
            tile_n_idx = tile_idx_in_gemm % num_n_tiles
            offs_am = tile_m_idx * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_bn = tile_n_idx * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            offs_k = tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + offs_am[:, None] * lda + offs_k[None, :]
            b_ptrs = b_ptr + offs_k[:, None] * ldb + offs_bn[None, :]
            accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
            for kk in tl.range(0, tl.cdiv(k, BLOCK_SIZE_K)):
                a_ptrs = tl.multiple_of(a_ptrs, [16, 16])
                b_ptrs = tl.multiple_of(b_ptrs, [16, 16])
                a = tl.load(a_ptrs)
                b = tl.load(b_ptrs)
                accumulator = tl.dot(a, b, accumulator)
                a_ptrs += BLOCK_SIZE_K
                b_ptrs += BLOCK_SIZE_K * ldb
            c = accumulator.to(tl.float16)
            offs_cm = tile_m_idx * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_cn = tile_n_idx * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            c_ptrs = c_ptr + ldc * offs_cm[:, None] + offs_cn[None, :]
            tl.store(c_ptrs, c)
            tile_idx += NUM_SM
        last_problem_end = last_problem_end + num_tiles


@_jit  # examples/11_persistent_matmul.cpp
def compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M: tl.constexpr):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@_jit  # examples/11_persistent_matmul.cpp
def matmul_kernel_persistent(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                             stride_bn, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                             BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                             GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr):
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    offs_k_for_mask = tl.arange(0, BLOCK_SIZE_K)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        start_m = pid_m * BLOCK_SIZE_M
        start_n = pid_n * BLOCK_SIZE_N
        offs_am = start_m + tl.arange(0, BLOCK_SIZE_M)
        offs_bn = start_n + tl.arange(0, BLOCK_SIZE_N)
        offs_am = tl.where(offs_am < M, offs_am, 0)
        offs_bn = tl.where(offs_bn < N, offs_bn, 0)
        offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
        offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in tl.range(0, k_tiles):
            offs_k = ki * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
            b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
            a = tl.load(a_ptrs, mask=offs_k_for_mask[None, :] < K - ki * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k_for_mask[:, None] < K - ki * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, accumulator.to(tl.float16), mask=c_mask)


@_jit  # examples/11_persistent_matmul.cpp
def matmul_kernel_descriptor_persistent(a_ptr, b_ptr, c_ptr, M, N, K,
                                        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                                        BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                                        NUM_SMS: tl.constexpr):
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1],
                                       block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1],
                                       block_shape=[BLOCK_SIZE_N, BLOCK_SIZE_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1],
                                       block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_N])
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in tl.range(0, k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, tl.trans(b), accumulator)
        c_desc.store([offs_am, offs_bn], accumulator.to(tl.float16))


def load_twins():
    """Imports triton and replaces each twin, in this module, by triton.jit of it."""
    global triton, tl
    import triton as _triton
    import triton.language as _tl
    if triton is None:
        triton, tl = _triton, _tl
        g = globals()
        for name, fn in TWINS.items():
            g[name] = _triton.jit(fn)
    return {name: globals()[name] for name in TWINS}


def _buffer_ops_knob():
    for path in ("knobs", "config"):  # Triton 3.4+ knobs.amd, 3.3 config.amd
        try:
            return bool(getattr(getattr(__import__(f"triton.{path}", fromlist=["amd"]), "amd"),
                                "use_buffer_ops"))
        except Exception:  # noqa: BLE001
            continue
    return os.environ.get("AMDGCN_USE_BUFFER_OPS", "0") == "1"


def compile_case(case, arch, pointer_range, num_stages=None):
    """(amdgcn text, kernel name, LDS bytes of the launch) of Triton's twin of `case`."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    twins = load_twins()
    c = CASES[case]
    fn = twins[c["kernel"]]
    target = GPUTarget("hip", arch, ARCHS[arch])
    try:
        from triton.compiler.compiler import make_backend
        parse_attr = make_backend(target).parse_attr
    except Exception:  # noqa: BLE001
        parse_attr = lambda d: [["tt.divisibility", 16]] * ("D" in d) + [["tt.pointer_range", 32]] * ("S" in d)  # noqa: E731
    sig, consts, attrs = {}, {}, {}
    for i, (name, ty, value, spec) in enumerate(specialisation(case)):
        if spec == "const":
            sig[name], consts[name] = "constexpr", value
            continue
        sig[name] = ty
        desc = spec + ("S" if ty.startswith("*") and pointer_range else "")
        if desc and parse_attr(desc):
            attrs[(i, )] = parse_attr(desc)
    names = [n for n, _ in signature(c["kernel"])]
    src, err = None, None
    # The constexpr key changed between Triton releases: names, then index tuples.
    for keyed in (consts, {(names.index(k), ): v for k, v in consts.items()}):
        try:
            src = ASTSource(fn=fn, signature=sig, constexprs=keyed, attrs=attrs)
            break
        except Exception as e:  # noqa: BLE001
            err = e
    if src is None:
        raise RuntimeError(f"cannot build the ASTSource for this Triton version: {err!r}")
    k = triton.compile(src, target=target,
                       options={"num_warps": c["num_warps"],
                                "num_stages": num_stages or c["num_stages"]})
    name = getattr(k.metadata, "name", None) or getattr(k, "name", None) or c["kernel"]
    return k.asm["amdgcn"], name, getattr(k.metadata, "shared", None)


# --- the modes -----------------------------------------------------------------------------------
def _selected(args):
    cases = list(CASES)
    if args.only:
        pats = [p for o in args.only for p in o.split(",") if p]
        cases = [c for c in cases
                 if any(fnmatch.fnmatch(c, p) or fnmatch.fnmatch(CASES[c]["kernel"], p) for p in pats)]
    return cases


def _one_line(e):
    return re.sub(r"\s+", " ", f"{type(e).__name__}: {e}").strip()[:400]


def mode_triton(args):
    try:
        load_twins()
    except Exception as e:  # noqa: BLE001
        print(f"error: cannot import triton: {_one_line(e)}", file=sys.stderr)
        return 2
    pointer_range = {"on": True, "off": False}.get(args.pointer_range) if args.pointer_range != "auto" \
        else _buffer_ops_knob()
    print(f"# triton {getattr(triton, '__version__', '?')}, pointer_range 32 on pointers: "
          f"{'on' if pointer_range else 'off'}", file=sys.stderr)
    rows = []
    for case in _selected(args):
        for arch in args.archs.split(","):
            c = CASES[case]
            try:
                stages = c["num_stages"]
                text, name, shared = compile_case(case, arch, pointer_range, stages)
                # A pipeline whose LDS no workgroup gets would not launch (HIP's OutOfResources;
                # Triton's autotuner prunes it): the peer is the config with fewer stages.
                while not args.no_fit_lds and (shared or 0) > LDS_LIMIT and stages > 1:
                    stages -= 1
                    text, name, shared = compile_case(case, arch, pointer_range, stages)
                row = stats_row(case, name, arch, text, shared=shared, num_stages=stages)
                if args.asm_dir:
                    d = Path(args.asm_dir) / arch
                    d.mkdir(parents=True, exist_ok=True)
                    (d / f"{case}.amdgcn").write_text(text)
                    (d / f"{case}.json").write_text(json.dumps(
                        dict(shared_bytes=shared, kernel=name, num_warps=c["num_warps"],
                             num_stages=stages)) + "\n")
            except Exception as e:  # noqa: BLE001
                row = stats_row(case, c["kernel"], arch, None, error=_one_line(e))
            print(f"# {case} {arch}: {row['error'] or 'ok'}", file=sys.stderr, flush=True)
            rows.append(row)
    write_csv(rows, args.out)
    return 0


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
        for case in CASES:
            stem = CASES.get(case, {}).get("tritium", case)
            if not (d / f"{stem}.amdgcn").is_file() and (d / f"{case}.amdgcn").is_file():
                stem = case  # dumped under the case's own name
            asm, side = d / f"{stem}.amdgcn", d / f"{stem}.json"
            meta = {}
            if side.is_file():
                try:
                    meta = json.loads(side.read_text())
                except ValueError as e:
                    meta = {"error": f"bad {side.name}: {e}"}
            # tritium's --dump writes {"name", "num_threads", "shared_bytes", ...}
            kernel = meta.get("kernel") or meta.get("name") or CASES.get(case, {}).get("kernel", case)
            warps = meta.get("num_warps")
            if warps is None and _int(meta.get("num_threads")) and arch in ARCHS:
                warps = _int(meta.get("num_threads")) // ARCHS[arch]
            error = meta.get("error") or ("" if asm.is_file() else f"no {arch}/{stem}.amdgcn")
            text = asm.read_text(errors="replace") if asm.is_file() else None
            rows.append(stats_row(case, kernel, arch, text, shared=_int(meta.get("shared_bytes")),
                                  error=error, num_warps=warps, num_stages=meta.get("num_stages")))
    write_csv(rows, args.out)
    return 0


# (column title, CSV field) of the comparison table
SHOWN = [("instr", "instructions"), ("vgpr", "vgpr"), ("agpr", "agpr"), ("sgpr", "sgpr"),
         ("scratch", "scratch"), ("lds", "lds"), ("mma", "matrix"), ("ld128", "global_load_b128"),
         ("st128", "global_store_b128"), ("st_narrow", "global_store_narrow"),
         ("waitcnt", "waitcnt"), ("ds_rd", "lds_reads"), ("ds_wr", "lds_writes"),
         ("bperm", "bpermute"), ("dpp", "dpp"), ("loop_instr", "loop_instructions"),
         ("loop_mma", "loop_matrix"), ("loop_wait", "loop_waitcnt"), ("loop_ds_rd", "loop_lds_reads"),
         ("loop_ds_wr", "loop_lds_writes"), ("loop_ld128", "loop_global_load_b128")]


def _num(row, field):
    return None if row is None else _int(row.get(field, ""))


def judge(t, T, margins):
    """[(metric, why)] where tritium's row t is worse than Triton's T."""
    if T is None or T.get("error"):
        return []  # nothing to match
    if t is None or t.get("error"):
        return [("error", (t or {}).get("error") or "no tritium row")]
    out = []

    def worse(metric, margin):
        a, b = _num(t, metric), _num(T, metric)
        if a is not None and b is not None and a > b * (1 + margin):
            out.append((metric, f"{a} > {b}" + (f" x {1 + margin:g}" if margin else "")))

    worse("vgpr", margins["vgpr"])
    a, b = _num(t, "scratch"), _num(T, "scratch")
    if a is not None and b is not None and a > b:
        out.append(("scratch", f"{a} > {b}"))
    worse("lds", margins["lds"])
    if (_num(t, "loop_instructions") or 0) and (_num(T, "loop_instructions") or 0):
        worse("loop_instructions", margins["instructions"])
    if margins["total"] is not None:
        worse("instructions", margins["total"])
    return out


def mode_compare(args):
    tt, TT = read_csv(args.tritium), read_csv(args.triton)
    record = read_csv(args.ratchet) if args.ratchet else None
    margins = dict(vgpr=args.margin_vgpr, lds=args.margin_lds, instructions=args.margin_instructions,
                   total=args.margin_total)
    allow = []
    for a in args.allow or []:
        for spec in a.split(","):
            if ":" not in spec:
                print(f"error: --allow {spec}: expected CASE:METRIC", file=sys.stderr)
                return 2
            allow.append(tuple(spec.rsplit(":", 1)))
    order = {c: i for i, c in enumerate(CASES)}
    arch_order = {a: i for i, a in enumerate(ARCHS)}
    keys = sorted(set(tt) | set(TT),
                  key=lambda k: (order.get(k[0], len(order)), k[0], arch_order.get(k[1], 9), k[1]))
    header = ["case", "arch"] + [h for h, _ in SHOWN] + ["status"]
    table, failures, allowed, notes = [], [], [], []
    for case, arch in keys:
        t, T = tt.get((case, arch)), TT.get((case, arch))
        cells = [case, arch]
        for _, field in SHOWN:
            a = "-" if t is None or t.get("error") else (t.get(field) or ".")
            b = "-" if T is None or T.get("error") else (T.get(field) or ".")
            cells.append(f"{a}/{b}")
        status = []
        for metric, why in judge(t, T, margins):
            ok = any((fnmatch.fnmatch(case, p) or fnmatch.fnmatch(f"{case}@{arch}", p))
                     and fnmatch.fnmatch(metric, m) for p, m in allow)
            # --ratchet: a known gap (the record has it) passes while tritium is no worse than
            # its record; a new gap, or a known one grown, fails.
            rec = record.get((case, arch)) if record else None
            if not ok and rec is not None and metric != "error" and t is not None:
                now, was = _num(t, metric), _num(rec, metric)
                slack = 1 + (args.ratchet_margin if metric.endswith("instructions") else 0)
                if now is not None and was is not None and now <= was * slack:
                    ok = True
                    why += f" (known gap: record {was})"
                elif was is not None:
                    why += f" (worse than the record, {was})"
            (allowed if ok else failures).append(f"{case}@{arch} {metric}: {why}")
            status.append(f"{'allowed' if ok else 'WORSE'} {metric}")
        if T is None or T.get("error"):
            status.append("no triton" if T is None else "triton failed")
            if T is not None:
                notes.append(f"{case}@{arch} triton: {T['error']}")
        for who, row in (("tritium", t), ("triton", T)):
            if row is not None and not row.get("error") and (_num(row, "lds") or 0) > LDS_LIMIT:
                notes.append(f"{case}@{arch} {who} LDS {_num(row, 'lds')} B > {LDS_LIMIT} B: "
                             "more than a workgroup gets, it would not launch")
        if t is not None and T is not None:
            for f in ("num_warps", "num_stages", "config"):
                if str(t.get(f, "")) and str(T.get(f, "")) and str(t.get(f)) != str(T.get(f)):
                    notes.append(f"{case}@{arch} {f} differs: tritium {t.get(f)}, triton {T.get(f)}")
        cells.append(", ".join(status) or "ok")
        table.append(cells)
    widths = [max(len(r[i]) for r in [header] + table) for i in range(len(header))]
    print("tritium/Triton per metric (-: no code, .: none, e.g. no loop)")
    for r in [header] + table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    for n in notes:
        print(f"note: {n}")
    for a in allowed:
        print(f"allowed: {a}")
    for f in failures:
        print(f"WORSE: {f}")
    print(f"{len(keys)} rows, {len(failures)} worse than Triton beyond the margins, "
          f"{len(allowed)} allowed")
    if args.markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in table]
        lines += ["", "Cells are tritium/Triton; `-`: no code (see the notes), `.`: none (no loop). "
                  "Worse: VGPR, LDS "
                  f"above Triton's (margins {args.margin_vgpr:g}, {args.margin_lds:g}), scratch "
                  f"above Triton's, loop instructions above {1 + args.margin_instructions:g} x "
                  "Triton's, or no code."]
        lines += [""] + [f"- note: {n}" for n in notes] + [f"- allowed: {a}" for a in allowed] + \
            [f"- worse: {f}" for f in failures]
        Path(args.markdown).write_text("\n".join(lines).rstrip() + "\n")
    return 1 if failures else 0


def mode_cases(args):
    out = []
    for case, c in CASES.items():
        out.append(dict(case=case, kernel=c["kernel"], example=f"examples/{c['example']}.cpp",
                        num_warps=c["num_warps"], num_stages=c["num_stages"],
                        constexprs=c["constexprs"], args=c["args"],
                        signature=[dict(name=n, type=t, spec=s)
                                   for n, t, _, s in specialisation(case)],
                        dumps=[f"{a}/{case}.amdgcn" for a in ARCHS]))
    print(json.dumps(out, indent=1))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("triton", help="compile Triton's twins and write their statistics")
    p.add_argument("--out", required=True)
    p.add_argument("--archs", default=",".join(ARCHS))
    p.add_argument("--only", nargs="+", metavar="NAME", help="cases or kernels (globs)")
    p.add_argument("--asm-dir", help="also write DIR/<arch>/<case>.amdgcn and .json")
    p.add_argument("--pointer-range", choices=["auto", "on", "off"], default="auto")
    p.add_argument("--no-fit-lds", action="store_true",
                   help="keep the twin's num_stages where the kernel's LDS exceeds 64 KiB "
                        "(by default a stage is dropped until it fits, as a launch needs)")
    p = sub.add_parser("tritium", help="parse tritium's dumps and write their statistics")
    p.add_argument("--dir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--archs", help="default: the arch folders present")
    p = sub.add_parser("compare", help="tritium against Triton")
    p.add_argument("--triton", required=True)
    p.add_argument("--tritium", required=True)
    p.add_argument("--margin-instructions", type=float, default=0.10,
                   help="loop instructions may exceed Triton's by this fraction")
    p.add_argument("--margin-vgpr", type=float, default=0.0)
    p.add_argument("--margin-lds", type=float, default=0.0)
    p.add_argument("--margin-total", type=float, default=None,
                   help="also gate the kernel's instruction count (off by default)")
    p.add_argument("--allow", action="append", metavar="CASE:METRIC")
    p.add_argument("--ratchet", metavar="TRITIUM_CSV",
                   help="tritium's recorded statistics: where tritium is worse than Triton, pass "
                        "only while no worse than this record (known gaps); update the record "
                        "with a tritium CSV when a change closes a gap")
    p.add_argument("--ratchet-margin", type=float, default=0.02,
                   help="instruction counts may exceed the record by this fraction")
    p.add_argument("--markdown")
    sub.add_parser("cases", help="print CASES as JSON")
    args = ap.parse_args(argv)
    if args.mode == "triton":
        for a in args.archs.split(","):
            if a not in ARCHS:
                ap.error(f"unknown arch {a} (known: {', '.join(ARCHS)})")
    return {"triton": mode_triton, "tritium": mode_tritium, "compare": mode_compare,
            "cases": mode_cases}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
