"""`skillbase kernelbench import`: KernelBench problems (a checkout or a folder the user names) -> tasks.

Each problem file is run by the probe in its own process with a timeout (it is untrusted code), and
either becomes a task folder under `out` (task_files.py) or gets a one-line reason in the report.
The user's problem files are read, never changed; an existing task folder is kept unless `force`
(replaced whole) or `refresh` (its adapter files brought up to date when its specs would not change).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from skillbase.documents import versioned
from skillbase.errors import InputError
from skillbase.files import write_bytes_atomically
from skillbase.kernelbench.task_files import (
    ADAPTER_FILES,
    ADAPTER_VERSION,
    LAUNCHER,
    SPEC_FILES,
    arg_names,
    kb_task_source,
    task_yaml,
)
from skillbase.task.dtypes import DTYPES

__all__ = ["ImportReport", "ImportedTask", "ProblemImport", "STATUSES", "find_problems", "import_problems",
           "imported_tasks", "refresh_command", "PROBE_TIMEOUT_S"]

PROBE_TIMEOUT_S = 120.0
# What became of one problem: a new task folder; an earlier one's adapter rewritten, or already current
# (--refresh); an earlier one left as it was because its specs would change (--refresh); no task (a reason).
STATUSES = ("imported", "refreshed", "unchanged", "refused", "skipped")
CURRENT = ("imported", "refreshed", "unchanged")   # a task folder with today's adapter at task_dir
log = logging.getLogger(__name__)


@dataclass
class ProblemImport:
    """One problem's outcome: its task folder, or the one-line reason it was not imported."""
    problem: str                  # e.g. level1/1_Square_matrix_multiplication_.py
    level: int | None
    status: str = "skipped"       # one of STATUSES
    task_dir: Path | None = None
    reason: str | None = None
    symbols: dict[str, int] = field(default_factory=dict)
    work_model: bool = False      # flops derived (else the roofline floor is the memory bound alone)
    scalars: dict[str, dict] = field(default_factory=dict)   # scalar inputs: name -> {type, value, dtype}
    notes: list[str] = field(default_factory=list)

    @property
    def imported(self) -> bool:
        return self.status in CURRENT

    def as_dict(self) -> dict:
        return {"problem": self.problem, "level": self.level, "status": self.status, "imported": self.imported,
                "task_dir": str(self.task_dir) if self.task_dir else None, "reason": self.reason,
                "symbols": self.symbols, "work_model": self.work_model, "scalars": self.scalars, "notes": self.notes}


@dataclass
class ImportReport:
    source: Path
    out: Path
    problems: list[ProblemImport]
    refresh: bool = False

    @property
    def imported(self) -> list[ProblemImport]:
        return [p for p in self.problems if p.imported]

    @property
    def rejected(self) -> list[ProblemImport]:
        return [p for p in self.problems if not p.imported]

    def to_json(self) -> dict:
        return versioned("kernelbench-import", {
            "source": str(self.source), "out": str(self.out), "refresh": self.refresh, "imported": len(self.imported),
            "rejected": len(self.rejected), "problems": [p.as_dict() for p in self.problems]})


def _level_of(path: Path) -> int | None:
    match = next((re.fullmatch(r"level(\d+)", part) for part in reversed(path.parts[:-1])
                  if re.fullmatch(r"level(\d+)", part)), None)
    return int(match.group(1)) if match else None


