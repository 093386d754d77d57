"""Load a built kernel library with ctypes and call its extern "C" launcher with typed arguments.

Pointers travel as `c_void_p`, scalars as the C type of their dtype (f16/bf16 scalars as their
16-bit patterns: the x86-64 ABI passes a 2-byte struct such as `__half` in an integer register,
exactly like a `uint16_t`). `argtypes` is always set, so a wrong argument count or type is a
Python error before any native code runs, never a garbled stack.

Each library is loaded from a private copy: `dlopen` of one path twice returns one handle, and a
candidate that shares a handle with the reference would share its static state (a stale-output
cheat could read what the reference computed).

nvcc links the CUDA runtime statically and does not export it, so the harness cannot ask the
candidate's runtime for its last error. If the library exports `int skillbase_last_error(void)`
(a shim the build may add), it is called after every launch; otherwise sticky errors surface at
the next device synchronisation and non-sticky launch errors (an invalid configuration) leave the
poisoned outputs unwritten, which verification reports.

Hooks (the task spec's `hooks:`): `setup(<the launcher's scalar args, in order>)` returns 0 on
success and is called by `setup()` whenever the scalars change (each size), never inside a timed
window; `teardown(void)` by `teardown()` when the session closes. A hook the spec names but the
library lacks is a LoadError when the library loads; a setup that returns non-zero (or leaves a
CUDA error pending in the library's runtime) is a HookError.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from skillbase.errors import SkillbaseError

CTYPES: dict[str, type] = {
    "f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
    "u32": ctypes.c_uint32, "i8": ctypes.c_int8, "u8": ctypes.c_uint8,
    "f16": ctypes.c_uint16, "bf16": ctypes.c_uint16,
}


class LoadError(SkillbaseError):
    """The library cannot be loaded or lacks the launcher."""


def scalar_to_ctypes(value: Any, dtype: str):
    """A spec scalar value -> the ctypes object passed by value."""
    if dtype == "f16":
        return ctypes.c_uint16(int(np.array([value], dtype=np.float16).view(np.uint16)[0]))
    if dtype == "bf16":
        from skillbase.task.dtypes import float32_to_bf16_bits

        return ctypes.c_uint16(int(float32_to_bf16_bits(np.array([value], dtype=np.float32))[0]))
    return CTYPES[dtype](value)


def argtypes_for(args: Sequence[Any]) -> list[type]:
    """ctypes argtypes for a spec's argument list (objects with `.pointer` and `.dtype`)."""
    return [ctypes.c_void_p if a.pointer else CTYPES[a.dtype] for a in args]


