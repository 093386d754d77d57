"""Call a PyTorch implementation of a task (a `kernel: torch_impl.py` spec) exactly like a native launcher.

A torch implementation is a Python file defining `def <launcher>(<the launcher's arguments>)`: it
receives a torch tensor for each pointer argument (shaped as the spec says, in the argument's dtype;
BF16 storage viewed as torch.bfloat16) and a Python number for each scalar, and writes its outputs
in place (`out.copy_(...)`, `torch.xxx(..., out=out)`). `TorchLauncher` has NativeLauncher's
interface (`arguments`, `__call__`, `setup`, `teardown`, `close`), so the session, verification,
the launch-stream probe and timing treat it like any candidate:

- the tensors are zero-copy views (DLPack) of the harness's own CuPy buffers, built in
  `arguments()`, which timing calls outside the timed window: the same fresh, poisoned buffers a
  native launcher gets, and the same input-unchanged checks and L2 flushes apply;
- calls run on the harness's launch stream: torch's current stream must be the legacy default
  stream the native launchers and the harness's events use (checked when the launcher loads);
- `setup(scalars)` (each size, outside every timed window, like hooks.setup) runs the function once
  on scratch tensors of that size: torch's lazy initialisation (cuBLAS handles, the caching
  allocator's blocks) and, with `compile=True`, `torch.compile`'s compilation happen there, never
  inside a probe or a timed call;
- it runs in the same isolated worker process as every candidate (one per evaluation).

Shapes come from the spec: each size symbol is a scalar argument of the launcher (every bench task
is written so), which `setup`/`arguments` read back to resolve the shapes.
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from pathlib import Path
from typing import Any

from skillbase.harness.native import HookError, LoadError, NativeLauncher

__all__ = ["TorchLauncher", "launcher_for", "symbol_arguments", "tensor_shapes", "torch_missing",
           "warm_up_tensors"]

# Task dtypes -> torch dtype names (the harness stores bf16 as 16-bit patterns: viewed as bfloat16).
TORCH_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16", "i32": "int32",
                "i64": "int64", "i8": "int8", "u8": "uint8"}


# The warm-up's inputs: generated like the checks' inputs, from a seed none of them uses.
WARM_UP_SEED = 987_654_321


def torch_missing() -> str | None:
    """Why a torch implementation cannot run on this machine (one line), or None when it can import torch."""
    if importlib.util.find_spec("torch") is None:
        return "PyTorch is not installed (pip install torch)"
    return None


class TorchLauncher:
    """One PyTorch implementation's function: `launcher(launcher.arguments(pointers, scalars))` calls it."""

    def __init__(self, source: str | Path, spec: Any, label: str = "candidate", compile: bool = False):
        self.label = label
        self.spec = spec
        self.name = spec.launcher
        self.args = list(spec.args)
        self.compile = compile
        self.calls = 0
        self.setup_calls = 0
        self.setup_for: tuple | None = None
        source = Path(source)
        if not source.is_file():
            raise LoadError(f"{label}: {source} does not exist")
        missing = torch_missing()
        if missing:
            raise LoadError(f"{label}: {source.name} needs PyTorch: {missing}")
        unsupported = [a.name for a in self.args if a.pointer and a.dtype not in TORCH_DTYPES]
        if unsupported:
            raise LoadError(f"{label}: torch has no dtype for argument {unsupported[0]}")
        symbol_arguments(spec)      # every size symbol can be read back from the scalars
        import torch

        self.torch = torch
        if not torch.cuda.is_available():
            raise LoadError(f"{label}: this PyTorch build has no CUDA ({torch.__version__})",
                            hint="install a CUDA build of torch on the GPU machine")
        if torch.cuda.current_stream().cuda_stream != 0:
            raise LoadError(f"{label}: torch's current stream is not the default stream the harness launches on")
        # A private copy, imported under a private name: two launchers never share a module's state.
        self._dir = tempfile.mkdtemp(prefix=f"skillbase-{label}-")
        self.path = Path(self._dir) / f"{label}_{source.stem}.py"
        shutil.copyfile(source, self.path)
        module_spec = importlib.util.spec_from_file_location(f"skillbase_torch_{label}_{id(self)}", self.path)
        module = importlib.util.module_from_spec(module_spec)
        try:
            module_spec.loader.exec_module(module)
        except Exception as error:  # noqa: BLE001 - any error in the file is its load failure, in one line
            raise LoadError(f"{label}: {source.name} does not import: {type(error).__name__}: {error}") from None
        fn = getattr(module, self.name, None)
        if not callable(fn):
            raise LoadError(f"{label}: {source.name} defines no function '{self.name}'")
        if compile:
            # Past its recompile limit dynamo runs the function eager, silently: a "torch.compile" time would then
            # be eager's (KernelBench's adapter 1, session 25). Make that a failure of this launcher instead.
            torch._dynamo.config.fail_on_recompile_limit_hit = True
        self.fn = torch.compile(fn) if compile else fn

    # -- NativeLauncher's interface ---------------------------------------------------------------
    has_setup = True
    # Its device memory comes from torch's caching allocator, which may still grow its pool on a later call
    # (the allocation probe then asks for allocation calls on further calls before it fails the launcher).
    caching_allocator = True

    def setup_key(self, scalars: dict[str, Any]) -> tuple:
        return tuple((a.name, scalars[a.name]) for a in self.args if not a.pointer)

    def setup(self, scalars: dict[str, Any], inputs: dict[str, Any] | None = None) -> bool:
        """Warm up at this size (and compile, with compile=True) on inputs of the task's own kind: never timed.

        The inputs come from the spec's generators, so index arrays are valid sparse structures:
        arbitrary ones could send a gather out of bounds. `inputs`: host inputs at this size already
        drawn (the session passes the case it prepares: a KernelBench draw of a GB-sized input costs
        seconds); without them a set is drawn from a seed no check uses."""
        key = self.setup_key(scalars)
        if key == self.setup_for:
            return False
        self.setup_for = None
        self.setup_calls += 1
        tensors = warm_up_tensors(self.spec, scalars, host=inputs)
        try:
            self.fn(*[tensors[a.name] if a.pointer else scalars[a.name] for a in self.args])
            self.torch.cuda.synchronize()
        except Exception as error:  # noqa: BLE001 - the implementation's failure at this size, in one line
            raise HookError(f"{self.label}: the torch implementation failed its warm-up at "
                            f"{dict(key)}: {type(error).__name__}: {str(error).splitlines()[0][:300]}") from None
        del tensors
        self.setup_for = key
        return True

    def teardown(self) -> None:
        self.setup_for = None

    def arguments(self, pointers: dict[str, int], scalars: dict[str, Any]) -> list:
        """Zero-copy tensors over the harness's buffers (built outside any timed window) and the scalars."""
        import cupy as cp

        torch = self.torch
        shapes = tensor_shapes(self.spec, scalars)
        out = []
        for a in self.args:
            if not a.pointer:
                out.append(scalars[a.name])
                continue
            # BF16 travels as int16 (every DLPack consumer has it; uint16 is recent in torch), viewed as bfloat16.
            storage = "int16" if a.dtype == "bf16" else TORCH_DTYPES[a.dtype]
            numel = 1
            for d in shapes[a.name]:
                numel *= d
            itemsize = cp.dtype(storage).itemsize
            memory = cp.cuda.UnownedMemory(int(pointers[a.name]), max(numel, 1) * itemsize, owner=None)
            array = cp.ndarray((numel,), dtype=storage, memptr=cp.cuda.MemoryPointer(memory, 0))
            tensor = torch.from_dlpack(array)
            if a.dtype == "bf16":
                tensor = tensor.view(torch.bfloat16)
            out.append(tensor.view(shapes[a.name]))
        return out

    def __call__(self, arguments: list) -> None:
        self.calls += 1
        self.fn(*arguments)

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)



