"""Fuzzed command lines over the reading commands (advise, evidence, rules validate, runs, explain,
report, skills, bench list/report): every one exits 0-3 with no traceback, in time, and no file that
existed before is changed or lost (a command may add its own output, never overwrite)."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import shutil
from pathlib import Path

from fuzz_kit import examples, snapshot, survive, unchanged
from hypothesis import given
from hypothesis import strategies as st
from profile_kit import plain_report

from skillbase.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPORT = plain_report("naive_gemm")


@functools.cache
def workspace(root: Path) -> Path:
    """Files the commands are pointed at: good, broken, binary, missing, a folder, a small store."""
    from skillbase.evidence import load_ncu_report
    from skillbase.run.store import RunStore

    root.mkdir(parents=True, exist_ok=True)
    evidence = load_ncu_report(REPORT).to_json()
    (root / "ev.json").write_text(evidence)
    (root / "nan.json").write_text(evidence.replace('"launches": 1', '"launches": NaN', 1))
    (root / "bin.json").write_bytes(os.urandom(512))
    (root / "report.ncu-rep").write_bytes(REPORT.read_bytes())
    (root / "cut.ncu-rep").write_bytes(REPORT.read_bytes()[:3000])
    (root / "folder").mkdir()
    (root / "page.html").write_text("the user's own page")
    store = RunStore.open(root / "store")
    run_id = store.create_run(str(root / "k.cu"), "k", {"settings": {}})
    with store.transaction() as tx:
        tx.finish_step(run_id, "baseline", {"runtime_us": 1.0})
    store.close()
    return root


@functools.cache
def originals(root: Path) -> dict[str, str]:
    """The workspace's own files as first written: what no command may change (stores a command
    creates in a new folder, e.g. `runs --store nowhere`, are its output, not the user's files)."""
    return snapshot(workspace(root))


FILES = ["ev.json", "nan.json", "bin.json", "report.ncu-rep", "cut.ncu-rep", "folder", "missing.json", "page.html"]
NUMBERS = st.one_of(st.integers(-5, 20).map(str), st.sampled_from(["0", "-1", "9" * 40, "1e3", "nan", "", "x"]))
WORDS = st.one_of(st.text(max_size=12), st.sampled_from(["(a+)+$", "[", "sgemm", "run_1", "run_" + "9" * 30,
                                                            "mem.coalesce", "nope.nope", "--", "-h", "--json"]))


def commands(w: Path):
    file = st.sampled_from(FILES).map(lambda name: str(w / name))
    store = st.sampled_from([str(w / "store"), str(w / "folder"), str(w / "bin.json"), str(w / "nowhere")])
    return st.one_of(
        st.tuples(st.just(["advise", "--evidence"]), file, st.lists(st.one_of(
            st.tuples(st.just("--top"), NUMBERS), st.tuples(st.just("--kernel"), WORDS),
            st.tuples(st.just("--why-not"), WORDS), st.just(("--json",)), st.just(("--all",))), max_size=3)),
        st.tuples(st.just(["advise", "--report"]), file, st.just([])),
        st.tuples(st.just(["evidence"]), file, st.just([])),
        st.tuples(st.just(["runs", "--store"]), store, st.lists(st.tuples(st.just("--limit"), NUMBERS), max_size=1)),
        st.tuples(st.just(["explain"]), WORDS, st.lists(st.tuples(st.just("--store"), store), max_size=1)),
        st.tuples(st.just(["report"]), WORDS, st.lists(st.tuples(st.just("--store"), store), max_size=1)),
        st.tuples(st.just(["skills", "show"]), WORDS, st.just([])),
        st.tuples(st.just(["rules", "validate", "--rules-dir"]), file, st.just([])),
        st.tuples(st.just(["bench", "report", "--results"]), file, st.lists(st.tuples(
            st.just("--html"), st.just(str(w / "page.html"))), max_size=1)),
        st.tuples(st.just([]), WORDS, st.lists(WORDS.map(lambda x: (x,)), max_size=3)),
    )


def run_cli(argv: list[str]) -> int:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    assert "Traceback" not in err.getvalue() + out.getvalue(), err.getvalue()[-2000:]
    assert code in (0, 1, 2, 3), (code, argv, err.getvalue()[-500:])
    return code


@examples(150)
@given(data=st.data())
def test_command_lines_exit_cleanly_and_change_no_file(tmp_path_factory, data):
    root = tmp_path_factory.getbasetemp() / "fuzz-cli-workspace"
    w = workspace(root)
    head, target, options = data.draw(commands(w))
    argv = [*head, target, *(part for option in options for part in option)]
    before = originals(root)
    cwd = os.getcwd()
    out_dir = tmp_path_factory.mktemp("out")
    os.chdir(out_dir)   # `report` writes into the current folder by default
    try:
        survive("cli args", lambda: run_cli(argv))
    finally:
        os.chdir(cwd)
        shutil.rmtree(out_dir, ignore_errors=True)
    unchanged(before, snapshot(w))
