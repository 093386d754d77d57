"""Rebuild the KernelBench run's store (issue 20) from a KernelBench checkout and this repository.

    python tools/kernelbench_rebuild.py KERNELBENCH --store trip/kbstore [--force]

The store itself cannot be committed (its imported tasks and prompts quote KernelBench's problems), so this
makes it again, as docs/kernelbench.md ("The H200 session") started it: the problems that
results/nvidia-h200/kernelbench/report.json lists are imported into <store>/kb_tasks (`kernelbench import`,
one call per level), the batch is started without a GPU (`kernelbench optimize --agent external
--defer-baselines --no-compile --rounds 3`), and the coders' committed first kernels
(first-kernels-session10.tar.gz: candidates/run_N.cu + run_N.meta.json) are laid into the batch's candidates
folder, so that the next trip (`STEP=resume tools/kernelbench_trip.sh`) judges them.

KERNELBENCH is a checkout (its KernelBench/levelN/ folders) or the exported `.devset/kb_public/KernelBench`.
Checked, each failing with one line and exit 2 (the store is then incomplete: fix, and rebuild with --force):
every listed problem imports, with the sizes (symbols) the committed import reports give; each run gets the
number report.json gives its problem (the order is predicted before the batch is recorded and read back from
the store after); each kernel file pairs with its meta file, names a run of the batch, and defines the launcher
of that run's task with the task's exact parameters (the check `skillbase` makes of a task's own kernel). An
existing store is never replaced without --force.

    python tools/kernelbench_rebuild.py --save-state OUT.tar.gz --store trip/kbstore [--force]
    python tools/kernelbench_rebuild.py KERNELBENCH --store NEW --state OUT.tar.gz [--force]

The store's own state (its database, artifacts, candidates, best kernels) travels between machines in a state
archive that leaves out every file quoting a problem (docs/kernelbench.md, "Keeping the store between machines"):
--save-state writes it; --state rebuilds the store as above, then lays the saved state over it, checks each
left-out file against the digest the archive records, writes each waiting prompt again (`skillbase resume`, no
GPU), and says which other files are missing.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import itertools
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from skillbase.errors import InputError
from skillbase.run.artifacts import digest_bytes

HERE = Path(__file__).resolve().parents[1] / "results" / "nvidia-h200" / "kernelbench"
REPORT = HERE / "report.json"
KERNELS = HERE / "first-kernels-session10.tar.gz"
IMPORT_REPORTS = (HERE / "kb_import_l1.json", HERE / "kb_import_l2.json")
# How the lost store's batch was started (session 10; results/nvidia-h200/kernelbench/README.md).
BATCH = ("--agent", "external", "--defer-baselines", "--no-compile", "--rounds", "3")
_MEMBER = re.compile(r"^candidates/run_(?P<n>[1-9][0-9]*)\.(?P<kind>cu|meta\.json)$")


def expected_runs(report: dict) -> list[dict]:
    """The report's problems in run order: {"run", "task", "problem", "level", "batch"}; run_1 .. run_N, one batch."""
    problems = report.get("problems") or []
    if not problems:
        raise InputError("the report lists no problem", hint="give the kernelbench report --json of the run (--report)")
    problems = sorted(problems, key=lambda p: int(p["run"][4:]) if re.fullmatch(r"run_[0-9]+", p["run"]) else 0)
    runs = [p["run"] for p in problems]
    if runs != [f"run_{n}" for n in range(1, len(runs) + 1)]:
        raise InputError(f"the report's runs are not run_1 .. run_{len(runs)} ({', '.join(runs[:4])} ...): a fresh "
                         "store numbers its runs from 1", hint="give the report of a batch started in a fresh store")
    batches = sorted({p["batch"] for p in problems})
    if batches != ["batch_1"]:
        raise InputError(f"the report's problems come from {', '.join(batches)}, not batch_1 alone",
                         hint="give the report of the store's only batch")
    return [{k: p[k] for k in ("run", "task", "problem", "level", "batch")} for p in problems]


def check_order(expected: list[dict], tasks: list[str], where: str) -> None:
    """`tasks` (task folder names, the batch's members in start order) must be the report's, run by run."""
    want = [e["task"] for e in expected]
    if tasks == want:
        return
    wrong = [f"run_{n} is {got or 'missing'}, report.json says {need or 'no run'}"
             for n, (got, need) in enumerate(itertools.zip_longest(tasks, want), 1) if got != need]
    raise InputError(f"{where}: the run numbering differs from report.json ({len(wrong)} run(s)): "
                     f"{'; '.join(wrong[:3])}{' ...' if len(wrong) > 3 else ''}",
                     hint="the store must be fresh and hold exactly report.json's problems; rebuild with --force")


