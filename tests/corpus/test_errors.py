"""Broken skill files give one-line errors that name the file (and line) and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from skillbase.config import builtin_skills_dir
from skillbase.corpus.load import load_corpus, skill_ids, validate_corpus
from skillbase.errors import InputError

MODEL = builtin_skills_dir() / "mem" / "mem.coalesce" / "skill.yaml"


@pytest.fixture(autouse=True)
def _no_user_dirs(monkeypatch):
    monkeypatch.delenv("SKILLBASE_SKILL_PATH", raising=False)


def model(**changes) -> dict:
    data = yaml.safe_load(MODEL.read_text())
    data.pop("related", None)
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def write(root: Path, category: str, folder: str, data=None, text: str | None = None) -> Path:
    path = root / category / folder / "skill.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text if text is not None else yaml.safe_dump(data, sort_keys=False))
    return path


def user_errors(root: Path) -> list[str]:
    corpus, problems = validate_corpus([root], canonical=False, examples=False)
    return [str(p) for p in problems if p.severity == "error" and str(root) in p.file]


def test_a_valid_user_skill_loads_with_its_origin(tmp_path):
    write(tmp_path, "usr", "usr.my_trick", model(id="usr.my_trick", category="usr"))
    corpus = load_corpus([tmp_path])
    skill = corpus.require("usr.my_trick")
    assert skill.origin == str(tmp_path)
    assert corpus.require("mem.coalesce").origin == "built-in"


def test_missing_field_names_the_file_and_the_fix(tmp_path):
    write(tmp_path, "usr", "usr.no_how", model(id="usr.no_how", category="usr", how=None))
    errors = user_errors(tmp_path)
    assert len(errors) == 1
    assert errors[0].startswith(f"{tmp_path}/usr/usr.no_how/skill.yaml:")
    assert "field 'how' is required (add an ordered list of steps" in errors[0]
    assert "\n" not in errors[0]


def test_nested_problem_points_at_its_line(tmp_path):
    data = model(id="usr.bad_prov", category="usr")
    data["when_to_apply"]["evidence"][0]["provenance"] = "folklore"
    path = write(tmp_path, "usr", "usr.bad_prov", data)
    [error] = user_errors(tmp_path)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "folklore" in text)
    assert f"skill.yaml:{line}: field 'when_to_apply.evidence[0].provenance' is 'folklore'" in error
    assert "ncu or guide or GPA or proposal" in error


def test_id_must_equal_the_folder_name(tmp_path):
    write(tmp_path, "usr", "usr.folder_name", model(id="usr.other_name", category="usr"))
    [error] = user_errors(tmp_path)
    assert "id 'usr.other_name' does not match its folder 'usr.folder_name'" in error
    assert "rename the folder" in error


def test_skill_must_sit_in_its_category_folder(tmp_path):
    write(tmp_path, "mem", "usr.misplaced", model(id="usr.misplaced", category="usr"))
    [error] = user_errors(tmp_path)
    assert "is in category folder 'mem/'" in error and "move it to usr/usr.misplaced/" in error


def test_category_field_must_be_the_id_prefix(tmp_path):
    write(tmp_path, "usr", "usr.cat", model(id="usr.cat", category="mem"))
    [error] = user_errors(tmp_path)
    assert "category 'mem' is not the id's prefix 'usr'" in error


def test_bad_yaml_reports_file_and_line(tmp_path):
    text = MODEL.read_text().replace("id: mem.coalesce", "id: usr.yaml_bug").replace("category: mem", "category: usr")
    text = text.replace("anti_patterns:\n", "anti_patterns:\n  - Broken: a colon inside plain text: breaks\n", 1)
    path = write(tmp_path, "usr", "usr.yaml_bug", text=text)
    [error] = user_errors(tmp_path)
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "Broken: a colon" in t)
    assert error.startswith(f"{path}:{line}: invalid YAML")


def test_text_parsed_as_a_mapping_says_to_quote_it(tmp_path):
    data = model(id="usr.colon", category="usr")
    data["known_problems"] = [{"Broken": "a colon made this a mapping"}]
    write(tmp_path, "usr", "usr.colon", data)
    [error] = user_errors(tmp_path)
    assert "field 'known_problems[0]' must be text, got a mapping" in error and "quote the text" in error


def test_unknown_field_suggests_the_right_one(tmp_path):
    data = model(id="usr.typo", category="usr")
    data["summery"] = data["summary"]
    write(tmp_path, "usr", "usr.typo", data)
    [error] = user_errors(tmp_path)
    assert "unknown field 'summery'; did you mean 'summary'?" in error


def test_mechanical_kind_must_be_known(tmp_path):
    data = model(id="usr.sweep", category="usr")
    data["automation"]["mechanical"] = {"kind": "sweep", "tunables": [{"name": "BLOCK", "values": [1, 2]}]}
    write(tmp_path, "usr", "usr.sweep", data)
    [error] = user_errors(tmp_path)
    assert "field 'automation.mechanical.kind' is 'sweep', expected parameter_sweep or compile_flags" in error


def test_a_user_skill_cannot_replace_a_built_in_one(tmp_path):
    write(tmp_path, "mem", "mem.coalesce", model())
    errors = user_errors(tmp_path)
    assert len(errors) == 1
    assert "skill id 'mem.coalesce' is a built-in skill (skills/mem/mem.coalesce/skill.yaml)" in errors[0]
    with pytest.raises(InputError, match="a user skill cannot replace it"):
        load_corpus([tmp_path])


def test_duplicate_id_across_user_folders_is_an_error(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    write(first, "usr", "usr.same", model(id="usr.same", category="usr"))
    write(second, "usr", "usr.same", model(id="usr.same", category="usr"))
    with pytest.raises(InputError, match="duplicate skill id 'usr.same', already defined in"):
        load_corpus([first, second])


def test_strict_load_raises_one_line_with_a_count(tmp_path):
    write(tmp_path, "usr", "usr.a", model(id="usr.a", category="usr", how=None))
    write(tmp_path, "usr", "usr.b", model(id="usr.b", category="usr", summary=None))
    with pytest.raises(InputError) as info:
        load_corpus([tmp_path])
    message = info.value.message
    assert "\n" not in message
    assert "usr.a/skill.yaml" in message and "1 more problem(s)" in message
    assert info.value.hint.startswith("add an ordered list of steps")


def test_skill_ids_ignores_broken_user_files(tmp_path):
    write(tmp_path, "usr", "usr.broken", text="id: [unclosed\n")
    assert "mem.coalesce" in skill_ids([tmp_path])
    assert "usr.broken" not in skill_ids([tmp_path])


def test_unknown_related_id_is_reported(tmp_path):
    write(tmp_path, "usr", "usr.rel", model(id="usr.rel", category="usr", related=["mem.coalsce"]))
    [error] = user_errors(tmp_path)
    assert "related skill 'mem.coalsce' does not exist; did you mean 'mem.coalesce'?" in error


def test_advice_only_skill_marked_automatic_is_an_error(tmp_path, monkeypatch):
    import skillbase.corpus.validate as corpus_module

    monkeypatch.setattr(corpus_module, "ADVICE_ONLY_IDS", frozenset({"usr.stateful"}))
    write(tmp_path, "usr", "usr.stateful", model(id="usr.stateful", category="usr"))   # auto_apply: true
    [error] = user_errors(tmp_path)
    assert "automation.auto_apply must be false for this skill" in error
    assert "outside one launcher call" in error


def test_missing_canonical_ids_are_listed(tmp_path, monkeypatch):
    import skillbase.corpus.model as corpus_module

    monkeypatch.setattr(corpus_module, "CANONICAL_IDS", ("mem.coalesce", "zzz.not_written"))
    _, problems = validate_corpus(examples=False)
    messages = [p.message for p in problems]
    assert "1 canonical skill(s) missing: zzz.not_written" in messages


def test_example_folder_must_be_complete(tmp_path):
    path = write(tmp_path, "usr", "usr.ex", model(id="usr.ex", category="usr"))
    (path.parent / "examples").mkdir()
    (path.parent / "examples" / "before.cu").write_text("// before\n")
    _, problems = validate_corpus([tmp_path], canonical=False)
    mine = [p for p in problems if "usr.ex" in p.file]
    assert [(p.severity, p.message) for p in mine] == [("error", "example incomplete: missing after.cu, task.yaml")]


def test_missing_examples_folder_is_a_warning(tmp_path):
    write(tmp_path, "usr", "usr.noex", model(id="usr.noex", category="usr"))
    _, problems = validate_corpus([tmp_path], canonical=False)
    mine = [p for p in problems if "usr.noex" in p.file]
    assert [(p.severity, p.message) for p in mine] == [("warning", "no examples/ folder")]


def test_user_folders_from_the_environment(tmp_path, monkeypatch):
    write(tmp_path, "usr", "usr.env", model(id="usr.env", category="usr"))
    monkeypatch.setenv("SKILLBASE_SKILL_PATH", str(tmp_path))
    assert "usr.env" in skill_ids()


def test_unknown_id_suggests_the_closest(tmp_path):
    corpus = load_corpus(strict=False)
    with pytest.raises(InputError, match="unknown skill 'mem.colaesce'; did you mean 'mem.coalesce'"):
        corpus.require("mem.colaesce")

