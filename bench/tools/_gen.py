"""Writes bench/ops/<op>/{fp32,bf16}.{cu,task.yaml}, op.yaml and README.md from the operator tables.

Each operator is written once, over a storage type `T` (float or __nv_bfloat16) with FP32 math
through `ld()` / `st()`; this module renders it twice. The rendered files are the suite (checked in,
self-contained: the harness copies a kernel alone into its cache, so no shared #include).
Run `python bench/tools/generate.py` after editing an operator; tests check the files are current.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent          # bench/
L2_BYTES = 60 * 1024 * 1024                             # H200 L2 (the DRAM-bound size must exceed it)
LAUNCH_BOUND_BYTES = 1 << 20

DTYPES = {"fp32": {"T": "float", "spec": "f32", "E": 4},
          "bf16": {"T": "__nv_bfloat16", "spec": "bf16", "E": 2}}

TOLERANCE = {"fp32": {"rtol": 1e-4, "atol_scale": 1e-5},
             "bf16": {"rtol": 2e-2, "atol_scale": 1e-2}}

PRESET_NAMES = ("xs", "s", "m", "l", "xl")

PRELUDE = {
    "fp32": """\
typedef float T;                       // storage type of this variant; math is FP32 throughout
__device__ __forceinline__ float ld(float v) { return v; }
__device__ __forceinline__ float st(float v) { return v; }
""",
    "bf16": """\
typedef __nv_bfloat16 T;               // storage type of this variant; math is FP32 throughout
__device__ __forceinline__ float ld(float v) { return v; }
__device__ __forceinline__ float ld(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ __nv_bfloat16 st(float v) { return __float2bfloat16_rn(v); }
""",
}

REDUCE = """\
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
  return v;
}

// Sum over the block, returned to every thread (blockDim.x a multiple of 32, at most 1024).
__device__ float block_sum(float v) {
  __shared__ float part[32];
  __shared__ float total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = warp_sum(v);
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float t = lane < nwarps ? part[lane] : 0.f;
    t = warp_sum(t);
    if (lane == 0) total = t;
  }
  __syncthreads();
  const float r = total;
  __syncthreads();                     // part/total are reused by the next call
  return r;
}

__device__ float block_max(float v) {
  __shared__ float part[32];
  __shared__ float total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = warp_max(v);
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float t = lane < nwarps ? part[lane] : -INFINITY;
    t = warp_max(t);
    if (lane == 0) total = t;
  }
  __syncthreads();
  const float r = total;
  __syncthreads();
  return r;
}
"""

PARTIALS = """\
#define MAX_PARTIALS 1024              // size of the `partial` scratch argument

// Second pass of a two-pass (deterministic) reduction: out[0] = scale * sum(partial[0..count)).
__global__ void __launch_bounds__(1024) sum_partials_kernel(const float* __restrict__ partial, int count,
                                                            float scale, float* __restrict__ out) {
  float s = 0.f;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  s = block_sum(s);
  if (threadIdx.x == 0) out[0] = s * scale;
}