def check_symbols(imported: list[dict], committed: list[dict]) -> None:
    """Each problem's size symbols as the committed import reports give them: the kernels were written for those."""
    before = {p["problem"]: p.get("symbols") for p in committed if p.get("imported")}
    changed = [f"{p['problem']}: {p.get('symbols')} (committed: {before[p['problem']]})" for p in imported
               if p["problem"] in before and p.get("symbols") != before[p["problem"]]]
    if changed:
        raise InputError(f"{len(changed)} problem(s) import with other sizes than the committed import reports: "
                         f"{changed[0]}", hint="another KernelBench commit (the run's is 423217d) or a changed "
                         "importer: the committed kernels were written for the committed sizes")


def read_kernels(archive: Path) -> dict[int, tuple[bytes, bytes]]:
    """The archive's first kernels by run number: (kernel, meta), each file's bytes as committed. Only
    candidates/run_N.cu and run_N.meta.json are allowed, each kernel with its meta and each meta with its kernel
    (the meta's file name is what names its run: it holds the coder's model, wall time and reply tokens)."""
    if not archive.is_file():
        raise InputError(f"{archive}: no such file", hint="the committed first-kernels-session10.tar.gz, or --kernels")
    files: dict[tuple[int, str], bytes] = {}
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if member.isdir() and member.name.rstrip("/") == "candidates":
                continue
            match = _MEMBER.match(member.name)
            if not match or not member.isfile():
                raise InputError(f"{archive}: unexpected member {member.name!r} (only candidates/run_N.cu and "
                                 "candidates/run_N.meta.json)", hint="pack the batch's candidates folder alone")
            files[(int(match["n"]), match["kind"])] = tar.extractfile(member).read()
    kernels: dict[int, tuple[bytes, bytes]] = {}
    for n in sorted({n for n, _ in files}):
        for has, lacks in (("cu", "meta.json"), ("meta.json", "cu")):
            if (n, lacks) not in files:
                raise InputError(f"{archive}: candidates/run_{n}.{has} has no candidates/run_{n}.{lacks} beside it",
                                 hint="each coder's kernel travels with its meta file")
        try:
            meta = json.loads(files[(n, "meta.json")])
        except ValueError:
            meta = None
        if not isinstance(meta, dict) or not meta.get("model"):
            raise InputError(f"{archive}: candidates/run_{n}.meta.json is not a JSON object naming the coder's model")
        kernels[n] = (files[(n, "cu")], files[(n, "meta.json")])
    return kernels


def check_launcher(task_dir: Path, source: str, label: str) -> None:
    """The kernel defines the launcher of the task in `task_dir` with exactly its parameters (names, order, types)."""
    from skillbase.task.spec import check_against_launcher, load_task

    spec = load_task(task_dir / "model.cu", check_launcher=False)
    with tempfile.TemporaryDirectory() as scratch:
        kernel = Path(scratch) / f"{label}.cu"
        kernel.write_text(source)
        try:
            check_against_launcher(dataclasses.replace(spec, kernel_path=kernel))
        except InputError as error:
            raise InputError(f"{label}.cu does not fit {task_dir.name}: {error.message}",
                             hint="a kernel for another run, or the task changed since it was written") from None


def skillbase(*argv: str) -> str:
    """One skillbase command in its own process (as the docs give it): its stdout; its error line if it fails."""
    started = time.perf_counter()
    print("$ skillbase " + " ".join(argv), flush=True)
    done = subprocess.run([sys.executable, "-m", "skillbase", *argv], capture_output=True, text=True)
    print(f"  ({time.perf_counter() - started:.0f} s, exit {done.returncode})", flush=True)
    if done.returncode != 0:
        raise InputError(f"skillbase {argv[0]} {argv[1] if len(argv) > 1 else ''} failed: "
                         f"{(done.stderr.strip().splitlines() or ['no message'])[-1]}")
    return done.stdout


def clear_store(store: Path, force: bool) -> None:
    if not store.exists() or (store.is_dir() and not any(store.iterdir())):
        return
    if not force:
        raise InputError(f"{store} exists: the rebuild never replaces a store", hint="pass --force to replace it")
    if not (store / "runs.sqlite3").is_file():
        raise InputError(f"{store} is not a run store (no runs.sqlite3): --force replaces only a store",
                         hint="name an empty or new folder")
    shutil.rmtree(store)


