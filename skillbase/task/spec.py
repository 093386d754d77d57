"""The task spec: load `K.task.yaml`, validate it against its schema and K.cu's launcher, resolve sizes.

A spec is trusted user data that tells the harness how to call an untrusted kernel: which
arguments it reads and writes, how big they are, what inputs to feed it, how close its outputs
must be to the reference and how much work one call does. Every mistake in it is reported as
one `InputError` line naming the file and the field (`sgemm.task.yaml: args[2].shape[0]: …`),
because a silently wrong spec turns into a harness that can be fooled.

The inputs a spec describes are made in `skillbase.task.inputs` (`TaskSpec.make_inputs`), the
launcher is read by `skillbase.cuda.launchers`, and `skillbase init` drafts a spec in
`skillbase.task.draft`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from skillbase.cuda.launchers import Launcher, Param, launchers
from skillbase.datafile import schemas
from skillbase.datafile.problems import suggestions
from skillbase.datafile.yamldoc import load_yaml
from skillbase.errors import InputError
from skillbase.task import generators, inputs
from skillbase.task.dtypes import DTYPES, SIGNIFICAND_BITS, STREAM_HINT, STREAM_TYPES, c_type_dtypes
from skillbase.task.expr import Expr, ExprError, parse_expr

__all__ = ["ArgSpec", "TaskSpec", "ResolvedArg", "ResolvedTask", "Tolerance", "load_task", "spec_path_for",
           "ARCHS", "CUDA_MALLOC_ALIGN", "DEFAULT_TOLERANCES", "IRREGULAR_MULTIPLE", "LINKABLE", "ROLES"]

# Default tolerances, per output dtype. An element passes when
#     |out - ref| <= atol_scale * max|ref| + rtol * |ref|
# The absolute part scales with the output's magnitude, so a constant or all-zero output cannot
# pass a small-valued task by hiding under a fixed atol (VERIFY.md), and near-zero elements that
# come from cancellation are not failed for reordering error.
#   f64  rtol 1e-10: reduction reordering over ~1e6 terms costs ~n*2^-53 ~ 1e-10.
#   f32  rtol 1e-4, atol_scale 1e-5: FP32 reordering (split-K, tree reductions) and fast
#        intrinsics stay far below; TF32 (10-bit mantissa, ~5e-4 per product) or a bf16/f16
#        downgrade do not, so a silent precision drop fails.
#   f16  rtol 5e-3, atol_scale 1e-3: about 5 ulp (2^-10) after rounding the output.
#   bf16 rtol 1e-2, atol_scale 1e-2: about 1 ulp (2^-7) after rounding the output, where a
#        different accumulation order flips the last bit.
#   integers: exact.
@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol_scale: float

    @property
    def exact(self) -> bool:
        return self.rtol == 0 and self.atol_scale == 0


DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "f64": Tolerance(1e-10, 1e-10), "f32": Tolerance(1e-4, 1e-5), "f16": Tolerance(5e-3, 1e-3),
    "bf16": Tolerance(1e-2, 1e-2), "i32": Tolerance(0, 0), "i64": Tolerance(0, 0), "u8": Tolerance(0, 0),
    "i8": Tolerance(0, 0), "u32": Tolerance(0, 0),
}

# The irregular size must break tiling assumptions: at least one symbol not a multiple of this.
IRREGULAR_MULTIPLE = 32
# What cudaMalloc guarantees, and so what a launcher may assume unless the spec's `align:` says less.
CUDA_MALLOC_ALIGN = 256
# All of a task's arrays at one size must fit in one GPU's memory (an H200 holds 141 GB); a shape
# such as 2**60 is refused when the spec loads rather than when the harness allocates it.
MAX_TASK_BYTES = 128 * 2**30

# Pointer roles. `scratch` is a work buffer the launcher needs because it may not allocate: poisoned
# before every call like an output, free for the kernel to write, never compared with the reference
# and not part of the result.
ROLES = ("in", "out", "inout", "scratch")

# CUDA toolkit libraries a task may link (`link:`). Calling one still needs `allow:` (static check).
LINKABLE = ("cublas", "cublasLt", "cusparse", "cufft", "curand", "cusolver", "cudnn")

# Architectures a task may require (`arch:`), as nvcc 13 names them. A plain `sm_XX` runs on compute
# capability XX and later (the build embeds PTX); `sm_XXa` holds the instructions only that chip has
# (sm_90a: wgmma, setmaxnreg, TMA multicast) and runs on exactly CC XX; `sm_XXf` on the family (same
# major, minor at least XX's). The harness builds the task, its candidates and references for it.
ARCHS = ("sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_90a",
         "sm_100", "sm_100a", "sm_100f", "sm_103", "sm_103a", "sm_103f", "sm_110", "sm_110a", "sm_110f",
         "sm_120", "sm_120a", "sm_120f", "sm_121", "sm_121a", "sm_121f")


@dataclass(frozen=True)
class ArgSpec:
    name: str
    dtype: str
    role: str                         # in | out | inout | scratch (scalars are always in)
    shape: tuple[Expr, ...] | None    # pointer arguments
    value: Expr | None                # scalar arguments
    init: dict | None = None
    tolerance: Tolerance | None = None
    index: int = 0

    @property
    def pointer(self) -> bool:
        return self.shape is not None

    @property
    def written(self) -> bool:
        """An output the harness verifies (out / inout); scratch is written too but never compared."""
        return self.role in ("out", "inout")

    @property
    def scratch(self) -> bool:
        return self.role == "scratch"

    @property
    def poisoned(self) -> bool:
        """Allocated by the harness and poisoned before every call (out and scratch)."""
        return self.role in ("out", "scratch")


@dataclass(frozen=True)
class ResolvedArg:
    name: str
    dtype: str
    role: str
    pointer: bool
    shape: tuple[int, ...] | None
    numel: int
    nbytes: int
    value: int | float | None = None  # scalars: the Python value


@dataclass(frozen=True)
class ResolvedTask:
    sizes: dict[str, int]
    args: tuple[ResolvedArg, ...]
    flops: float
    bytes: float

    def arg(self, name: str) -> ResolvedArg:
        for a in self.args:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def scalars(self) -> dict[str, int | float]:
        return {a.name: a.value for a in self.args if not a.pointer}

    @property
    def data_bytes(self) -> int:
        """Bytes of all array arguments (compare with the L2 size to see whether a size streams)."""
        return sum(a.nbytes for a in self.args if a.pointer)


@dataclass(frozen=True)
class Sweep:
    symbol: str
    values: tuple[int, ...]
    scale: dict[str, Expr]
    base: str


@dataclass
class TaskSpec:
    """A validated task. Paths: `path` is the spec, `kernel_path` the `.cu` beside it."""

    path: Path
    kernel_path: Path
    launcher: str
    args: tuple[ArgSpec, ...]
    symbols: tuple[str, ...]
    presets: dict[str, dict[str, int]]
    scored: tuple[str, ...]
    irregular: dict[str, int]
    sweep: Sweep | None
    tolerance: Tolerance | None
    work_flops: Expr
    work_bytes: Expr
    allow: tuple[str, ...] = ()
    reference: dict | None = None
    link: tuple[str, ...] = ()                            # toolkit libraries linked (-l<name>)
    hooks: dict[str, str] = field(default_factory=dict)   # {"setup": name, "teardown": name}
    raw: dict = field(default_factory=dict, repr=False)
    align: int = CUDA_MALLOC_ALIGN                        # bytes every array pointer is aligned to
    arch: str | None = None                               # the architecture the kernel needs (ARCHS), if any

    # -- lookup -----------------------------------------------------------------------------
    def arg(self, name: str) -> ArgSpec:
        for a in self.args:
            if a.name == name:
                return a
        raise InputError(f"{self.path}: no argument named '{name}'",
                         hint=_did_you_mean(name, [a.name for a in self.args]))

    @property
    def outputs(self) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.written)

    @property
    def inputs(self) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.pointer and a.role in ("in", "inout"))

    @property
    def scratch(self) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.scratch)

    @property
    def is_torch(self) -> bool:
        """The implementation is a PyTorch function (a `kernel: *.py`), not a CUDA launcher."""
        return self.kernel_path.suffix == ".py"

    @property
    def hook_names(self) -> tuple[str, ...]:
        """The extern "C" functions named in `hooks:` (the static check exempts their bodies)."""
        return tuple(self.hooks[k] for k in ("setup", "teardown") if k in self.hooks)

    @property
    def scalar_args(self) -> tuple[ArgSpec, ...]:
        """The launcher's scalar arguments, in order: what `hooks.setup` receives."""
        return tuple(a for a in self.args if not a.pointer)

    # -- sizes ------------------------------------------------------------------------------
    def sizes_for(self, sizes: str | dict[str, int]) -> dict[str, int]:
        """A preset name, 'irregular', or an explicit mapping -> a complete, checked size mapping."""
        if isinstance(sizes, str):
            if sizes == "irregular":
                return dict(self.irregular)
            if sizes not in self.presets:
                raise InputError(f"{self.path}: no size preset '{sizes}' (presets: {', '.join(self.presets)})",
                                 hint=_did_you_mean(sizes, list(self.presets) + ["irregular"]))
            return dict(self.presets[sizes])
        missing = [s for s in self.symbols if s not in sizes]
        if missing:
            raise InputError(f"{self.path}: sizes {dict(sizes)} miss symbol {missing[0]}")
        return {s: int(sizes[s]) for s in self.symbols}

    def verify_sizes(self) -> list[tuple[str, dict[str, int]]]:
        """Sizes every candidate is verified on: each scored preset, then the irregular one."""
        return [(name, dict(self.presets[name])) for name in self.scored] + [("irregular", dict(self.irregular))]

    def sweep_sizes(self) -> list[dict[str, int]]:
        """The scale sweep's size mappings (empty without a sweep)."""
        if self.sweep is None:
            return []
        out = []
        for v in self.sweep.values:
            s = dict(self.presets[self.sweep.base])
            s[self.sweep.symbol] = v
            for k, expr in self.sweep.scale.items():
                s[k] = self.int_at(expr, s, f"sizes.sweep.scale.{k}")
            out.append(s)
        return out

    # -- evaluation -------------------------------------------------------------------------
    def int_at(self, expr: Expr, sizes: dict, where: str) -> int:
        """`expr` at `sizes` as an integer; a failure is an InputError naming the field `where`."""
        try:
            return expr.evaluate_int(sizes)
        except (ExprError, ArithmeticError, ValueError, TypeError) as error:
            raise InputError(f"{self.path}: {where}: {error} (sizes {sizes})") from None

    def number_at(self, expr: Expr, sizes: dict, where: str) -> float:
        """`expr` at `sizes` as a number; a failure is an InputError naming the field `where`."""
        try:
            return float(expr.evaluate(sizes))
        except (ExprError, ArithmeticError, ValueError, TypeError) as error:
            raise InputError(f"{self.path}: {where}: {error} (sizes {sizes})") from None

    def work(self, sizes: str | dict[str, int]) -> tuple[float, float]:
        """(flops, bytes) of one launcher call at these sizes."""
        s = self.sizes_for(sizes)
        out = []
        for where, expression in (("work.flops", self.work_flops), ("work.bytes", self.work_bytes)):
            value = self.number_at(expression, s, where)
            if not (math.isfinite(value) and value >= 0):
                raise InputError(f"{self.path}: {where}: {value} at sizes {s}; the work model must be a finite "
                                 "count, zero or more", "it feeds the roofline floor and the faster-than-physics guard")
            out.append(value)
        return out[0], out[1]

    def resolve(self, sizes: str | dict[str, int]) -> ResolvedTask:
        """Shapes, byte counts, scalar values and the work model at one set of sizes."""
        s = self.sizes_for(sizes)
        resolved = []
        total_bytes = 0
        for a in self.args:
            if a.pointer:
                shape = tuple(self.int_at(e, s, f"args[{a.index}].shape[{i}]") for i, e in enumerate(a.shape))
                if any(d <= 0 for d in shape):
                    raise InputError(f"{self.path}: args[{a.index}].shape: {a.name} has a dimension of zero or less "
                                     f"{shape} at sizes {s}", "every array needs at least one element to verify")
                numel = math.prod(shape)
                total_bytes += numel * DTYPES[a.dtype].itemsize
                if total_bytes > MAX_TASK_BYTES:
                    raise InputError(f"{self.path}: args[{a.index}].shape: the arrays up to {a.name} need "
                                     f"{total_bytes:.3g} bytes at sizes {s}, more than any GPU holds "
                                     f"({MAX_TASK_BYTES // 2**30} GiB here)", "use smaller sizes in sizes.presets")
                resolved.append(ResolvedArg(a.name, a.dtype, a.role, True, shape, numel,
                                            numel * DTYPES[a.dtype].itemsize))
            else:
                where = f"args[{a.index}].value"
                if DTYPES[a.dtype].is_float:
                    value = self.number_at(a.value, s, where)
                else:
                    value = self.int_at(a.value, s, where)
                    info = np.iinfo(DTYPES[a.dtype].storage)
                    if not info.min <= value <= info.max:
                        raise InputError(f"{self.path}: {where}: {a.name} = {value} overflows {a.dtype} at sizes {s}")
                resolved.append(ResolvedArg(a.name, a.dtype, "in", False, None, 1, DTYPES[a.dtype].itemsize, value))
        flops, nbytes = self.work(s)
        return ResolvedTask(s, tuple(resolved), flops, nbytes)

    def tolerance_for(self, arg: str | ArgSpec, ref: Any = None) -> tuple[float, float]:
        """(rtol, atol) for an output; check `|out - ref| <= atol + rtol * |ref|` elementwise.

        atol is `atol_scale * max|ref|` over the finite reference values when `ref` (an array, or
        that maximum as a number) is given; without it atol is `atol_scale` itself, i.e. the
        tolerance for an output whose largest magnitude is 1. Integer outputs give (0, 0).
        """
        tol = self.tolerance_rule(arg)
        if ref is None:
            return tol.rtol, tol.atol_scale
        if np.isscalar(ref):
            magnitude = abs(float(ref))
        else:
            values = np.asarray(ref, dtype=np.float64)
            finite = np.abs(values[np.isfinite(values)])
            magnitude = float(finite.max()) if finite.size else 0.0
        return tol.rtol, tol.atol_scale * magnitude

    def tolerance_rule(self, arg: str | ArgSpec) -> Tolerance:
        a = arg if isinstance(arg, ArgSpec) else self.arg(arg)
        if a.tolerance is not None:
            return a.tolerance
        default = DEFAULT_TOLERANCES[a.dtype]
        if self.tolerance is not None and DTYPES[a.dtype].is_float:
            return Tolerance(self.tolerance.rtol if self.tolerance.rtol is not None else default.rtol,
                             self.tolerance.atol_scale if self.tolerance.atol_scale is not None else default.atol_scale)
        return default

    def evidence(self) -> dict[str, Any]:
        """What the task allows, as evidence the rules read (`evidence.task`): the output dtypes,
        the tightest relative tolerance of a float output, the libraries `allow:` permits, the input
        dtypes and the narrowest and widest precision of a float input (significand bits; 0 when no
        input is a float). A tolerance is tight only relative to the inputs: an MMA on bf16 inputs
        with fp32 accumulation rounds nothing that the task had not already rounded."""
        floats = [self.tolerance_rule(a).rtol for a in self.outputs if DTYPES[a.dtype].is_float]
        precisions = [SIGNIFICAND_BITS[a.dtype] for a in self.inputs if a.dtype in SIGNIFICAND_BITS]
        return {"dtypes": sorted({a.dtype for a in self.outputs}), "min_rtol": min(floats) if floats else None,
                "allow": list(self.allow), "input_dtypes": sorted({a.dtype for a in self.inputs}),
                "input_significand_bits": {"narrowest": min(precisions, default=0),
                                           "widest": max(precisions, default=0)}}

    # -- inputs (skillbase.task.inputs) ------------------------------------------------------
    def make_inputs(self, sizes: str | dict[str, int], seed: int) -> dict[str, np.ndarray]:
        """Host arrays for every in/inout argument at these sizes (see `skillbase.task.inputs.make_inputs`)."""
        return inputs.make_inputs(self, sizes, seed)

    def reference_callable(self) -> Callable | None:
        """The python reference `fn(inputs, sizes) -> {output name: array}`, or None."""
        return inputs.reference_callable(self)

    def to_dict(self) -> dict:
        return dict(self.raw)