def warm_up_tensors(spec: Any, scalars: dict[str, Any], device: str = "cuda",
                    host: dict[str, Any] | None = None) -> dict[str, Any]:
    """Tensors for one warm-up call at the size these launcher scalars describe: the task's generated
    inputs (`host`, drawn at this size, else drawn here with seed WARM_UP_SEED), empty outputs and
    scratch. The tensors are copies: the warm-up never writes `host`."""
    import numpy as np
    import torch

    if host is None:
        sizes = {symbol: int(scalars[name]) for symbol, name in symbol_arguments(spec).items()}
        host = spec.make_inputs(sizes, WARM_UP_SEED)
    shapes = tensor_shapes(spec, scalars)
    tensors = {}
    for a in spec.args:
        if not a.pointer:
            continue
        dtype = getattr(torch, TORCH_DTYPES[a.dtype])
        if a.name in host:
            array = np.ascontiguousarray(host[a.name]).reshape(shapes[a.name])
            tensor = torch.from_numpy(array.view(np.int16) if a.dtype == "bf16" else array)
            tensors[a.name] = (tensor.view(dtype) if a.dtype == "bf16" else tensor).to(device, copy=True)
        else:
            tensors[a.name] = torch.empty(shapes[a.name], device=device, dtype=dtype)
    return tensors


def symbol_arguments(spec: Any) -> dict[str, str]:
    """{size symbol: the launcher scalar that carries it}; LoadError unless every symbol is one."""
    symbols = set(spec.presets[next(iter(spec.presets))])
    found = {a.value.text: a.name for a in spec.args if not a.pointer and a.value.text in symbols}
    if set(found) != symbols:
        raise LoadError(f"a torch implementation needs every size symbol as a launcher scalar; "
                        f"{', '.join(sorted(symbols - set(found)))} is not one",
                        hint="pass each size to the launcher as a scalar argument (value: <symbol>)")
    return found


def tensor_shapes(spec: Any, scalars: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """The shape of each pointer argument at the size these launcher scalars describe."""
    resolved = spec.resolve({symbol: int(scalars[name]) for symbol, name in symbol_arguments(spec).items()})
    return {a.name: resolved.arg(a.name).shape for a in spec.args if a.pointer}


def launcher_for(entry: dict, spec: Any, label: str) -> NativeLauncher | TorchLauncher:
    """The launcher of one job entry: {"python": torch.py, "compile": bool} or {"library": .so, "hooks": …}."""
    if entry.get("python"):
        return TorchLauncher(entry["python"], spec, label, compile=bool(entry.get("compile")))
    return NativeLauncher(entry["library"], spec.launcher, spec.args, label, hooks=entry.get("hooks"))
