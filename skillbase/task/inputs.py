"""A task's inputs: the host arrays every call is fed, and the user's Python code a spec names.

`make_inputs` fills every `in`/`inout` array of a spec at one set of sizes from one seeded
generator: dense distributions (`dist:`), structured sparse generators (`generator:` with `parts:`)
and the user's own `hook: file.py:function`. The same module loads the Python reference
(`reference: {python: file.py:function}`). A user function that raises, returns the wrong thing or
the wrong shape is one `InputError` line naming the spec and the hook.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from skillbase.errors import InputError
from skillbase.task import generators
from skillbase.task.dtypes import DTYPES, to_storage
from skillbase.task.expr import parse_expr

if TYPE_CHECKING:  # the spec module calls into this one; at run time the types come from it
    from skillbase.task.spec import ArgSpec, ResolvedTask, TaskSpec

__all__ = ["make_inputs", "reference_callable", "load_callable"]


def make_inputs(spec: TaskSpec, sizes: str | dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """Host arrays for every in/inout argument, shaped, in storage dtype (bf16 as uint16 bits).

    One `numpy.random.Generator(PCG64(seed))` feeds every argument in spec order, so the same
    (sizes, seed) always gives the same bytes.
    """
    resolved = spec.resolve(sizes)
    rng = np.random.Generator(np.random.PCG64(seed))
    out: dict[str, np.ndarray] = {}
    hooks_done: set[str] = set()
    for a in spec.args:
        if not a.pointer or a.poisoned or a.name in out:
            continue
        init = a.init or (generators.DEFAULT_FLOAT_INIT if DTYPES[a.dtype].is_float else generators.DEFAULT_INT_INIT)
        where = f"args[{a.index}].init"
        if "generator" in init:
            _fill_structured(spec, a, init, resolved, rng, out)
        elif "hook" in init:
            if init["hook"] not in hooks_done:
                hooks_done.add(init["hook"])
                _fill_hook(spec, init["hook"], resolved, rng, out)
        elif a.name not in _structured_members(spec):
            try:
                flat = generators.dense(init, a.dtype, resolved.arg(a.name).numel, rng)
            except ValueError as error:
                raise InputError(f"{spec.path}: {where}: {error}") from None
            out[a.name] = flat.reshape(resolved.arg(a.name).shape)
    return out


def _structured_members(spec: TaskSpec) -> set[str]:
    """Arrays a structured generator fills (they have no init of their own)."""
    return {name for a in spec.args if a.init and "generator" in a.init for name in a.init["parts"].values()}


def _fill_structured(spec: TaskSpec, a: ArgSpec, init: dict, resolved: ResolvedTask, rng, out: dict) -> None:
    where = f"args[{a.index}].init"
    s = resolved.sizes
    rows = spec.int_at(parse_expr(init["rows"]), s, f"{where}.rows")
    cols = spec.int_at(parse_expr(init["cols"]), s, f"{where}.cols")
    nnz = spec.int_at(parse_expr(init["nnz"]), s, f"{where}.nnz") if "nnz" in init else None
    width = spec.int_at(parse_expr(init["width"]), s, f"{where}.width") if "width" in init else None
    parts = init["parts"]
    try:
        arrays = generators.structured(init, rows, cols, nnz, width,
                                       {part: spec.arg(name).dtype for part, name in parts.items()}, rng)
    except ValueError as error:
        raise InputError(f"{spec.path}: {where}: {error} (sizes {s})") from None
    for part, name in parts.items():
        target = resolved.arg(name)
        array = arrays[part]
        if array.size != target.numel:
            raise InputError(f"{spec.path}: {where}.parts.{part}: the {init['generator']} generator made "
                             f"{array.size} elements but {name} has shape {target.shape} ({target.numel}) "
                             f"at sizes {s}", hint="make the shape match rows/cols/nnz (e.g. [nnz] with nnz: <expr>)")
        out[name] = array.reshape(target.shape)


def _fill_hook(spec: TaskSpec, hook: str, resolved: ResolvedTask, rng, out: dict) -> None:
    fn = load_callable(spec.path, hook, "init.hook")
    names = [a.name for a in spec.args if a.init and a.init.get("hook") == hook]
    try:
        produced = fn(dict(resolved.sizes), rng)
    except Exception as error:  # noqa: BLE001 - the user's hook may raise anything: report it on one line
        raise InputError(f"{spec.path}: hook {hook} raised {type(error).__name__}: {error}") from None
    if not isinstance(produced, dict):
        raise InputError(f"{spec.path}: hook {hook} returned {type(produced).__name__}, not a dict of arrays")
    for name in names:
        if name not in produced:
            raise InputError(f"{spec.path}: hook {hook} returned no array for '{name}' "
                             f"(it returned {', '.join(map(str, produced)) or 'nothing'})")
        target = resolved.arg(name)
        array = np.asarray(produced[name])
        if array.size != target.numel:
            raise InputError(f"{spec.path}: hook {hook}: '{name}' has {array.size} elements, "
                             f"the spec's shape {target.shape} needs {target.numel}")
        out[name] = _to_declared(array, target.dtype, f"{spec.path}: hook {hook}: '{name}'").reshape(target.shape)


def reference_callable(spec: TaskSpec) -> Callable | None:
    """The python reference `fn(inputs, sizes) -> {output name: array}`, or None."""
    if not spec.reference or "python" not in spec.reference:
        return None
    return load_callable(spec.path, spec.reference["python"], "reference.python")


def _to_declared(array: np.ndarray, dtype_name: str, where: str) -> np.ndarray:
    """A hook's array in the declared dtype's storage, refusing a change of kind (floats into ints)."""
    if dtype_name == "bf16":
        if array.dtype == np.uint16:
            return array  # already bf16 bits
        if array.dtype.kind != "f":
            raise InputError(f"{where} is {array.dtype}, expected floats or uint16 bf16 bits")
        return to_storage(array, "bf16")
    storage = DTYPES[dtype_name].storage
    if array.dtype != storage and not np.can_cast(array.dtype, storage, casting="same_kind"):
        raise InputError(f"{where} is {array.dtype}, cannot become {dtype_name} without changing kind")
    return array.astype(storage, copy=False)


def load_callable(spec_path: Path, ref: str, field_name: str) -> Callable:
    """The function `ref` (`file.py:function`, the file beside the spec) names."""
    file_part, _, fn_name = ref.rpartition(":")
    file = (spec_path.parent / file_part).resolve()
    if not file.is_file():
        raise InputError(f"{spec_path}: {field_name}: {file_part} not found next to the spec")
    module = _load_module(str(file))
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise InputError(f"{spec_path}: {field_name}: {file_part} defines no function '{fn_name}'")
    return fn


@cache
def _load_module(path: str):
    # Cached: hooks and references are imported once per process, however many sizes they fill.
    spec = importlib.util.spec_from_file_location(f"skillbase_task_hook_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # noqa: BLE001 - the user's module may raise anything: report it on one line
        raise InputError(f"{path}: importing it raised {type(error).__name__}: {error}") from None
    return module