def find_problems(path: Path, level: int | None = None, problems: tuple[str, ...] = ()) -> list[Path]:
    """The problem files under `path` (a file, a folder of problems, or a checkout with levelN/ folders,
    at its top or under KernelBench/), of one level when given, filtered by id or name."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder", hint="give a KernelBench checkout or a folder of problems")
    if path.is_file():
        found = [path]
    else:
        roots = [path / "KernelBench"] if (path / "KernelBench").is_dir() else [path]
        if level is not None:
            folders = [r / f"level{level}" for r in roots if (r / f"level{level}").is_dir()]
            if not folders and _level_of(path / "x") == level:
                folders = [path]
            if not folders:
                raise InputError(f"{path}: no level{level}/ folder", hint="omit --level to read every .py file here")
        else:
            folders = roots
        found = sorted({p for f in folders for p in f.rglob("*.py") if not p.name.startswith("_")},
                       key=lambda p: (_level_of(p) or 0, _number(p), p.name))
    if problems:
        wanted = set(problems)
        found = [p for p in found if p.stem in wanted or p.name in wanted or p.stem.split("_")[0] in wanted]
        missing = wanted - {p.stem for p in found} - {p.name for p in found} - {p.stem.split("_")[0] for p in found}
        if missing:
            raise InputError(f"{path}: no problem {', '.join(sorted(missing))}",
                             hint="name problems by number (1) or file name (1_Square_matrix_multiplication_)")
    if not found:
        raise InputError(f"{path}: no KernelBench problem files (*.py)")
    return found


def _number(path: Path) -> int:
    head = path.stem.split("_")[0]
    return int(head) if head.isdigit() else 1 << 30


def import_problems(path: Path, out: Path, level: int | None = None, problems: tuple[str, ...] = (),
                    force: bool = False, timeout_s: float = PROBE_TIMEOUT_S,
                    progress: Callable[[str], None] = lambda message: None, refresh: bool = False) -> ImportReport:
    """Import every problem found; each rejected one gets its reason, the others a task folder. With
    `refresh` a problem whose folder exists is probed and generated as usual, then `refresh_task` decides."""
    if refresh and force:
        raise InputError("--refresh keeps each task folder's specs and model.cu, --force replaces the whole folder: "
                         "give one of the two")
    path = Path(path)
    out = Path(out)
    # An --out inside PATH holds earlier imports' kb_task.py files: never problems to import.
    files = [f for f in find_problems(path, level, problems) if not f.resolve().is_relative_to(out.resolve())]
    results = []
    for i, file in enumerate(files, 1):
        problem_level = _level_of(file.resolve()) if _level_of(file.resolve()) is not None else level
        label = f"level{problem_level}/{file.name}" if problem_level is not None else file.name
        progress(f"[{i}/{len(files)}] {label}")
        result = ProblemImport(label, problem_level)
        folder = out / (f"level{problem_level}_{file.stem}" if problem_level is not None else file.stem)
        if folder.exists() and not (force or refresh):
            result.reason = f"{folder} exists (use --force to replace it, --refresh to update its adapter)"
        else:
            facts = probe(file, timeout_s)
            if "reason" in facts:
                result.reason = facts["reason"]
            elif refresh and folder.exists():
                refresh_task(folder, task_texts(file, facts, result), result)
            else:
                write_task(folder, task_texts(file, facts, result), result)
        results.append(result)
    return ImportReport(path, out, results, refresh)


def probe(file: Path, timeout_s: float) -> dict:
    """The probe's description of one problem file, run in its own process (in a scratch folder)."""
    with tempfile.TemporaryDirectory(prefix="skillbase-kb-") as scratch:
        result = Path(scratch) / "probe.json"
        try:
            done = subprocess.run([sys.executable, "-m", "skillbase.kernelbench.probe", str(file.resolve()),
                                   str(result)], cwd=scratch, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"reason": f"timed out after {timeout_s:.0f} s while probing it (raise --timeout)"}
        if not result.is_file():
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
            return {"reason": f"the probe died (exit {done.returncode}): {tail}"}
        return json.loads(result.read_text())


