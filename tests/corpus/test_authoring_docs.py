"""docs/writing-skills.md and docs/writing-rules.md, followed as written in a temporary folder.

Every ```sh block line that starts with `skillbase` (optionally after `VAR=value`) is run through
the real entry point and must exit 0; every block whose info string has `file=PATH` is written to
PATH (keeping the `# yaml-language-server` line the scaffold wrote). Lines marked `# needs a GPU`
are skipped, and `skills search` lines run only when the `search` extra is installed.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from skillbase.cli import main

REPO = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.S | re.M)


def steps(doc: str) -> list[tuple[str, str, str]]:
    """(kind, target, content): ("sh", "", line) or ("file", path, text), in document order."""
    out = []
    for match in BLOCK.finditer((REPO / "docs" / doc).read_text(encoding="utf-8")):
        lang, info, body = match.groups()
        target = re.search(r"file=(\S+)", info)
        if target:
            out.append(("file", target.group(1), body))
        elif lang == "sh":
            out += [("sh", "", line.strip()) for line in body.splitlines() if line.strip()]
    return out


def _search_available() -> bool:
    from skillbase.corpus import search

    return search.available()


def follow(doc: str, folder: Path, monkeypatch, capsys) -> list[str]:
    ran = []
    for kind, target, content in steps(doc):
        if kind == "file":
            path = folder / target
            keep = ""
            if path.is_file():
                first = path.read_text(encoding="utf-8").splitlines()[0]
                if first.startswith("# yaml-language-server:") and not content.startswith("# yaml-language-server:"):
                    keep = first + "\n"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(keep + content, encoding="utf-8")
            continue
        if "needs a GPU" in content:
            continue
        words = shlex.split(content, comments=True)
        env = {}
        while words and re.match(r"^[A-Z_]+=", words[0]):
            name, value = words.pop(0).split("=", 1)
            env[name] = value
        if not words or words[0] != "skillbase":
            continue
        if "search" in words and not _search_available():
            continue
        with monkeypatch.context() as m:
            for name, value in env.items():
                m.setenv(name, value)
            try:
                main(words[1:])
                code = 0
            except SystemExit as exit_:
                code = exit_.code or 0
        out, err = capsys.readouterr()
        assert code == 0, f"`{content}` exited {code}\n{out}\n{err}"
        ran.append(content)
    return ran


@pytest.fixture
def workdir(tmp_path, monkeypatch, tmp_path_factory):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SKILLBASE_SKILL_PATH", raising=False)
    # one search cache per test session: the built-in sections are embedded once
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.getbasetemp() / "skillbase-cache"))
    return tmp_path


def test_docs_have_steps():
    for doc in ("writing-skills.md", "writing-rules.md"):
        kinds = {kind for kind, _, _ in steps(doc)}
        assert kinds == {"sh", "file"}, doc


def test_writing_skills_then_rules_as_documented(workdir, monkeypatch, capsys):
    ran = follow("writing-skills.md", workdir, monkeypatch, capsys)
    assert any(" new cmp.popc_bitcount" in r for r in ran)
    skill = workdir / "my-skills" / "cmp" / "cmp.popc_bitcount" / "skill.yaml"
    assert skill.read_text().startswith("# yaml-language-server: $schema=")
    from skillbase.corpus.load import load_corpus
    from skillbase.corpus.scaffold import todo_problems

    corpus = load_corpus(["my-skills"])                     # strict: no problem anywhere
    assert corpus.get("cmp.popc_bitcount").origin == "my-skills"
    assert corpus.get("cmp.popc_bitcount").has_example
    assert todo_problems(skill) == []

    ran = follow("writing-rules.md", workdir, monkeypatch, capsys)
    assert any("rules test" in r for r in ran)
    rule = workdir / "my-rules" / "propose" / "cmp.popc_bitcount.bit-loop.yaml"
    assert rule.read_text().startswith("# yaml-language-server: $schema=")
    monkeypatch.setenv("SKILLBASE_SKILL_PATH", "my-skills")
    from skillbase.corpus.load import skill_ids
    from skillbase.engine.validate import validate

    report = validate([workdir / "my-rules"], skill_ids=skill_ids())     # as `rules validate` does
    assert report.errors == [] and report.rules == 1


def test_example_task_matches_the_task_schema(workdir, monkeypatch, capsys):
    import json

    import jsonschema
    import yaml

    from skillbase.config import schemas_dir

    text = next(c for k, t, c in steps("writing-skills.md") if k == "file" and t.endswith("task.yaml"))
    schema = json.loads((schemas_dir() / "task.schema.json").read_text())
    jsonschema.validate(yaml.safe_load(text), schema)
