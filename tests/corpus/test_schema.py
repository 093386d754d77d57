"""The built-in corpus itself: every skill validates, every canonical id is present, and the
schema encodes the project's rules (advice-only skills, headings, provenance)."""

from __future__ import annotations

import json

import pytest

from skillbase.config import builtin_skills_dir, schemas_dir
from skillbase.corpus.load import load_corpus, skill_ids, validate_corpus
from skillbase.corpus.model import ADVICE_ONLY_IDS, CANONICAL_IDS, HEADINGS
from skillbase.datafile.schemas import schema


@pytest.fixture(autouse=True)
def _no_user_dirs(monkeypatch):
    monkeypatch.delenv("SKILLBASE_SKILL_PATH", raising=False)


def test_schema_is_valid_2020_12_with_an_id():
    import jsonschema

    data = json.loads((schemas_dir() / "skill.schema.json").read_text())
    assert data["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert data["$id"].endswith("skill.schema.json")
    jsonschema.Draft202012Validator.check_schema(data)


def test_schema_requires_every_heading():
    required = set(schema("skill")["required"])
    for heading in ("id", "title", "category", "status", "version", "summary", "what_it_does", "why_it_helps",
                    "when_to_apply", "when_not_to_apply", "how", "parameters", "anti_patterns", "known_problems",
                    "expected_gain", "risks", "references", "automation"):
        assert heading in required, heading


def test_headings_are_the_schema_properties_in_order():
    """`skills show` and the coder's card render HEADINGS: they follow the schema, after the identity fields."""
    properties = list(schema("skill")["properties"])
    assert properties[:5] == ["id", "title", "category", "status", "version"]
    assert [key for key, _ in HEADINGS] == properties[5:]


def test_canonical_ids_are_the_67_of_the_catalogue():
    assert len(CANONICAL_IDS) == 67
    assert len(set(CANONICAL_IDS)) == 67
    assert ADVICE_ONLY_IDS <= set(CANONICAL_IDS)


def test_every_builtin_skill_file_validates():
    corpus, problems = validate_corpus(canonical=False, examples=False)
    errors = [str(p) for p in problems if p.severity == "error"]
    assert not errors, "\n".join(errors)
    assert len(corpus) == len(list(builtin_skills_dir().glob("*/*/skill.yaml")))


def test_every_canonical_id_is_present():
    """Fails with the list of canonical ids that still have no skill.yaml."""
    missing = load_corpus(strict=False).missing_canonical()
    assert not missing, f"{len(missing)} canonical skill(s) missing: {', '.join(missing)}"


def test_advice_only_skills_are_never_auto_applied():
    corpus = load_corpus(strict=False)
    for skill_id in ADVICE_ONLY_IDS:
        skill = corpus.get(skill_id)
        assert skill is not None, f"{skill_id} is missing from the corpus"
        assert skill.auto_apply is False, skill_id
        assert "harness" in skill.data["automation"]["note"], f"{skill_id}: the note must say why"


def test_new_skills_start_experimental_or_say_why_not():
    for skill in load_corpus(strict=False):
        assert skill.status in ("experimental", "stable", "deprecated")
        assert skill.version >= 1


def test_tune_parameter_sweep_is_mechanical():
    skill = load_corpus(strict=False).get("tune.parameter_sweep")
    assert skill is not None, "tune.parameter_sweep is missing from the corpus"
    assert skill.mechanical["kind"] == "parameter_sweep"


def test_skill_ids_matches_the_loaded_corpus():
    assert skill_ids() == load_corpus(strict=False).ids()


def test_corpus_digest_is_stable():
    assert load_corpus(strict=False).digest == load_corpus(strict=False).digest


def test_importing_the_corpus_module_does_not_import_jsonschema():
    import subprocess
    import sys

    code = "import sys, skillbase.corpus.load; print('jsonschema' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_stable_means_verified_faster_on_the_gpu():
    """status: stable only for skills whose example `skills verify` measured faster on the H200
    (results/nvidia-h200/skill-examples.json); everything else stays experimental."""
    import json
    from pathlib import Path

    table = Path(__file__).resolve().parents[2] / "results" / "nvidia-h200" / "skill-examples.json"
    faster = {row["skill"] for row in json.loads(table.read_text()) if row["verdict"] == "faster"}
    for skill in load_corpus(strict=False):
        if skill.status == "deprecated":
            continue
        assert (skill.status == "stable") == (skill.id in faster), f"{skill.id}: {skill.status}"