def task_texts(file: Path, facts: dict, result: ProblemImport) -> dict[str, str]:
    """The files of one problem's task folder, by name (task_files.py says what each is); `result` gets
    what the report shows of them."""
    symbols, dims = facts["symbols"], facts["dims"]
    n_in = len(facts["inputs"])
    scalars = facts.get("scalars") or [None] * n_in
    inputs, params, output = arg_names(facts["input_names"], n_in, [p[0] for p in facts["params"]])
    # The arrays: tensor inputs, parameters and buffers, the output (dims holds their shapes, in this order).
    arrays = [n for n, s in zip(inputs, scalars, strict=True) if s is None] + params + [output]
    dtypes = [t for t, s in zip(facts["inputs"], scalars, strict=True) if s is None] + \
        [p[1] for p in facts["params"]] + [facts["output"]]
    shapes = dict(zip(arrays, ([d if d != "0" else "1" for d in shape] or ["1"] for shape in dims), strict=True))
    kinds = dict(zip(arrays, dtypes, strict=True))
    hook = {"hook": "kb_task.py:make_inputs"}
    # A scalar input is a launcher argument by value, in its place among forward()'s inputs.
    args = [{"name": n, "dtype": t, "value": int(s[1]) if s[0] == "bool" else s[1]} if s is not None else
            {"name": n, "dtype": t, "shape": shapes[n], "role": "in", "init": hook}
            for n, t, s in zip(inputs, facts["inputs"], scalars, strict=True)]
    args += [{"name": n, "dtype": kinds[n], "shape": shapes[n], "role": "in", "init": hook} for n in params]
    args.append({"name": output, "dtype": kinds[output], "shape": shapes[output], "role": "out"})
    args += [{"name": s, "dtype": "i32", "value": s} for s in symbols]
    bytes_expr = " + ".join(f"{DTYPES[kinds[n]].itemsize}*" + "*".join(d if re.fullmatch(r"\w+", d) else f"({d})"
                                                                       for d in shapes[n]) for n in arrays)
    scalar_args = {n: {"type": s[0], "value": s[1], "dtype": t}
                   for n, t, s in zip(inputs, facts["inputs"], scalars, strict=True) if s is not None}
    description = f"KernelBench {result.problem}: {_summary(file)}"
    notes = [n if len(n) <= 200 else n[:197] + "..." for n in facts["notes"]]
    notes += [f"{n}: a Python {a['type']} input, passed as the launcher's {a['dtype']} scalar {n} = {a['value']!r} "
              "(the value get_inputs() returns)" for n, a in scalar_args.items()]
    adapter = {"symbols": list(symbols), "inputs": inputs,
               "scalars": {n: [a["type"], a["value"]] for n, a in scalar_args.items()},
               "params": [[n, p[0]] for n, p in zip(params, facts["params"], strict=True)],
               "buffers": facts["buffers"], "output": output, "mutates_buffers": facts["mutates_buffers"],
               "dtypes": kinds}
    texts = {"kb_task.py": kb_task_source(file.read_text(), adapter, args)}
    for name, torch_impl in zip(SPEC_FILES, (False, True), strict=True):
        texts[name] = task_yaml(description, args, symbols, facts["irregular"], facts["flops"], bytes_expr,
                                torch_impl, notes)
    texts["problem.json"] = json.dumps({
        "problem": result.problem, "level": result.level, "source": str(file.resolve()), "launcher": LAUNCHER,
        "adapter": ADAPTER_VERSION, "symbols": symbols, "irregular": facts["irregular"], "flops": facts["flops"],
        "params": adapter["params"], "scalars": scalar_args, "mutates_buffers": facts["mutates_buffers"],
        "notes": notes}, indent=1) + "\n"
    result.symbols, result.scalars, result.notes = symbols, scalar_args, notes
    result.work_model = facts["flops"] is not None
    return texts


def write_task(folder: Path, texts: dict[str, str], result: ProblemImport) -> None:
    """A new task folder (an earlier one at `folder` is replaced whole: --force)."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, text in texts.items():
        (folder / name).write_bytes(text.encode())
    result.status, result.task_dir = "imported", folder


def refresh_task(folder: Path, texts: dict[str, str], result: ProblemImport) -> None:
    """An earlier import's task folder brought up to date: when the specs it would get now are byte for byte
    its own (the task a run works on must not change under it), its adapter files are replaced, each
    atomically; `model.cu` and everything else stay. Otherwise the folder is left exactly as it was."""
    current = {name: (folder / name).read_bytes() if (folder / name).is_file() else None
               for name in (*SPEC_FILES, *ADAPTER_FILES)}
    changed = [f"{name} {'differs' if current[name] is not None else 'is missing'}" for name in SPEC_FILES
               if current[name] != texts[name].encode()]
    if changed:
        result.status = "refused"
        result.reason = (f"specs changed: import with --force into a new folder ({folder}: {', '.join(changed)}; "
                         "left as it was)")
        return
    stale = [name for name in ADAPTER_FILES if current[name] != texts[name].encode()]
    # kb_task.py first: a refresh stopped between the two leaves problem.json's old version, still reported.
    for name in stale:
        write_bytes_atomically(folder / name, texts[name].encode())
    result.status, result.task_dir = ("refreshed" if stale else "unchanged"), folder


def _summary(file: Path) -> str:
    """The Model's docstring's first line, else the file name in words."""
    match = re.search(r'class Model\b[^:]*:\s*(?:"""|\'\'\')\s*(.+)', file.read_text())
    text = match.group(1).strip() if match else file.stem.split("_", 1)[-1].replace("_", " ")
    return text.rstrip('"\' ')[:160]