def rebuild(kernelbench: Path, store: Path, report_path: Path = REPORT, kernels_path: Path = KERNELS,
            import_reports: tuple[Path, ...] = IMPORT_REPORTS, force: bool = False, timeout_s: float = 120.0) -> dict:
    """Make the store: {"runs": how many wait, "kernels": the archive's run numbers, "present": the runs whose
    candidate is written, "candidates": the batch's candidates folder}."""
    from skillbase.kernelbench.importer import imported_tasks
    from skillbase.run.pending import list_pending

    expected = expected_runs(json.loads(Path(report_path).read_text()))
    kernels = read_kernels(Path(kernels_path))
    unknown = sorted(set(kernels) - set(range(1, len(expected) + 1)))
    if unknown:
        raise InputError(f"{kernels_path}: run_{unknown[0]}.cu names no run of the report (run_1 .. "
                         f"run_{len(expected)})", hint="give the kernels of this run (--kernels)")
    for path in import_reports:
        if not Path(path).is_file():
            raise InputError(f"{path}: no such file", hint="name the committed kb_import_l1.json / l2.json, or none")
    committed = [p for path in import_reports for p in json.loads(Path(path).read_text())["problems"]]
    clear_store(store, force)
    tasks_dir = store / "kb_tasks"
    imported: list[dict] = []
    for level in sorted({e["level"] for e in expected}):
        names = [Path(e["problem"]).stem for e in expected if e["level"] == level]
        picks = [w for name in names for w in ("--problems", name)]
        out = skillbase("kernelbench", "import", str(kernelbench), "--level", str(level), *picks, "--out",
                        str(tasks_dir), "--timeout", str(timeout_s), "--json")
        imported += json.loads(out)["problems"]
    refused = [p for p in imported if not p.get("imported")]
    missing = sorted({e["problem"] for e in expected} - {p["problem"] for p in imported})
    if refused or missing:
        what = f"{refused[0]['problem']}: {refused[0]['reason']}" if refused else f"{missing[0]} not found"
        raise InputError(f"{len(refused) + len(missing)} of the report's problems did not import ({what})",
                         hint="KERNELBENCH must hold KernelBench/level1 and level2 at commit 423217d")
    check_symbols(imported, committed)
    check_order(expected, [t.folder.name for t in imported_tasks(tasks_dir)], "the imported tasks")
    for n, (source, _meta) in kernels.items():
        check_launcher(tasks_dir / expected[n - 1]["task"], source.decode(errors="replace"), f"run_{n}")

    skillbase("kernelbench", "optimize", str(tasks_dir), *BATCH, "--store", str(store), "--json")
    waiting = list_pending(store)
    check_order(expected, [p.operator for p in sorted(waiting, key=lambda p: p.run_id)], "the started batch")
    off = [p.run for p in waiting if (p.batch, p.key, p.kind) != ("batch_1", "g/a0", "generator")]
    if off:
        raise InputError(f"{off[0]} does not wait for its first kernel (batch_1, g/a0)", hint="rebuild with --force")
    for p in waiting:
        n = p.run_id
        if n in kernels:
            if p.candidate_path.exists():
                raise InputError(f"{p.candidate_path} exists already: a fresh batch's candidates folder is empty")
            p.candidate_path.write_bytes(kernels[n][0])
            p.meta_path.write_bytes(kernels[n][1])
    present = [p.run for p in list_pending(store) if p.candidate_path.is_file()]
    return {"runs": len(waiting), "kernels": sorted(kernels), "present": present,
            "candidates": str(waiting[0].candidate_path.parent)}


# Files that quote a problem by what they are: the imported task's adapter and specs (their descriptions quote its
# docstring), the copies a run keeps of them beside best.cu, and the prompts (they show the problem's source).
QUOTING = ("kb_task.py", "problem.json", "model.task.yaml", "torch.task.yaml", "best.task.yaml")
ADAPTER_MARK = "# ---- skillbase adapter:"   # kb_task.py: the problem's own source is everything above it
MIN_LINE = 8                                  # shorter lines ("return x") say nothing of a problem
STATE = "kbstate.json"                        # the archive's record of what it left out
COMMENT_LEAD = re.compile(r"^(?:#+|//+|/\*+|\*+/?|\"\"\"|\'\'\')\s*")   # Python, C and docstring leads


