"""tools/kernelbench_rebuild.py: the KernelBench run's store made again from a problem folder, report.json's run
numbering and the committed first kernels (issue 20). On the self-written problems of tests/fixtures/kernelbench,
with a report and a kernels archive written here in the shape of the committed ones (a problem of the folder left
out, as the run left out level1/5); the committed report and archive themselves are checked against each other.

    python -m pytest -q -p no:cacheprovider tests/kernelbench/test_rebuild.py
"""

from __future__ import annotations

import importlib.util
import io
import json
import random
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from skillbase.errors import InputError
from skillbase.kernelbench.importer import import_problems
from skillbase.run.pending import list_pending

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "kernelbench_rebuild.py"
FIXTURES = REPO / "tests" / "fixtures" / "kernelbench"
KERNELS = FIXTURES / "kernels"
_spec = importlib.util.spec_from_file_location("kernelbench_rebuild", TOOL)
rebuild = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rebuild)

# The runs of a fresh batch over these three (level1/1_Matmul left out): level, then problem number.
RUNS = [("level1_2_ReLU", "level1/2_ReLU.py", 1),
        ("level1_3_Sum_reduction_over_a_dimension", "level1/3_Sum_reduction_over_a_dimension.py", 1),
        ("level2_2_Gemm_Scale_ReLU", "level2/2_Gemm_Scale_ReLU.py", 2)]


def report(runs=RUNS, batch="batch_1") -> dict:
    """A kernelbench report --json in the committed one's shape (only the fields the rebuild reads, and a few)."""
    problems = [{"problem": problem, "level": level, "task": task, "batch": batch, "run": f"run_{n}",
                 "status": "paused", "verified": False} for n, (task, problem, level) in enumerate(runs, 1)]
    random.shuffle(problems)      # the rebuild orders them by run, not by their place in the file
    return {"schema_version": 1, "problems": problems}