class NativeLauncher:
    """One loaded library's launcher: `launcher(pointers_and_scalars)` calls it."""

    def __init__(self, library: str | Path, name: str, args: Sequence[Any], label: str = "candidate",
                 hooks: dict[str, str] | None = None):
        self.label = label
        self.name = name
        self.args = list(args)
        self.hooks = {k: v for k, v in (hooks or {}).items() if v}
        source = Path(library)
        if not source.is_file():
            raise LoadError(f"{label}: library {source} does not exist", hint="build it first")
        self._dir = tempfile.mkdtemp(prefix=f"skillbase-{label}-")
        self.path = Path(self._dir) / f"{label}-{source.name}"
        shutil.copyfile(source, self.path)
        try:
            # RTLD_NOW: an unresolved symbol (a library the build did not link) fails here, clearly.
            self.lib = ctypes.CDLL(str(self.path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as error:
            raise LoadError(f"{label}: cannot load {source.name}: {_short(error)}",
                            hint="an undefined symbol usually means a library call the build does not link "
                                 "(cuBLAS, ...), which the task does not allow") from None
        try:
            self.fn = getattr(self.lib, name)
        except AttributeError:
            raise LoadError(f"{label}: {source.name} has no extern \"C\" function '{name}'",
                            hint=f'declare it as extern "C" void {name}(...) with the spec\'s arguments') from None
        self.fn.argtypes = argtypes_for(self.args)
        self.fn.restype = None
        self._setup = self._hook("setup", [CTYPES[a.dtype] for a in self.args if not a.pointer], ctypes.c_int,
                                 source.name)
        self._teardown = self._hook("teardown", [], None, source.name)
        self.setup_for: tuple | None = None    # the scalars setup last succeeded with
        self.setup_calls = 0
        self._last_error = getattr(self.lib, "skillbase_last_error", None)
        if self._last_error is not None:
            self._last_error.argtypes = []
            self._last_error.restype = ctypes.c_int
        self.calls = 0

    def _hook(self, kind: str, argtypes: list, restype, library_name: str):
        name = self.hooks.get(kind)
        if not name:
            return None
        try:
            fn = getattr(self.lib, name)
        except AttributeError:
            signature = (f"int {name}(<the launcher's scalar arguments>)" if kind == "setup" else f"void {name}(void)")
            raise LoadError(f"{self.label}: {library_name} has no extern \"C\" function '{name}' (the spec's "
                            f"hooks.{kind})", hint=f'define extern "C" {signature}') from None
        fn.argtypes = argtypes
        fn.restype = restype
        return fn

    @property
    def has_setup(self) -> bool:
        return self._setup is not None

    def setup(self, scalars: dict[str, Any]) -> bool:
        """Call hooks.setup with these scalars unless it already ran with them; True when it ran.

        The caller synchronises the device afterwards and never calls this inside a timed window."""
        if self._setup is None:
            return False
        scalar_args = [a for a in self.args if not a.pointer]
        key = self.setup_key(scalars)
        if key == self.setup_for:
            return False
        self.setup_for = None
        self.setup_calls += 1
        code = self._setup(*[scalar_to_ctypes(scalars[a.name], a.dtype) for a in scalar_args])
        call = f"{self.hooks['setup']}({', '.join(f'{k}={v}' for k, v in key)})"
        if code != 0:
            raise HookError(f"{self.label}: {call} returned {code}: the library could not be set up at this size "
                            "(hooks.setup must return 0)")
        if self._last_error is not None:
            pending = self._last_error()
            if pending != 0:
                raise HookError(f"{self.label}: {call} returned 0 but left CUDA error {pending} pending")
        self.setup_for = key
        return True

    def setup_key(self, scalars: dict[str, Any]) -> tuple:
        """What setup is keyed on: the launcher's scalar arguments, by name, in order."""
        return tuple((a.name, scalars[a.name]) for a in self.args if not a.pointer)

    def teardown(self) -> None:
        """Call hooks.teardown once, if the library has one and its setup ran (or it has no setup)."""
        if self._teardown is None or (self._setup is not None and self.setup_calls == 0):
            return
        fn, self._teardown = self._teardown, None
        self.setup_for = None
        fn()

    def arguments(self, pointers: dict[str, int], scalars: dict[str, Any]) -> list:
        out = []
        for a in self.args:
            if a.pointer:
                out.append(ctypes.c_void_p(int(pointers[a.name])))
            else:
                out.append(scalar_to_ctypes(scalars[a.name], a.dtype))
        return out

    def __call__(self, arguments: list) -> None:
        self.calls += 1
        self.fn(*arguments)
        if self._last_error is not None:
            code = self._last_error()
            if code != 0:
                raise LaunchError(f"{self.label}: the launch failed with CUDA error {code}")

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)


class LaunchError(SkillbaseError):
    """The candidate's own runtime reported a launch error."""


class HookError(LoadError):
    """hooks.setup failed (non-zero return or a pending CUDA error): the library cannot run at this size."""


def _short(error: BaseException) -> str:
    text = str(error)
    # "…/candidate-libK.so: undefined symbol: cublasCreate_v2" -> keep what follows the path.
    if ": " in text:
        text = text.split(": ", 1)[1]
    return text.strip().splitlines()[0] if text.strip() else type(error).__name__