def problem_lines(store: Path) -> set[str]:
    """Every line (stripped, MIN_LINE characters or more) of the problems the store's tasks hold."""
    lines = set()
    for source in store.glob("kb_tasks/*/kb_task.py"):
        own = source.read_text(errors="replace").split(ADAPTER_MARK)[0]
        lines |= {line for line in map(bare_line, own.splitlines()) if len(line) >= MIN_LINE}
    return lines


def bare_line(line: str) -> str:
    """A line stripped of its indent and a comment's lead: the form two lines are compared in."""
    return COMMENT_LEAD.sub("", line.strip())


def quotes(data: bytes, lines: set[str]) -> str | None:
    """The first line of `data` that is a line of a problem, compared whole (stripped, and behind a comment's lead
    too: a copied line stays a quote in a comment); a problem's line inside a longer line of ours ("// M = 1024
    here") is not a quote of the problem."""
    for line in map(bare_line, data.decode(errors="replace").splitlines()):
        if line in lines:
            return line
    return None


def contains_line(data: bytes, lines: set[str]) -> str | None:
    """The first problem line found anywhere in `data` (a database: its text has no lines of its own)."""
    text = data.decode(errors="replace")
    return next((line for line in lines if line in text), None)


def save_state(out: Path, store: Path, force: bool = False) -> dict:
    """Write the store's state into `out` (a store pack, skillbase.run.pack) without a file that quotes a problem;
    the archive's kbstate.json lists every file of the store with its digest, and why each left-out one is."""
    from skillbase.run.pack import pack_store

    out = Path(out)
    if out.exists() and not force:
        raise InputError(f"{out} exists", hint="pass --force to replace it, or name another file")
    if not out.name.endswith(".tar.gz"):
        raise InputError(f"{out.name}: the state archive is a .tar.gz", hint="name it e.g. kbstate.tar.gz")
    lines = problem_lines(store)
    if not lines:
        raise InputError(f"{store}: no imported KernelBench task (kb_tasks/*/kb_task.py)",
                         hint="--store the run's store")
    files, kept = {}, 0
    with tempfile.TemporaryDirectory(prefix="kbstate-") as scratch:
        full = Path(scratch) / "full.tar.gz"
        pack_store(full, store)
        with tarfile.open(full) as tar, tarfile.open(Path(scratch) / "state.tar.gz", "w:gz") as state:
            root = None
            for member in tar.getmembers():
                root, _, name = member.name.partition("/")
                data = tar.extractfile(member).read() if member.isfile() else None
                why = None
                if data is not None and name not in ("pack.json", "runs.sqlite3"):
                    line = quotes(data, lines)
                    why = ("quotes its problem by kind" if Path(name).name in QUOTING or name.endswith(".prompt.md")
                           else "quotes a line of its problem" if line else None)
                    files[name] = {"sha256": digest_bytes(data), **({"left_out": why} if why else {})}
                elif name == "runs.sqlite3" and (line := contains_line(data, lines)):
                    raise InputError(f"{store}: the database quotes a problem ({line!r}): no state archive is safe",
                                     hint="find which table holds problem text before saving")
                if why is None:
                    state.addfile(member, io.BytesIO(data) if data is not None else None)
                    kept += data is not None
            record = json.dumps({"format": 1, "files": files}, indent=1, sort_keys=True).encode()
            info = tarfile.TarInfo(f"{root}/{STATE}")
            info.size = len(record)
            state.addfile(info, io.BytesIO(record))
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(Path(scratch) / "state.tar.gz", out)
    left = sorted(n for n, f in files.items() if "left_out" in f)
    return {"archive": str(out), "bytes": out.stat().st_size, "kept": kept, "left_out": left}


