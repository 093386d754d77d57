"""The bench suite's files (`<suite>/ops/<operator>/`): discovery of operators and their implementations.

An operator folder holds `op.yaml` (metadata), a baseline task per dtype (`fp32.cu` + `fp32.task.yaml`,
`bf16.cu` + `bf16.task.yaml`), optional vendor implementations of the same task (`vendor_fp32.cu` +
`vendor_fp32.task.yaml`, whose spec names the libraries to link, the setup/teardown hooks and the
baseline kernel as its reference; op.yaml names the library for display), and optional
`best_<dtype>.cu` kernels found by optimization runs. The suite ships in the wheel
(`skillbase.builtin_bench`); `bench_dir()` finds it. Pure Python, no GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from skillbase import config
from skillbase.datafile.problems import suggestions
from skillbase.datafile.yamldoc import load_yaml
from skillbase.documents import versioned
from skillbase.errors import InputError

__all__ = ["DTYPES", "KINDS", "REFERENCES", "Implementation", "Operator", "Suite", "bench_dir", "discover", "select"]

DTYPES = ("fp32", "bf16")
KINDS = ("baseline", "vendor", "best", "torch", "torch_compile")
# The references a result's speedup may be stated against (`bench report --against`).
REFERENCES = ("baseline", "vendor", "torch", "torch_compile")


def bench_dir(explicit: str | Path | None = None) -> Path:
    """The suite's folder: `explicit` (`--dir`), $SKILLBASE_BENCH_DIR, else the suite shipped in the package."""
    return config.bench_dir(explicit)


@dataclass(frozen=True)
class Implementation:
    op: str
    name: str                    # fp32 | bf16 | vendor_fp32 | best_bf16 ...
    kind: str                    # baseline | vendor | best
    dtype: str                   # fp32 | bf16
    cu_path: Path                # the implementation's file: a .cu, or the operator's torch_impl.py for torch kinds
    spec_path: Path              # the task spec that verifies and times it (its own, else the baseline's)
    baseline_path: Path          # the baseline kernel of the same op and dtype (speedups are against it)
    library: str | None = None   # vendor: cublas | cusparse | cufft | cub ... (op.yaml, for display); torch: torch
    # From the implementation's task spec (the harness reads them from there too):
    link: tuple[str, ...] = ()   # libraries linked (spec `link:`)
    # spec `hooks.setup`: extern "C" int setup(<the launcher's scalar args>), at each size, untimed
    setup: str | None = None
    teardown: str | None = None  # spec `hooks.teardown`: extern "C" void teardown(void), when the session closes


@dataclass
class Operator:
    name: str
    category: str
    summary: str
    path: Path
    bf16: bool
    bf16_reason: str | None
    implementations: list[Implementation] = field(default_factory=list)
    no_vendor: str | None = None     # why the operator has no vendor-library implementation (op.yaml)

    def to_dict(self) -> dict:
        return {"name": self.name, "category": self.category, "summary": self.summary, "bf16": self.bf16,
                "bf16_reason": self.bf16_reason, "no_vendor": self.no_vendor,
                "implementations": [{"name": i.name, "kind": i.kind, "dtype": i.dtype, "library": i.library,
                                     "path": str(i.cu_path)} for i in self.implementations]}


@dataclass(frozen=True)
class Suite:
    """The operators of one suite folder (`bench list`)."""

    operators: list[Operator]

    @property
    def implementation_count(self) -> int:
        return sum(len(o.implementations) for o in self.operators)

    def to_json(self) -> dict:
        """`bench list --json`: the document `bench-list`."""
        return versioned("bench-list", {"operators": [o.to_dict() for o in self.operators]})


def _read_yaml(path: Path) -> dict:
    data = load_yaml(path).data or {}
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping")
    return data


def discover(root: Path | None = None) -> list[Operator]:
    """Every operator under `root/ops` (sorted by name) with its implementations."""
    root = bench_dir(root)
    ops_dir = root / "ops"
    if not ops_dir.is_dir():
        raise InputError(f"{ops_dir}: no bench operators here", hint="set SKILLBASE_BENCH_DIR to the suite's folder")
    operators = []
    for folder in sorted(p for p in ops_dir.iterdir() if (p / "op.yaml").is_file()):
        meta = _read_yaml(folder / "op.yaml")
        bf16 = bool(meta.get("bf16", True))
        op = Operator(name=meta.get("name", folder.name), category=meta.get("category", "other"),
                      summary=meta.get("summary", ""), path=folder, bf16=bf16, bf16_reason=meta.get("bf16_reason"),
                      no_vendor=meta.get("no_vendor"))
        vendors = meta.get("vendor") or {}
        for dtype in DTYPES:
            base_cu = folder / f"{dtype}.cu"
            if not base_cu.is_file():
                continue
            base_spec = folder / f"{dtype}.task.yaml"
            op.implementations.append(Implementation(op.name, dtype, "baseline", dtype, base_cu, base_spec, base_cu))
            vendor_name = f"vendor_{dtype}"
            vendor_cu = folder / f"{vendor_name}.cu"
            if vendor_cu.is_file():
                info = vendors.get(vendor_name) or {}
                spec = folder / f"{vendor_name}.task.yaml"
                if not spec.is_file():
                    raise InputError(f"{vendor_cu}: no task spec {spec.name} beside it",
                                     hint="a vendor implementation is its own task (link, hooks, allow, the "
                                          "baseline as reference): run bench/tools/generate.py")
                raw = _read_yaml(spec)
                hooks = raw.get("hooks") or {}
                op.implementations.append(Implementation(
                    op.name, vendor_name, "vendor", dtype, vendor_cu, spec, base_cu,
                    library=info.get("library"), link=tuple(raw.get("link") or ()), setup=hooks.get("setup"),
                    teardown=hooks.get("teardown")))
            torch_spec = folder / f"torch_{dtype}.task.yaml"
            if meta.get("torch") and torch_spec.is_file():
                # One PyTorch file, run two ways under the same task: eager, and through torch.compile.
                torch_file = folder / meta["torch"]
                for kind in ("torch", "torch_compile"):
                    op.implementations.append(Implementation(op.name, f"{kind}_{dtype}", kind, dtype, torch_file,
                                                             torch_spec, base_cu, library="torch"))
            best_cu = folder / f"best_{dtype}.cu"
            if best_cu.is_file():
                op.implementations.append(Implementation(op.name, f"best_{dtype}", "best", dtype, best_cu, base_spec,
                                                         base_cu))
        operators.append(op)
    return operators


def select(operators: list[Operator], names=None, dtype: str | None = None,
           impl: str = "baseline") -> list[Implementation]:
    """The implementations to run: `impl` baseline | vendor | best (best falls back to the baseline) | torch |
    torch_compile."""
    if impl not in KINDS:
        raise InputError(f"--impl {impl}: expected one of {', '.join(KINDS)}")
    by_name = {o.name: o for o in operators}
    if names:
        unknown = [n for n in names if n not in by_name]
        if unknown:
            close = suggestions(unknown[0], by_name)
            raise InputError(f"unknown operator {unknown[0]}",
                             hint=f"did you mean {close[0]}?" if close else "see `skillbase bench list`")
        chosen = [by_name[n] for n in names]
    else:
        chosen = operators
    out = []
    for o in chosen:
        for d in DTYPES:
            if dtype and d != dtype:
                continue
            impls = [i for i in o.implementations if i.dtype == d]
            if impl == "best":
                pick = [i for i in impls if i.kind == "best"] or [i for i in impls if i.kind == "baseline"]
            else:
                pick = [i for i in impls if i.kind == impl]
            out.extend(pick[:1])
    return out