@dataclass(frozen=True)
class ImportedTask:
    """One task folder an import wrote: its problem (`level1/2_ReLU.py`), level and the kernel it needs."""
    folder: Path
    problem: str
    level: int
    adapter: int = 0           # problem.json's adapter version (0: before the numbering)
    source: str | None = None  # the problem file it was imported from

    @property
    def kernel(self) -> Path:
        return self.folder / "model.cu"


def imported_tasks(root: Path, problems: tuple[str, ...] = ()) -> list[ImportedTask]:
    """The task folders under `root` (what `kernelbench import --out root` wrote), in level and problem
    order; `problems` picks by folder name (`level1_2_ReLU`), problem (`level1/2_ReLU.py`), file name
    (`2_ReLU`) or `level1/2` (level and number). Tasks with an older adapter than this version writes
    still load: one warning line names how many and the `import --refresh` command that updates them."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"{root}: no such folder", hint="skillbase kernelbench import PATH --out DIR writes the tasks")
    found = []
    for facts_path in sorted(root.glob("*/problem.json")):
        try:
            facts = json.loads(facts_path.read_text())
        except (OSError, ValueError):
            raise InputError(f"{facts_path}: not JSON", hint="import the problem again with --force") from None
        if (facts_path.parent / "model.task.yaml").is_file():
            found.append(ImportedTask(facts_path.parent, facts["problem"], int(facts.get("level") or 0),
                                      int(facts.get("adapter") or 0), facts.get("source")))
    if not found:
        raise InputError(f"{root}: no imported KernelBench task (a folder with problem.json and model.task.yaml)",
                         hint="skillbase kernelbench import PATH --out DIR writes them")
    found.sort(key=lambda t: (t.level, _number(Path(t.problem)), t.problem))
    chosen = _chosen(root, found, problems) if problems else found
    old = [t for t in chosen if t.adapter < ADAPTER_VERSION]
    if old:
        log.warning("warning: %d of %d task(s) under %s have an older adapter than this skillbase writes "
                    "(problem.json's adapter < %d): they run, without its fixes; update them with: %s",
                    len(old), len(chosen), root, ADAPTER_VERSION, refresh_command(root, old))
    return chosen


def refresh_command(root: Path, tasks: list[ImportedTask]) -> str:
    """The `kernelbench import --refresh` command that updates these tasks of `root` and imports nothing else:
    PATH is the one problem file, else the folder their files share (named by --problems); `PATH` itself
    where problem.json does not say, or their files lie in different checkouts."""
    sources = [Path(t.source) for t in tasks if t.source]
    names = [Path(t.problem).stem for t in tasks] if len(tasks) > 1 else []
    path = "PATH"
    if len(sources) == len(tasks) == 1:
        path = str(sources[0])
    elif len(sources) == len(tasks):
        common = Path(os.path.commonpath([s.parent for s in sources]))
        # Above a checkout's levelN/ folders (two checkouts) the command would read every .py file below.
        if all(len(s.relative_to(common).parts) <= 2 for s in sources):
            path = str(common)
    words = ["skillbase", "kernelbench", "import", path, "--refresh", "--out", str(root)]
    for name in names:
        words += ["--problems", name]
    return " ".join(w if w == "PATH" else shlex.quote(w) for w in words)


def task_names(folder: str, problem: str, level: int) -> set[str]:
    """Every name `--problems` may give a task by: folder, problem, file name, `levelN/number`."""
    stem = Path(problem).stem
    return {folder, problem, stem, f"level{level}/{stem.split('_')[0]}"}


def _chosen(root: Path, found: list[ImportedTask], problems: tuple[str, ...]) -> list[ImportedTask]:
    """The tasks `problems` names (see `imported_tasks`)."""

    def names(task: ImportedTask) -> set[str]:
        return task_names(task.folder.name, task.problem, task.level)

    missing = [p for p in problems if not any(p in names(t) for t in found)]
    if missing:
        raise InputError(f"{root}: no imported task {', '.join(missing)}",
                         hint="name a task by folder (level1_2_ReLU), problem (level1/2_ReLU.py) or level1/2")
    return [t for t in found if names(t) & set(problems)]