# ------------------------------------------------------------------------------------------------
# Loading and validation
# ------------------------------------------------------------------------------------------------

def spec_path_for(path: str | Path) -> tuple[Path, Path]:
    """(kernel .cu, spec .task.yaml) from either of them."""
    path = Path(path)
    if path.name.endswith(".task.yaml") or path.name.endswith(".task.yml"):
        stem = path.name.rsplit(".task.", 1)[0]
        return path.with_name(stem + ".cu"), path
    return path, path.with_name(path.stem + ".task.yaml")


def _did_you_mean(word: str, choices) -> str | None:
    # The task spec's wording quotes the suggestion ('x'); the closeness is the one shared rule.
    match = suggestions(word, choices, cutoff=0.5)
    return f"did you mean '{match[0]}'?" if match else None


def _field(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _check_keys_are_names(node: Any, path: tuple, fail) -> None:
    """Every mapping key is a string: YAML reads `1e3:` or `true:` as a number or a boolean, and a spec's
    keys are names (fields, sizes, parameters) that later code sorts and compares with other names."""
    if isinstance(node, dict):
        for key, value in node.items():
            if not isinstance(key, str):
                fail(_field(path), f"key {key!r} is a {type(key).__name__}, not a name",
                     hint="put the key in quotes in the YAML")
            _check_keys_are_names(value, path + (key,), fail)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            _check_keys_are_names(item, path + (index,), fail)


def load_task(path: str | Path, check_launcher: bool = True) -> TaskSpec:
    """Load `K.task.yaml` for `K.cu` (either path may be given) and validate it fully."""
    kernel_path, spec_path = spec_path_for(path)
    if not spec_path.is_file():
        raise InputError(f"{kernel_path}: no task spec {spec_path.name} beside it",
                         hint=f"run `skillbase init {kernel_path}` to draft one")
    data = load_yaml(spec_path, exponent_floats=True).data
    return spec_from_dict(data, spec_path, kernel_path, check_launcher=check_launcher)


def spec_from_dict(data: Any, spec_path: Path, kernel_path: Path | None = None,
                   check_launcher: bool = True) -> TaskSpec:
    spec_path = Path(spec_path)
    kernel_path = Path(kernel_path) if kernel_path else spec_path_for(spec_path)[0]
    if isinstance(data, dict) and isinstance(data.get("kernel"), str):
        kernel_path = spec_path.parent / data["kernel"]    # e.g. a PyTorch implementation, torch.py

    def fail(where: str, message: str, hint: str | None = None):
        raise InputError(f"{spec_path}: {where}: {message}", hint=hint)

    if not isinstance(data, dict):
        fail("(top level)", "expected a mapping with launcher, args, sizes, work")
    _check_keys_are_names(data, (), fail)
    _schema_check(data, spec_path)

    # --- sizes --------------------------------------------------------------------------
    sizes = data["sizes"]
    presets = {name: dict(values) for name, values in sizes["presets"].items()}
    first = next(iter(presets))
    symbols = tuple(presets[first])
    for name, values in presets.items():
        for sym in symbols:
            if sym not in values:
                fail(f"sizes.presets.{name}",
                     f"missing size symbol {sym} (preset '{first}' defines {', '.join(symbols)})")
        for sym in values:
            if sym not in symbols:
                fail(f"sizes.presets.{name}.{sym}",
                     f"size symbol not in preset '{first}' (symbols: {', '.join(symbols)})",
                     _did_you_mean(sym, symbols))
    known = set(symbols)

    def expr(value, where: str) -> Expr:
        try:
            return parse_expr(value, known)
        except ExprError as error:
            message = str(error)
            hint = None
            if message.startswith("unknown size symbol"):
                name = message.split("'")[1]
                if name == "TODO":
                    fail(where, "still TODO (left by skillbase init); write it as an expression over "
                         f"{', '.join(symbols)}")
                hint = _did_you_mean(name, symbols) or f"size symbols are {', '.join(symbols)} (from sizes.presets)"
            fail(where, message, hint)

    irregular = dict(sizes["irregular"])
    for sym in symbols:
        if sym not in irregular:
            fail("sizes.irregular", f"missing size symbol {sym}")
    for sym in irregular:
        if sym not in known:
            fail(f"sizes.irregular.{sym}", "not a size symbol", _did_you_mean(sym, symbols))
    if all(v % IRREGULAR_MULTIPLE == 0 for v in irregular.values()):
        fail("sizes.irregular", f"every size is a multiple of {IRREGULAR_MULTIPLE} ({irregular}); an irregular "
             "size must break tile assumptions", hint="use e.g. 1000 or 1003 for one of the symbols")

    scored = tuple(sizes.get("scored") or (["default"] if "default" in presets else [first]))
    for name in scored:
        if name not in presets:
            fail("sizes.scored", f"'{name}' is not a preset", _did_you_mean(name, presets))

    sweep = None
    if "sweep" in sizes:
        raw = sizes["sweep"]
        if raw["symbol"] not in known:
            fail("sizes.sweep.symbol", f"'{raw['symbol']}' is not a size symbol", _did_you_mean(raw["symbol"], symbols))
        base = raw.get("base", scored[0])
        if base not in presets:
            fail("sizes.sweep.base", f"'{base}' is not a preset", _did_you_mean(base, presets))
        scale = {}
        for k, v in (raw.get("scale") or {}).items():
            if k not in known:
                fail(f"sizes.sweep.scale.{k}", "not a size symbol", _did_you_mean(k, symbols))
            scale[k] = expr(v, f"sizes.sweep.scale.{k}")
        sweep = Sweep(raw["symbol"], tuple(raw["values"]), scale, base)

    # --- args ---------------------------------------------------------------------------
    args: list[ArgSpec] = []
    seen: set[str] = set()
    for i, raw in enumerate(data["args"]):
        where = f"args[{i}]"
        name = raw["name"]
        if name in seen:
            fail(f"{where}.name", f"'{name}' appears twice")
        seen.add(name)
        has_shape, has_value = "shape" in raw, "value" in raw
        if has_shape == has_value:
            fail(where, f"'{name}' needs exactly one of shape (an array) or value (a scalar)")
        role = raw.get("role")
        if has_shape and role is None:
            fail(f"{where}.role", f"array '{name}' needs a role: in, out, inout or scratch")
        if has_value and role not in (None, "in"):
            fail(f"{where}.role", f"scalar '{name}' is passed by value and cannot be {role}")
        init = raw.get("init")
        if init is not None and not has_shape:
            fail(f"{where}.init", f"scalar '{name}' takes value:, not init:")
        if init is not None and role in ("out", "scratch"):
            fail(f"{where}.init", f"'{name}' is role {role}: the harness poisons it before every call",
                 hint="use role inout if the kernel reads its initial contents")
        if role == "scratch" and raw.get("tolerance") is not None:
            fail(f"{where}.tolerance", f"'{name}' is scratch and never compared; tolerances apply to out/inout")
        if role in (None, "in") and raw.get("tolerance") is not None:
            fail(f"{where}.tolerance", f"'{name}' is an input and never compared; tolerances apply to out/inout",
                 hint="move the tolerance to the output it is meant for")
        _check_tolerance(raw.get("tolerance"), f"{where}.tolerance", fail)
        shape = tuple(expr(e, f"{where}.shape[{j}]") for j, e in enumerate(raw["shape"])) if has_shape else None
        value = expr(raw["value"], f"{where}.value") if has_value else None
        if init is not None:
            _check_init(init, raw["dtype"], f"{where}.init", expr, fail, spec_path)
        tol = raw.get("tolerance")
        tolerance = None
        if tol is not None:
            default = DEFAULT_TOLERANCES[raw["dtype"]]
            tolerance = Tolerance(float(tol.get("rtol", default.rtol)),
                                  float(tol.get("atol_scale", default.atol_scale)))
        args.append(ArgSpec(name, raw["dtype"], role or "in", shape, value, init, tolerance, i))

    if not any(a.written for a in args):
        if any(a.scratch for a in args):
            fail("args", "every written argument is scratch (never compared), so nothing would be verified; "
                 "give the result role out or inout")
        fail("args", "no argument has role out or inout, so there is nothing to verify")

    # Structured generators: their parts must be other in/inout arrays without their own init.
    owners: dict[str, str] = {}
    by_name = {a.name: a for a in args}
    for a in args:
        if not (a.init and "generator" in a.init):
            continue
        where = f"args[{a.index}].init.parts"
        kind = a.init["generator"]
        index_parts, value_part = generators.STRUCTURED_PARTS[kind]
        allowed = set(index_parts) | {value_part}
        for part, target in a.init["parts"].items():
            if part not in allowed:
                fail(f"{where}.{part}", f"{kind} has no part '{part}' (parts: {', '.join(sorted(allowed))})",
                     _did_you_mean(part, allowed))
            if target not in by_name:
                fail(f"{where}.{part}", f"no argument named '{target}'", _did_you_mean(target, by_name))
            t = by_name[target]
            if not t.pointer or t.poisoned:
                fail(f"{where}.{part}", f"'{target}' must be an in or inout array to be generated")
            if t is not a and t.init is not None:
                fail(f"args[{t.index}].init",
                     f"'{target}' is filled by {a.name}'s {kind} generator; remove its own init")
            if target in owners:
                fail(f"{where}.{part}", f"'{target}' is already filled by {owners[target]}'s generator")
            owners[target] = a.name
            if part in index_parts and DTYPES[t.dtype].is_float:
                fail(f"args[{t.index}].dtype", f"{kind} part {part} holds indices; '{target}' must be an integer dtype")
        for part in index_parts:
            if part not in a.init["parts"]:
                fail(where, f"{kind} needs part '{part}' (parts: {', '.join(index_parts)}, optional {value_part})")
        if a.name not in a.init["parts"].values():
            fail(where, f"'{a.name}' declares the generator but is not one of its parts")

    # --- tolerance, work, allow, reference ----------------------------------------------------
    tolerance = None
    _check_tolerance(data.get("tolerance"), "tolerance", fail)
    if "tolerance" in data:
        tolerance = Tolerance(data["tolerance"].get("rtol"), data["tolerance"].get("atol_scale"))
    work_flops = expr(data["work"]["flops"], "work.flops")
    work_bytes = expr(data["work"]["bytes"], "work.bytes")
    reference = data.get("reference")
    if reference:
        file_part = (reference.get("python") or reference.get("cuda")).rpartition(":")[0] or reference.get("cuda")
        field_name = "reference.python" if reference.get("python") else "reference.cuda"
        _check_beside(spec_path, file_part, field_name, fail)

    align = data.get("align", CUDA_MALLOC_ALIGN)
    for a in args:
        if a.pointer and DTYPES[a.dtype].itemsize > align:
            fail("align", f"{align} bytes is less than the {DTYPES[a.dtype].itemsize}-byte elements of '{a.name}'",
                 hint=f"an array is at least aligned to its element: use align: {DTYPES[a.dtype].itemsize} or more")
    allow = tuple(data.get("allow") or ())
    for i, name in enumerate(data.get("link") or ()):
        if name not in allow:
            fail(f"link[{i}]", f"{name} is linked but not in allow:, so the static check would reject every call to it",
                 hint=f"add {name} to allow:")
    hooks = dict(data.get("hooks") or {})
    if kernel_path.suffix == ".py":
        if "torch" not in allow:
            fail("kernel", f"{kernel_path.name} is a PyTorch implementation but the task does not allow torch",
                 hint="add torch to allow: (only reference implementations, such as the bench's, should)")
        if hooks or data.get("link"):
            fail("hooks" if hooks else "link", "a PyTorch implementation has no hooks or link: (the harness "
                 "warms it up at each size outside timing)")
    for kind, name in hooks.items():
        if name == data["launcher"]:
            fail(f"hooks.{kind}", f"'{name}' is the launcher; a hook is a separate extern \"C\" function "
                 "that runs outside the timed calls")
    if hooks.get("setup") is not None and hooks.get("setup") == hooks.get("teardown"):
        fail("hooks.teardown", f"'{hooks['teardown']}' is also hooks.setup; they must be different functions")

    spec = TaskSpec(path=spec_path, kernel_path=kernel_path, launcher=data["launcher"], args=tuple(args),
                    symbols=symbols, presets=presets, scored=scored, irregular=irregular, sweep=sweep,
                    tolerance=tolerance, work_flops=work_flops, work_bytes=work_bytes,
                    allow=allow, reference=reference,
                    link=tuple(data.get("link") or ()), hooks=hooks, raw=data, align=align, arch=data.get("arch"))

    # Every preset must resolve: positive shapes, integral dimensions, scalars in range.
    for name in list(presets) + ["irregular"]:
        spec.resolve(name)
    spec.sweep_sizes()

    if check_launcher:
        check_against_launcher(spec)
    return spec


def _check_init(init: dict, dtype_name: str, where: str, expr, fail, spec_path: Path) -> None:
    is_float = DTYPES[dtype_name].is_float
    if "dist" in init:
        dist = init["dist"]
        allowed = {"uniform": {"low", "high"}, "normal": {"mean", "std"}, "randint": {"low", "high"},
                   "ones": set(), "zeros": set(), "constant": {"value"}, "arange": {"start", "step"},
                   "permutation": set(), "sorted": {"low", "high"}}[dist]
        # rescale: false -- the range is the kernel's domain (a series that diverges outside [-1, 1]),
        # so verification's inputs-scaled-by-4 call leaves this argument as drawn.
        extra = sorted(set(init) - allowed - {"dist", "rescale"})
        if extra:
            fail(f"{where}.{extra[0]}", f"dist {dist} takes {', '.join(sorted(allowed)) or 'no parameters'}")
        if dist == "constant" and "value" not in init:
            fail(where, "dist constant needs value:")
        if dist in ("uniform", "randint", "sorted") and "low" in init and "high" in init \
                and init["low"] >= init["high"]:
            fail(f"{where}.high", f"high ({init['high']}) must exceed low ({init['low']})")
        if dist == "normal" and not is_float:
            fail(f"{where}.dist", f"normal makes floats; use randint for {dtype_name}")
    elif "generator" in init:
        extra = sorted(set(init) - {"generator", "rows", "cols", "nnz", "density", "width", "ragged", "pad_index",
                                    "layout", "parts", "values"})
        if extra:
            fail(f"{where}.{extra[0]}", f"not a {init['generator']} generator parameter")
        for key in ("rows", "cols"):
            if key not in init:
                fail(where, f"generator {init['generator']} needs {key}:")
            expr(init[key], f"{where}.{key}")
        if "nnz" in init and "density" in init:
            fail(where, "give nnz or density, not both")
        for key in ("nnz", "width"):
            if key in init:
                expr(init[key], f"{where}.{key}")
        if "width" in init and init["generator"] != "ell":
            fail(f"{where}.width", "width is an ell parameter")
        values = init.get("values")
        if values is not None and "dist" not in values:
            fail(f"{where}.values", "values needs a dist (e.g. {dist: uniform, low: -1, high: 1})")
    else:
        file_part = init["hook"].rpartition(":")[0]
        extra = sorted(set(init) - {"hook"})
        if extra:
            fail(f"{where}.{extra[0]}", "a hook takes no parameters (it receives sizes and the rng)")
        _check_beside(spec_path, file_part, f"{where}.hook", fail)


def _check_tolerance(tolerance: Any, where: str, fail) -> None:
    """rtol and atol_scale are finite numbers, zero or more (the schema's `minimum` lets NaN through)."""
    for key, value in tolerance.items() if isinstance(tolerance, dict) else ():
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and not (math.isfinite(value) and value >= 0):
            fail(f"{where}.{key}", f"{value} is not a finite tolerance", hint="use a number such as 1e-4")


def _check_beside(spec_path: Path, file_part: str, where: str, fail) -> None:
    """A file a spec names (a reference, an init hook) lies in the spec's own folder or below it:
    a spec shared with others must not run Python from elsewhere on their machine."""
    folder = spec_path.parent.resolve()
    target = (spec_path.parent / file_part).resolve()
    if not target.is_relative_to(folder):
        fail(where, f"{file_part} is outside the spec's folder", hint="put the file next to the spec")
    if not target.is_file():
        fail(where, f"{file_part} not found next to the spec")


def _schema_check(data: dict, spec_path: Path) -> None:
    errors = list(schemas.validator("task").iter_errors(data))
    if not errors:
        return
    # Report the shallowest error first: it is usually the real mistake, deeper ones follow from it.
    error = min(errors, key=lambda e: (len(e.absolute_path), e.validator == "oneOf"))
    where = _field(error.absolute_path)
    hint = None
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        allowed = sorted(error.schema.get("properties", {}))
        name = extra[0] if extra else "?"
        message = f"unknown field '{name}' (allowed: {', '.join(allowed)})"
        hint = _did_you_mean(name, allowed)
        where = f"{where}.{name}" if where != "(top level)" else name
    elif error.validator == "enum" and len(error.absolute_path) == 2 and error.absolute_path[0] == "link":
        message = (f"{error.instance!r} is not a CUDA toolkit library the harness links "
                   f"(allowed: {', '.join(LINKABLE)})")
        if isinstance(error.instance, str):
            hint = _did_you_mean(error.instance, LINKABLE)
    elif error.validator == "enum" and tuple(error.absolute_path) == ("arch",):
        message = f"{error.instance!r} is not a CUDA architecture nvcc builds for (e.g. sm_90, sm_90a, sm_100a)"
        if isinstance(error.instance, str):
            hint = _did_you_mean(error.instance.lower(), ARCHS)   # sm_90A means sm_90a, not sm_90
    elif error.validator == "enum":
        message = f"{error.instance!r} is not one of {', '.join(map(str, error.validator_value))}"
        if isinstance(error.instance, str):
            hint = _did_you_mean(error.instance, map(str, error.validator_value))
    elif error.validator == "required":
        message = error.message.replace("is a required property", "is required")
        if isinstance(error.instance, dict) and "name" in error.instance:
            message += f" (for '{error.instance['name']}')"
    elif error.validator == "oneOf" and len(error.absolute_path) and error.absolute_path[-1] == "init":
        message = "init needs exactly one of dist, generator (with parts) or hook"
    elif error.validator == "oneOf" and error.absolute_path and error.absolute_path[-1] == "reference":
        message = "reference is null, {python: 'file.py:function'} or {cuda: 'file.cu'}"
    else:
        message = error.message
    raise InputError(f"{spec_path}: {where}: {message}", hint=hint)


def check_against_launcher(spec: TaskSpec) -> None:
    """The args must be the launcher's parameters: same count, order, names, kind, constness, type."""
    path = spec.path
    if not spec.kernel_path.is_file():
        raise InputError(f"{path}: launcher: kernel file {spec.kernel_path.name} not found beside the spec")
    if spec.is_torch:
        check_python_launcher(spec)
        return
    found = launchers(spec.kernel_path)
    if not found:
        raise InputError(f"{path}: launcher: {spec.kernel_path.name} defines no extern \"C\" function",
                         hint='the harness calls kernels through e.g. '
                              'extern "C" void launch(const float* x, float* y, int n)')
    if spec.launcher not in found:
        hint = _did_you_mean(spec.launcher, found)
        raise InputError(f"{path}: launcher: '{spec.launcher}' is not an extern \"C\" function in "
                         f"{spec.kernel_path.name} (found: {', '.join(found)})", hint=hint)
    params = found[spec.launcher].params
    signature = f"{spec.launcher}({', '.join(_c_param(p) for p in params)})"
    if len(params) != len(spec.args):
        raise InputError(f"{path}: args: {len(spec.args)} given but {signature} takes {len(params)}")
    names = [p.name for p in params]
    if sorted(names) == sorted(a.name for a in spec.args) and names != [a.name for a in spec.args]:
        raise InputError(f"{path}: args: order differs from the launcher's ({', '.join(names)})")
    for a, p in zip(spec.args, params, strict=True):
        where = f"args[{a.index}]"
        if p.name and a.name != p.name:
            raise InputError(f"{path}: {where}.name: '{a.name}' but parameter {a.index + 1} of {spec.launcher} "
                             f"is '{_c_param(p)}'")
        if p.pointer and not a.pointer:
            raise InputError(f"{path}: {where}: {spec.launcher} takes '{_c_param(p)}', a pointer; give {a.name} "
                             "a shape and a role instead of a value")
        if not p.pointer and a.pointer:
            raise InputError(f"{path}: {where}: {spec.launcher} takes '{_c_param(p)}' by value; give {a.name} "
                             "a value: expression instead of a shape")
        if p.pointer and p.const and (a.written or a.scratch):
            raise InputError(f"{path}: {where}.role: {a.name} is {a.role} but the launcher takes '{_c_param(p)}' "
                             "(const: it cannot write it)", hint="use role in, or drop const in the launcher")
        compatible = c_type_dtypes(p.type)
        if compatible is not None and a.dtype not in compatible:
            raise InputError(f"{path}: {where}.dtype: {a.dtype} but the launcher takes '{_c_param(p)}' "
                             f"({' or '.join(compatible)})")
        if compatible is None and not p.pointer:
            raise InputError(f"{path}: {where}: the harness cannot pass '{_c_param(p)}' by value",
                             hint=STREAM_HINT if p.type.strip() in STREAM_TYPES else
                             "scalars must be int, float, double, size_t … (see docs/task-format.md)")
    _check_hooks(spec, found)


def check_python_launcher(spec: TaskSpec) -> None:
    """A PyTorch implementation defines `def <launcher>(<the args' names, in order>)` at module level."""
    import ast

    path, source = spec.path, spec.kernel_path
    try:
        tree = ast.parse(source.read_text(), filename=str(source))
    except SyntaxError as error:
        raise InputError(f"{source}:{error.lineno}: not valid Python ({error.msg})") from None
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    if spec.launcher not in functions:
        raise InputError(f"{path}: launcher: {source.name} defines no function '{spec.launcher}'",
                         hint=f"def {spec.launcher}({', '.join(a.name for a in spec.args)}): ...")
    params = [a.arg for a in functions[spec.launcher].args.args]
    expected = [a.name for a in spec.args]
    if params != expected:
        raise InputError(f"{path}: args: {source.name}'s {spec.launcher}({', '.join(params)}) must take the "
                         f"launcher's arguments in order: ({', '.join(expected)})")


def _check_hooks(spec: TaskSpec, found: dict[str, Launcher]) -> None:
    """hooks.setup takes the launcher's scalar arguments in order; hooks.teardown takes none."""
    path = spec.path
    scalars = spec.scalar_args
    for kind, name in spec.hooks.items():
        where = f"hooks.{kind}"
        if name not in found:
            others = [n for n in found if n != spec.launcher]
            raise InputError(f"{path}: {where}: '{name}' is not an extern \"C\" function defined in "
                             f"{spec.kernel_path.name} (found: {', '.join(others) or 'only the launcher'})",
                             hint=_did_you_mean(name, others))
        params = found[name].params
        if kind == "teardown":
            if params:
                raise InputError(f"{path}: {where}: {name} takes {len(params)} parameter(s); teardown takes none "
                                 f"(extern \"C\" void {name}(void))")
            continue
        expected = ", ".join(f"{a.dtype} {a.name}" for a in scalars) or "void"
        if len(params) != len(scalars) or any(p.pointer for p in params):
            raise InputError(f"{path}: {where}: {name}({', '.join(_c_param(p) for p in params) or 'void'}) must take "
                             f"the launcher's scalar arguments in order ({expected})",
                             hint=f'extern "C" int {name}({expected}) returning 0 on success')
        for a, p in zip(scalars, params, strict=True):
            compatible = c_type_dtypes(p.type)
            if compatible is not None and a.dtype not in compatible:
                raise InputError(f"{path}: {where}: parameter '{_c_param(p)}' of {name} does not match the "
                                 f"launcher's scalar {a.name} ({a.dtype})", hint=f"expected ({expected})")


def _c_param(p: Param) -> str:
    return f"{'const ' if p.const else ''}{p.type}{'*' if p.pointer else ''} {p.name}".strip()