inline int partial_blocks(int n, int threads) {
  const int blocks = (n + threads - 1) / threads;
  return blocks < MAX_PARTIALS ? (blocks > 0 ? blocks : 1) : MAX_PARTIALS;
}
"""


def U(low, high):
    return {"dist": "uniform", "low": low, "high": high}


def N(mean=0, std=1):
    return {"dist": "normal", "mean": mean, "std": std}


def RI(low, high):
    return {"dist": "randint", "low": low, "high": high}


@dataclass
class Arg:
    name: str
    dtype: str                  # "T" (the variant's storage type) or a spec dtype
    shape: list | None = None
    role: str | None = None
    init: dict | None = None
    value: object = None
    description: str | None = None


def A(name, dtype, shape, role, init=None, description=None):
    return Arg(name, dtype, list(shape), role, init, None, description)


def S(name, dtype, value):
    return Arg(name, dtype, None, None, None, value)


def SCRATCH(name, dtype, shape):
    """A work buffer the launcher needs (it may not allocate): role `scratch`, poisoned before every
    call, never compared with the reference and not part of the result."""
    return Arg(name, dtype, list(shape), "scratch")


@dataclass
class Op:
    name: str
    category: str
    summary: str
    args: list
    presets: dict
    irregular: dict
    flops: str
    bytes: str                  # `E` stands for the storage element size in bytes
    code: str
    bf16: object = True         # True, or the reason BF16 does not apply
    needs: tuple = ()
    tolerance: dict = field(default_factory=dict)     # per-variant overrides
    notes: str = ""
    vendor: dict = field(default_factory=dict)        # vendor_<dtype> -> {library, link, hooks} (tools/vendors.py)
    no_vendor: str = ""                                # why there is no vendor implementation (tools/vendors.py)


OPS: dict[str, Op] = {}


def op(**kw) -> Op:
    o = Op(**kw)
    assert o.name not in OPS, o.name
    assert set(o.presets) == set(PRESET_NAMES), (o.name, o.presets)
    OPS[o.name] = o
    return o


# -- rendering -----------------------------------------------------------------------------------

def _fmt(v):
    if isinstance(v, str):
        return v if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*|-?\d+", v) else f'"{v}"'
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_fmt(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)


def render_spec(o: Op, variant: str, extra: dict | None = None) -> str:
    d = DTYPES[variant]
    lines = [f"# {o.name} ({variant}): {o.summary}",
             "# Generated by bench/tools/generate.py from bench/tools/ops_*.py; edit there.",
             f"description: {_fmt(o.summary)}",
             f"launcher: {o.name}", "args:"]
    for a in o.args:
        item = {"name": a.name, "dtype": d["spec"] if a.dtype == "T" else a.dtype}
        if a.shape is not None:
            item["shape"] = a.shape
            item["role"] = a.role
            if a.init is not None:
                item["init"] = a.init
        else:
            item["value"] = a.value
        if a.description:
            item["description"] = a.description
        lines.append(f"  - {_fmt(item)}")
    lines.append("sizes:")
    lines.append("  presets:")
    for name in PRESET_NAMES:
        lines.append(f"    {name}: {_fmt(o.presets[name])}")
    lines.append(f"  scored: {_fmt(list(PRESET_NAMES))}")
    lines.append(f"  irregular: {_fmt(o.irregular)}")
    tol = dict(TOLERANCE[variant])
    tol.update(o.tolerance.get(variant, {}))
    lines.append(f"tolerance: {_fmt(tol)}")
    lines.append(f"work: {_fmt({'flops': o.flops, 'bytes': bytes_expr(o, variant)})}")
    extra = extra or {}
    if extra.get("kernel"):
        lines.append(f"kernel: {_fmt(extra['kernel'])}")
    lines.append(f"allow: {_fmt(extra.get('allow', []))}")
    if extra.get("link"):
        lines.append(f"link: {_fmt(extra['link'])}")
    if extra.get("hooks"):
        lines.append(f"hooks: {_fmt(extra['hooks'])}")
    lines.append(f"reference: {_fmt(extra['reference']) if extra.get('reference') else 'null'}")
    return "\n".join(lines) + "\n"


def bytes_expr(o: Op, variant: str) -> str:
    return re.sub(r"\bE\b", str(DTYPES[variant]["E"]), o.bytes)


def render_cu(o: Op, variant: str) -> str:
    d = DTYPES[variant]
    head = [f"// {o.name} ({variant} baseline): {o.summary}",
            "// A straightforward first version for the skillbase bench; the task spec beside this file",
            "// says how it is called, fed, checked and scored. Generated by bench/tools/generate.py.",
            "#include <cuda_runtime.h>", "#include <cuda_bf16.h>", "#include <math.h>", "#include <stdint.h>",
            "", PRELUDE[variant]]
    if "reduce" in o.needs or "partials" in o.needs:
        head.append(REDUCE)
    if "partials" in o.needs:
        head.append(PARTIALS)
    code = textwrap.dedent(o.code).strip("\n")
    # Launcher signatures spell the concrete element type: the task loader checks it against the spec.
    out_lines, in_sig = [], False
    for line in code.splitlines():
        if line.startswith('extern "C"'):
            in_sig = True
        if in_sig:
            line = re.sub(r"\bT\b", d["T"], line)
            if "{" in line:
                in_sig = False
        out_lines.append(line)
    return "\n".join(head) + "\n" + "\n".join(out_lines) + "\n"


def evaluate(expr: str, sizes: dict) -> float:
    env = {"ceil_div": lambda a, b: -(-a // b), "min": min, "max": max, "log2": __import__("math").log2}
    return eval(expr, {"__builtins__": {}}, {**env, **sizes})  # our own tables only


def check_sizes(o: Op) -> None:
    """The size ladder promised in docs/bench.md: a launch-bound size and one beyond the L2."""
    for variant in variants(o):
        b = bytes_expr(o, variant)
        xs = evaluate(b, o.presets["xs"])
        xl = evaluate(b, o.presets["xl"])
        if o.name not in NO_DATA_OPS:
            assert xs < LAUNCH_BOUND_BYTES, (o.name, variant, "xs", xs)
            assert xl > L2_BYTES, (o.name, variant, "xl", xl)


NO_DATA_OPS = {"simpson_int"}   # generates its own sample points: no data, every size is launch/compute-bound


def variants(o: Op) -> list[str]:
    return ["fp32", "bf16"] if o.bf16 is True else ["fp32"]


def render_op_yaml(o: Op) -> str:
    lines = [f"# {o.name}: operator metadata for skillbase.bench (discovery, categories, BF16 applicability).",
             f"name: {o.name}", f"category: {o.category}", f"summary: {_fmt(o.summary)}"]
    lines.append(f"bf16: {'true' if o.bf16 is True else 'false'}")
    if o.bf16 is not True:
        lines.append(f"bf16_reason: {_fmt(o.bf16)}")
    lines.append(f"implementations: {_fmt(impls(o))}")
    if o.vendor:
        lines.append("# Vendor implementations: hand-written (bench/ops/<op>/vendor_<dtype>.cu), same launcher as the")
        lines.append("# baseline. Their task specs (vendor_<dtype>.task.yaml) carry what the harness needs: link,")
        lines.append("# hooks (setup per size and teardown, outside timing), allow, and the baseline as reference.")
        lines.append("vendor:")
        for name, info in o.vendor.items():
            lines.append(f"  {name}: {_fmt({'library': info['library']})}")
    if o.no_vendor:
        lines.append(f"no_vendor: {_fmt(o.no_vendor)}")
    if has_torch(o):
        lines.append(f"# PyTorch: {TORCH_FILE} (hand-written), run eager (torch_<dtype>) and through torch.compile")
        lines.append("# (torch_compile_<dtype>) under torch_<dtype>.task.yaml: the baseline's task with torch allowed.")
        lines.append(f"torch: {TORCH_FILE}")
    return "\n".join(lines) + "\n"


TORCH_FILE = "torch_impl.py"


def has_torch(o: Op) -> bool:
    return (ROOT / "ops" / o.name / TORCH_FILE).is_file()


def impls(o: Op) -> list[str]:
    torch = [f"{kind}_{v}" for v in variants(o) for kind in ("torch", "torch_compile")] if has_torch(o) else []
    return [f"{v}" for v in variants(o)] + sorted(o.vendor) + torch


def render_readme(o: Op) -> str:
    lines = [f"# {o.name}", "", o.summary, "", f"Category: {o.category}.", ""]
    if o.bf16 is not True:
        lines += [f"BF16: n/a. {o.bf16}", ""]
    else:
        lines += ["BF16: `bf16.cu` stores inputs and outputs in BF16 and computes in FP32.", ""]
    if o.notes:
        lines += [textwrap.dedent(o.notes).strip(), ""]
    lines += ["Files: `fp32.cu` / `fp32.task.yaml`" + (", `bf16.cu` / `bf16.task.yaml`" if o.bf16 is True else "")
              + (", vendor: " + ", ".join(f"`{v}.cu`" for v in impls(o) if v.startswith("vendor_")) if any(v.startswith("vendor_") for v in impls(o)) else "")
              + (f", PyTorch: `{TORCH_FILE}`" if has_torch(o) else "")
              + ". The `.cu` and `.task.yaml` baselines are generated by `bench/tools/generate.py`.", ""]
    if o.no_vendor:
        lines += [f"Vendor library: none. {o.no_vendor}", ""]
    return "\n".join(lines)


def write_all(check: bool = False) -> list[str]:
    """Write (or, with check, compare) every generated file; returns the paths that differ."""
    stale = []
    for o in OPS.values():
        check_sizes(o)
        folder = ROOT / "ops" / o.name
        files = {"op.yaml": render_op_yaml(o), "README.md": render_readme(o)}
        for v in variants(o):
            files[f"{v}.cu"] = render_cu(o, v)
            files[f"{v}.task.yaml"] = render_spec(o, v)
        for name, info in o.vendor.items():
            # The vendor task is the baseline's task with the library allowed and linked, its setup and
            # teardown hooks named, and the baseline kernel as the reference (vendor_<dtype>.cu is hand-written).
            variant = name.split("_", 1)[1]
            spec = render_spec(o, variant, {"allow": info.get("allow") or [info["library"]], "link": info.get("link") or [],
                                            "hooks": info["hooks"], "reference": {"cuda": f"{variant}.cu"}})
            files[f"{name}.task.yaml"] = spec.replace(f"# {o.name} (", f"# {o.name} vendor (", 1)
        if has_torch(o):
            # The PyTorch task: the baseline's task with torch allowed, torch_impl.py as its kernel and the
            # baseline kernel as the reference; the bench runs it eager and through torch.compile.
            for variant in variants(o):
                spec = render_spec(o, variant, {"kernel": TORCH_FILE, "allow": ["torch"],
                                                "reference": {"cuda": f"{variant}.cu"}})
                files[f"torch_{variant}.task.yaml"] = spec.replace(f"# {o.name} (", f"# {o.name} torch (", 1)
        for name, text in files.items():
            path = folder / name
            if check:
                if not path.exists() or path.read_text() != text:
                    stale.append(str(path))
            else:
                folder.mkdir(parents=True, exist_ok=True)
                if not path.exists() or path.read_text() != text:
                    path.write_text(text)
                    stale.append(str(path))
    return stale