def archive(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def kernels(tmp: Path, by_run: dict[int, str]) -> Path:
    """first-kernels-session10.tar.gz's shape: candidates/run_N.cu and run_N.meta.json."""
    files = {}
    for n, name in by_run.items():
        files[f"candidates/run_{n}.cu"] = (KERNELS / name).read_bytes()
        meta = {"model": "a test", "wall_s": round(random.uniform(1, 30), 1), "reply_tokens": random.randint(50, 900)}
        files[f"candidates/run_{n}.meta.json"] = json.dumps(meta).encode()
    return archive(tmp / "kernels.tar.gz", files)


def run_tool(tmp: Path, store: Path, runs=RUNS, by_run=None, *extra: str) -> subprocess.CompletedProcess:
    report_path = tmp / "report.json"
    report_path.write_text(json.dumps(report(runs)))
    kernels_path = kernels(tmp, by_run if by_run is not None else {1: "relu.cu", 3: "gemm_scale_relu.cu"})
    return subprocess.run([sys.executable, str(TOOL), str(FIXTURES), "--store", str(store), "--report",
                           str(report_path), "--kernels", str(kernels_path), "--import-reports", *extra],
                          capture_output=True, text=True, cwd=REPO)


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("kb") / "kb_tasks"
    made = import_problems(FIXTURES, out, problems=("2_ReLU", "2_Gemm_Scale_ReLU"))
    assert len(made.imported) == 2, made.to_json()
    return out


def test_the_store_is_made_with_the_reports_run_numbers_and_the_kernels_in_their_runs(tmp_path):
    store = tmp_path / "store"
    done = run_tool(tmp_path, store)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith(
        f"{store}: batch_1, 3 runs waiting for their first kernel; 2 with a candidate in "
        f"{store / 'batches' / 'batch_1' / 'candidates'}, 1 without")
    waiting = list_pending(store)
    assert [(p.run, p.operator, p.batch, p.key, p.kind) for p in waiting] == \
        [(f"run_{n}", task, "batch_1", "g/a0", "generator") for n, (task, _, _) in enumerate(RUNS, 1)]
    assert {p.candidate_path.parent for p in waiting} == {store / "batches" / "batch_1" / "candidates"}
    present = {p.run: p.candidate_path.read_text() for p in waiting if p.candidate_path.exists()}
    assert present == {"run_1": (KERNELS / "relu.cu").read_text(),
                       "run_3": (KERNELS / "gemm_scale_relu.cu").read_text()}
    assert json.loads(waiting[0].meta_path.read_text())["model"] == "a test"
    assert not (store / "kb_tasks" / "level1_1_Matmul").exists()        # only the report's problems
    # what `skillbase pending` prints lists the three, with the candidate paths the kernels were written to
    shown = subprocess.run([sys.executable, "-m", "skillbase", "pending", "--store", str(store)],
                           capture_output=True, text=True).stdout
    assert shown.count("generator round 0") == 3 and str(waiting[2].candidate_path) in shown

    # A second rebuild never replaces the store unless told to.
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    again = run_tool(tmp_path, store)
    assert (again.returncode, again.stdout, again.stderr) == (
        2, "", f"error: {store} exists: the rebuild never replaces a store (pass --force to replace it)\n")
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before
    forced = run_tool(tmp_path, store, RUNS, {1: "relu.cu"}, "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert [p.run for p in list_pending(store) if p.candidate_path.exists()] == ["run_1"]


def test_a_report_whose_run_numbers_a_fresh_batch_would_not_give_fails_before_the_batch_is_recorded(tmp_path):
    store = tmp_path / "store"
    swapped = [RUNS[2], RUNS[1], RUNS[0]]
    done = run_tool(tmp_path, store, swapped, {})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: the imported tasks: the run numbering differs from report.json (2 run(s)): "
                                  "run_1 is level1_2_ReLU, report.json says level2_2_Gemm_Scale_ReLU; "
                                  "run_3 is level2_2_Gemm_Scale_ReLU, report.json says level1_2_ReLU")
    assert not (store / "runs.sqlite3").exists()


def test_the_batch_check_names_each_run_whose_task_differs_and_a_missing_or_extra_run():
    want = [{"task": t} for t, _, _ in RUNS]
    rebuild.check_order(want, [t for t, _, _ in RUNS], "the started batch")
    with pytest.raises(InputError, match=r"the started batch: .* \(1 run\(s\)\): run_3 is missing, report.json says "
                                         "level2_2_Gemm_Scale_ReLU"):
        rebuild.check_order(want, [t for t, _, _ in RUNS[:2]], "the started batch")
    with pytest.raises(InputError, match=r"run_4 is level1_1_Matmul, report.json says no run"):
        rebuild.check_order(want, [t for t, _, _ in RUNS] + ["level1_1_Matmul"], "the started batch")


def test_a_kernel_is_laid_into_a_run_only_when_it_defines_that_tasks_launcher_exactly(imported):
    rebuild.check_launcher(imported / "level1_2_ReLU", (KERNELS / "relu.cu").read_text(), "run_1")
    rebuild.check_launcher(imported / "level2_2_Gemm_Scale_ReLU", (KERNELS / "gemm_scale_relu.cu").read_text(),
                           "run_3")
    with pytest.raises(InputError, match=r"^run_3\.cu does not fit level2_2_Gemm_Scale_ReLU: .*args: "):
        rebuild.check_launcher(imported / "level2_2_Gemm_Scale_ReLU", (KERNELS / "relu.cu").read_text(), "run_3")
    renamed = (KERNELS / "relu.cu").read_text().replace("kb_forward", "kb_forward_v2")
    with pytest.raises(InputError, match="'kb_forward' is not an extern \"C\" function"):
        rebuild.check_launcher(imported / "level1_2_ReLU", renamed, "run_1")


@pytest.mark.parametrize(("files", "message"), [
    ({"candidates/run_1.cu": b"x"}, "candidates/run_1.cu has no candidates/run_1.meta.json beside it"),
    ({"candidates/run_2.meta.json": b'{"model": "m"}'}, "candidates/run_2.meta.json has no candidates/run_2.cu"),
    ({"candidates/run_1.cu": b"x", "candidates/run_1.meta.json": b"[]"}, "is not a JSON object naming"),
    ({"candidates/run_1.cu": b"x", "candidates/run_1.meta.json": b"{}"}, "is not a JSON object naming"),
    ({"../run_1.cu": b"x"}, "unexpected member '../run_1.cu'"),
    ({"candidates/run_01.cu": b"x"}, "unexpected member 'candidates/run_01.cu'"),
    ({"candidates/notes.txt": b"x"}, "unexpected member 'candidates/notes.txt'"),
])
def test_the_kernels_archive_holds_only_paired_run_files(tmp_path, files, message):
    with pytest.raises(InputError, match=message.replace(".", r"\.").replace("[", r"\[")):
        rebuild.read_kernels(archive(tmp_path / "k.tar.gz", files))


def test_a_report_not_numbered_from_run_1_in_one_batch_is_refused():
    problems = report()["problems"]
    with pytest.raises(InputError, match="not run_1 .. run_2"):
        rebuild.expected_runs({"problems": [p for p in problems if p["run"] != "run_2"]})
    with pytest.raises(InputError, match="from batch_1, batch_2, not batch_1 alone"):
        rebuild.expected_runs({"problems": problems + [{**problems[0], "run": "run_4", "batch": "batch_2"}]})
    with pytest.raises(InputError, match="lists no problem"):
        rebuild.expected_runs({"problems": []})


def test_sizes_other_than_the_committed_import_reports_are_refused():
    committed = [{"problem": "level1/2_ReLU.py", "imported": True, "symbols": {"batch_size": 16, "dim": 16384}}]
    rebuild.check_symbols([{"problem": "level1/2_ReLU.py", "symbols": {"batch_size": 16, "dim": 16384}}], committed)
    with pytest.raises(InputError, match=r"1 problem\(s\) import with other sizes .*level1/2_ReLU.py: "
                                         r"\{'batch_size': 16\}"):
        rebuild.check_symbols([{"problem": "level1/2_ReLU.py", "symbols": {"batch_size": 16}}], committed)


def test_force_replaces_only_a_store(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="is not a run store"):
        rebuild.clear_store(folder, force=True)
    assert (folder / "keep.txt").read_text() == "mine"


def test_the_committed_kernels_belong_to_the_committed_reports_runs():
    """What the rebuild can check without KernelBench: every run of report.json has its committed first kernel,
    paired with its meta, defining the KernelBench launcher; the import reports list each problem imported."""
    runs = rebuild.expected_runs(json.loads(rebuild.REPORT.read_text()))
    assert len(runs) == 49 and "level1/5_Matrix_scalar_multiplication.py" not in {r["problem"] for r in runs}
    found = rebuild.read_kernels(rebuild.KERNELS)
    assert sorted(found) == list(range(1, 50))
    assert all(b'extern "C" void kb_forward(' in source for source, _ in found.values())
    committed = {p["problem"]: p for path in rebuild.IMPORT_REPORTS for p in json.loads(path.read_text())["problems"]}
    assert all(committed[r["problem"]]["imported"] for r in runs)


def test_the_tool_refuses_a_missing_archive_with_one_line(tmp_path):
    done = subprocess.run([sys.executable, str(TOOL), str(FIXTURES), "--store", str(tmp_path / "s"), "--kernels",
                           str(tmp_path / "none.tar.gz")], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert f"{tmp_path / 'none.tar.gz'}: no such file" in done.stderr and not (tmp_path / "s").exists()


def _problem_lines() -> set[str]:
    """Every line of the store's problems (but the docstrings' quotes), however short."""
    return {line.strip() for _, problem, _ in RUNS for line in (FIXTURES / problem).read_text().splitlines()
            if line.strip() not in ("", '"""')}


@pytest.mark.parametrize("lead", ["", "    ", "// ", "#", " * ", "/* ", '"""'])
def test_a_problem_line_is_a_quote_whole_behind_any_indent_or_comment_lead_and_not_inside_a_line_of_ours(lead):
    line = random.choice(sorted(t for t in _problem_lines() if len(t) >= rebuild.MIN_LINE and t[0].isalpha()))
    lines = {rebuild.bare_line(t) for t in _problem_lines()}
    kernel = (KERNELS / "relu.cu").read_text()
    assert rebuild.quotes(kernel.encode(), lines) is None
    assert rebuild.quotes(f"{kernel}\n{lead}{line}\n".encode(), lines) == line
    # the same words inside a longer line of our own are not the problem's line (a comment naming a size)
    assert rebuild.quotes(f"{kernel}\n{lead}sizes as in the problem: {line}, here\n".encode(), lines) is None


def _json(command: str, store: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "skillbase", *command.split(), "--store", str(store), "--json"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return done.stdout.replace(str(store), "STORE")


def test_a_saved_state_quotes_no_problem_and_restores_the_same_report_and_pending(tmp_path):
    store = tmp_path / "store"
    assert run_tool(tmp_path, store).returncode == 0
    # a file the store gained after the rebuild (a newer kernel) travels; one quoting its problem does not
    extra = store / "batches" / "batch_1" / "candidates" / "run_2.cu"
    extra.write_text(f"// {random.random()}\n" + (KERNELS / "relu.cu").read_text())
    quoting = store / "runs" / "run_2" / "notes.md"
    quoting.write_text(random.choice(sorted(t for t in _problem_lines() if len(t) >= rebuild.MIN_LINE)) + "\n")
    # a run whose first kernel failed waits at its debugger prompt (judged compile-only here, as a trip would judge it)
    from skillbase.run.session import resume_run
    from skillbase.run.store import RunStore

    db = RunStore.open(store)
    run_1 = db.get_run("run_1")
    db.set_manifest(run_1.id, {**run_1.manifest, "gpu_run": False})
    db.close()
    resume_run("run_1", store_path=store, candidate=(KERNELS / "relu_broken.cu").read_text())
    debugger = store / "runs" / "run_1" / "g-a1.prompt.md"
    assert "undeclared_size" in debugger.read_text()
    state = tmp_path / "state.tar.gz"
    saved = rebuild.save_state(state, store)
    assert "runs/run_2/notes.md" in saved["left_out"] and saved["bytes"] == state.stat().st_size
    lines = _problem_lines()
    with tarfile.open(state) as tar:
        texts = {m.name: tar.extractfile(m).read().decode(errors="replace") for m in tar.getmembers() if m.isfile()}
    assert "skillbase-store/runs.sqlite3" in texts and "skillbase-store/batches/batch_1/candidates/run_2.cu" in texts
    assert not any(Path(n).name in ("kb_task.py", "model.task.yaml") or n.endswith(".prompt.md") for n in texts)
    assert [(n, line) for n, text in texts.items() for line in map(rebuild.bare_line, text.splitlines())
            if line in lines and len(line) >= rebuild.MIN_LINE] == []
    with pytest.raises(InputError, match="exists"):
        rebuild.save_state(state, store)

    restored = tmp_path / "restored"
    done = run_tool(tmp_path, restored, RUNS, None, "--state", str(state))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "missing: runs/run_2/notes.md" in done.stdout and "differs" not in done.stdout
    assert "1 waiting prompt(s) written again" in done.stdout   # the generator's prompts come with the batch
    for prompt in sorted(store.glob("runs/run_*/*.prompt.md")):   # the coders' prompts, as the store had them
        assert (restored / prompt.relative_to(store)).read_text() == prompt.read_text(), prompt
    assert _json("kernelbench report", restored) == _json("kernelbench report", store)
    assert _json("pending", restored) == _json("pending", store)
    assert extra.read_bytes() == (restored / extra.relative_to(store)).read_bytes()
    again = run_tool(tmp_path, restored, RUNS, None, "--state", str(state))
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "never replaces a store" in again.stderr