def restore_state(archive: Path, store: Path) -> dict:
    """Lay a state archive over a store the rebuild has just made: the saved database and files replace the fresh
    ones, files the saved store did not hold go (a judged run's consumed first kernel must not be judged again),
    each run's best.task.yaml and kb_task.py are copied again from its task. Returns which left-out files are missing
    or come back changed."""
    from skillbase.harness.scratch import copy_spec
    from skillbase.run.pack import unpack_store
    from skillbase.run.store import RunStore

    with tarfile.open(archive) as tar:
        member = next((m for m in tar.getmembers() if m.name.endswith(f"/{STATE}")), None)
        if member is None:
            raise InputError(f"{archive}: holds no {STATE}", hint="make it with --save-state")
        files = json.loads(tar.extractfile(member).read())["files"]
    unpack_store(archive, store, force=True)
    (store / STATE).unlink()
    db = RunStore.open(store, say_moved=False)
    try:
        for run in db.list_runs():
            folder = store / "runs" / run.name
            spec = Path(run.task_path).with_name(Path(run.task_path).stem + ".task.yaml")
            if f"runs/{run.name}/best.task.yaml" in files and spec.is_file():
                copy_spec(spec, folder / "best.task.yaml")
    finally:
        db.close()
    extra = [p for p in store.rglob("*") if p.is_file() and p.relative_to(store).as_posix() not in files
             and p.name not in ("runs.sqlite3", "runs.sqlite3-wal", "runs.sqlite3-shm")]
    for path in extra:
        path.unlink()
    missing, differs = [], []
    for name, saved in sorted(files.items()):
        path = store / name
        if not path.is_file():
            missing.append(name)
        elif "left_out" in saved and digest_bytes(path.read_bytes()) != saved["sha256"]:
            differs.append(name)   # regenerated otherwise (the saved files' paths follow the store: not compared)
    return {"missing": missing, "differs": differs, "removed": sorted(p.relative_to(store).as_posix() for p in extra)}


def write_waiting_prompts(store: Path) -> list[str]:
    """Each waiting prompt the state left out, written again by `skillbase resume` (no GPU: from the task and the
    store), so that the coders can answer at once; returns the runs whose prompt was written."""
    from skillbase.run.pending import list_pending
    from skillbase.run.session import resume_run

    written = []
    for prompt in list_pending(store):
        if prompt.prompt_path is None:
            resume_run(prompt.run, store_path=store)
            written.append(prompt.run)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernelbench", type=Path, nargs="?",
                        help="KernelBench checkout or exported folder (KernelBench/levelN)")
    parser.add_argument("--store", type=Path, required=True, help="the store folder to make (e.g. trip/kbstore)")
    parser.add_argument("--report", type=Path, default=REPORT, help="the run's kernelbench report --json")
    parser.add_argument("--kernels", type=Path, default=KERNELS, help="the coders' first kernels (tar.gz)")
    parser.add_argument("--import-reports", type=Path, nargs="*", default=IMPORT_REPORTS,
                        help="committed import reports whose sizes the import must reproduce")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one problem may take to probe")
    parser.add_argument("--force", action="store_true", help="replace an existing store (or state archive)")
    parser.add_argument("--save-state", type=Path, metavar="OUT", help="write --store's state archive (.tar.gz)")
    parser.add_argument("--state", type=Path, metavar="ARCHIVE", help="lay a saved state over the rebuilt store")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        if args.save_state:
            saved = save_state(args.save_state, args.store.resolve(), args.force)
            print(f"{saved['archive']}: {saved['kept']} files of {args.store}, {saved['bytes']} bytes; "
                  f"{len(saved['left_out'])} left out (they quote a problem)")
            return 0
        if args.kernelbench is None:
            raise InputError("no KERNELBENCH folder", hint="name the checkout to rebuild from, or --save-state OUT")
        if args.state and not args.state.is_file():
            raise InputError(f"{args.state}: no such file", hint="the archive --save-state wrote")
        made = rebuild(args.kernelbench, args.store.resolve(), args.report, args.kernels, tuple(args.import_reports),
                       args.force, args.timeout)
        if args.state:
            laid = restore_state(args.state, args.store.resolve())
            rewritten = write_waiting_prompts(args.store.resolve())
    except (InputError, OSError, tarfile.TarError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"{args.store}: batch_1, {made['runs']} runs waiting for their first kernel; {len(made['present'])} with "
          f"a candidate in {made['candidates']}, {made['runs'] - len(made['present'])} without "
          f"({time.perf_counter() - started:.0f} s)")
    if args.state:
        prompts = [n for n in laid["missing"] if n.endswith(".prompt.md")]
        other = [n for n in laid["missing"] if n not in prompts]
        # the left-out prompts still absent are those of attempts already answered (their verdicts are in the store)
        answered = sum(not (args.store / n).exists() for n in prompts)
        print(f"{args.store}: the state of {args.state} laid over it; {len(laid['removed'])} file(s) the saved store "
              f"did not hold removed; {len(rewritten)} waiting prompt(s) written again, "
              f"{answered} prompt(s) of answered attempts not")
        for name in other:
            print(f"  missing: {name}")
        for name in laid["differs"]:
            print(f"  differs from the saved store: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
