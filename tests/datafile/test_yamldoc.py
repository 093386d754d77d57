"""The one YAML reader (issue 22): every file kind goes through it, and hostile files end in one
`file:line` InputError, quickly: alias bombs, deep nesting, duplicate keys, huge or non-UTF-8 files."""

from __future__ import annotations

import time

import pytest

from skillbase.datafile.yamldoc import MAX_BYTES, MAX_DEPTH, load_yaml
from skillbase.errors import InputError

BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))


def refused(tmp_path, text: str | bytes, name: str = "f.yaml") -> str:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    start = time.monotonic()
    with pytest.raises(InputError) as caught:
        load_yaml(path)
    assert time.monotonic() - start < 5
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    return message


def test_an_alias_bomb_is_refused_at_its_first_alias(tmp_path):
    assert len(BILLION_LAUGHS) < 1500
    assert ":2:" in refused(tmp_path, BILLION_LAUGHS) and "alias" in refused(tmp_path, BILLION_LAUGHS)


def test_even_one_alias_or_merge_is_refused(tmp_path):
    assert "alias" in refused(tmp_path, "base: &b {x: 1}\nother:\n  <<: *b\n")


@pytest.mark.parametrize("text", [
    "[" * 5000 + "]" * 5000,
    "".join(" " * i + "- \n" for i in range(0, 4000, 2)),
    "when:\n" + "".join("  " * (i + 1) + "all:\n" + "  " * (i + 1) + "- \n" for i in range(200)),
])
def test_deep_nesting_is_an_error_never_a_recursion_error(tmp_path, text):
    assert "nest" in refused(tmp_path, text)


def test_nesting_up_to_the_limit_is_fine(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))
    assert load_yaml(path).data is not None


def test_a_duplicate_key_names_both_lines(tmp_path):
    message = refused(tmp_path, "id: one\nkind: propose\nid: two\n")
    assert ":3:1: duplicate key `id` (first at line 1)" in message


def test_same_key_in_different_mappings_is_fine(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("a: {x: 1}\nb: {x: 2}\n")
    assert load_yaml(path).data == {"a": {"x": 1}, "b": {"x": 2}}


def test_size_and_encoding(tmp_path):
    assert "larger than" in refused(tmp_path, b"# " + b"x" * MAX_BYTES)
    assert ":2: not UTF-8" in refused(tmp_path, b"a: 1\nb: \xff\xfe\n")
    (tmp_path / "folder.yaml").mkdir()
    with pytest.raises(InputError, match="is a folder"):
        load_yaml(tmp_path / "folder.yaml")


def test_exponent_floats_only_where_asked(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("rtol: 1e-4\n")
    assert load_yaml(path, exponent_floats=True).data == {"rtol": 1e-4}
    assert load_yaml(path).data == {"rtol": "1e-4"}


@pytest.mark.parametrize("kind", ["task", "skill", "rule", "cases", "thresholds", "vocabulary", "bench"])
def test_every_file_kind_is_read_through_the_one_loader(tmp_path, kind):
    """A bomb in each kind of file is a one-line InputError from its own loader (not a hang, not a traceback)."""
    from toy_rules import make_ruleset

    bomb = BILLION_LAUGHS
    if kind == "task":
        from skillbase.task.spec import load_task

        (tmp_path / "k.cu").write_text('extern "C" void k(float* x, int n) {}\n')
        (tmp_path / "k.task.yaml").write_text(bomb)
        call = lambda: load_task(tmp_path / "k.cu")   # noqa: E731
    elif kind == "skill":
        from skillbase.corpus.load import validate_corpus

        (tmp_path / "skills" / "mem" / "mem.bomb").mkdir(parents=True)
        (tmp_path / "skills" / "mem" / "mem.bomb" / "skill.yaml").write_text(bomb)
        call = lambda: _raise_problems(validate_corpus([tmp_path / "skills"]))   # noqa: E731
    elif kind == "bench":
        from skillbase.bench.suite import discover

        (tmp_path / "ops" / "x").mkdir(parents=True)
        (tmp_path / "ops" / "x" / "op.yaml").write_text(bomb)
        call = lambda: discover(tmp_path)   # noqa: E731
    else:
        from skillbase.engine.validate import validate

        root = make_ruleset(tmp_path / "rules")
        target = {"rule": root / "derive" / "bottleneck.memory.yaml",
                  "cases": root / "derive" / "bottleneck.memory.cases.yaml",
                  "thresholds": root / "thresholds" / "ncu-defaults.yaml",
                  "vocabulary": root / "vocabulary.yaml"}[kind]
        target.write_text(bomb)
        call = lambda: _raise_problems(validate([root]).problems)   # noqa: E731
    start = time.monotonic()
    with pytest.raises(InputError, match="alias"):
        call()
    assert time.monotonic() - start < 10


def _raise_problems(result):
    problems = result[1] if isinstance(result, tuple) else result
    aliases = [p for p in problems if "alias" in str(p)]
    if aliases:
        raise InputError(str(aliases[0]))
    raise AssertionError(f"no alias problem in {[str(p) for p in problems]}")


def test_a_binary_file_is_not_text(tmp_path):
    from skillbase.datafile.yamldoc import read_text

    (tmp_path / "nul.cu").write_bytes(b"__global__ void k() {}\n\0\0")
    with pytest.raises(InputError, match=r"nul.cu:2: not text \(a NUL byte\)"):
        read_text(tmp_path / "nul.cu")


def test_resume_with_a_binary_candidate_is_one_line(tmp_path):
    import os
    import subprocess
    import sys

    (tmp_path / "cand.cu").write_bytes(os.urandom(2048) + b"\xff")
    done = subprocess.run([sys.executable, "-m", "skillbase", "resume", "run_1", "--candidate",
                           str(tmp_path / "cand.cu"), "--store", str(tmp_path / "store")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "cand.cu" in done.stderr
    assert not (tmp_path / "store").exists()
