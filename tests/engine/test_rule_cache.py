"""The parsed-rule cache (issue 22): data only (JSON, never pickle), every stored translation checked
before it is compiled, a private folder; a planted file never runs code and never changes advice."""

from __future__ import annotations

import json
import os
import stat

import pytest
from toy_rules import M, evidence, make_ruleset


@pytest.fixture
def setup(tmp_path, monkeypatch):
    cache_root = tmp_path / "cache"
    monkeypatch.setenv("SKILLBASE_CACHE", str(cache_root))
    monkeypatch.delenv("SKILLBASE_NO_CACHE", raising=False)
    return make_ruleset(tmp_path / "rules"), cache_root / "rules"


def fresh(root):
    from skillbase.engine import Engine

    return Engine.load([root], use_cache=False)


def cached(root):
    from skillbase.engine import Engine

    return Engine.load([root])


def the_file(folder):
    (path,) = folder.glob("rules-*.json")
    return path


def test_a_cached_engine_decides_exactly_like_a_freshly_parsed_one(setup):
    root, folder = setup
    sample = evidence({M["dram"]: 91.4, M["sm"]: 20.0, M["ls"]: 8.0, M["cpi"]: 10.0})
    cached(root)                                   # writes the cache
    assert not list(folder.parent.rglob("*.pickle"))
    from_cache = cached(root)
    assert from_cache.evaluate(sample).to_json() == fresh(root).evaluate(sample).to_json()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_built_in_rules_round_trip_through_the_cache(tmp_path, monkeypatch):
    from skillbase.engine import Engine

    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path))
    monkeypatch.delenv("SKILLBASE_NO_CACHE", raising=False)
    Engine.load()
    sample = evidence({M["dram"]: 88.0, M["sm"]: 35.0})
    assert Engine.load().evaluate(sample).to_json() == Engine.load(use_cache=False).evaluate(sample).to_json()


def test_a_planted_translation_never_runs(setup, tmp_path):
    from skillbase.engine import cache

    root, folder = setup
    cached(root)
    path = the_file(folder)
    marker = tmp_path / "pwned"
    document = json.loads(path.read_text())
    assert cache.read(document["key"]) is not None
    text = json.dumps(document)
    # every translation becomes code that would write a file if it were ever compiled and called
    payload = f"__import__('pathlib').Path({str(marker)!r}).write_text('x')"
    planted = text.replace('"python": "(v[', '"python": ' + json.dumps(payload + " or (v[") + ', "x": "')
    assert planted != text
    document = json.loads(planted.replace(', "x": "', ', "unused": "'))
    path.write_text(json.dumps(document))
    assert cache.read(document["key"]) is None          # refused before anything is compiled
    sample = evidence({M["dram"]: 91.4, M["sm"]: 20.0})
    assert cached(root).evaluate(sample).to_json() == fresh(root).evaluate(sample).to_json()
    assert not marker.exists()


@pytest.mark.parametrize("python", [
    "__import__('os').system('true')",
    "v.__class__",
    "(lambda: 1)()",
    "9 ** 9 ** 9 ** 9",
    "[x for x in v]",
    "_max(v['a'], key=print)",
    "v[0]",
])
def test_translation_check_refuses_everything_outside_the_grammar(python):
    from skillbase.engine.expressions import is_translation

    assert not is_translation(python)


def test_translation_check_accepts_every_translation_of_the_built_in_rules():
    from skillbase.engine import Engine
    from skillbase.engine.expressions import is_translation

    engine = Engine.load(use_cache=False)
    translations = [e.python for r in engine.rules for e in r.expressions() if e.python]
    translations += [e.python for e in engine.vocabulary.all_expressions() if e.python]
    assert len(translations) > 100
    assert all(is_translation(p) for p in translations)


def test_a_planted_pickle_or_garbage_is_ignored(setup, tmp_path):
    import pickle

    root, folder = setup
    cached(root)
    path = the_file(folder)
    marker = tmp_path / "pwned"

    class Boom:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    path.write_bytes(pickle.dumps(Boom()))
    sample = evidence({M["dram"]: 91.4})
    assert cached(root).evaluate(sample).to_json() == fresh(root).evaluate(sample).to_json()
    for garbage in (b"", b"[]", b"{" * 100_000, b'{"format": 1, "key": "x", "engine": {}}', b"\xff\xfe"):
        path.write_bytes(garbage)
        assert cached(root).evaluate(sample).to_json() == fresh(root).evaluate(sample).to_json()
    assert not marker.exists()


def test_an_open_cache_folder_is_neither_read_nor_written(setup):
    from skillbase.engine import cache

    root, folder = setup
    cached(root)
    path = the_file(folder)
    document = json.loads(path.read_text())
    document["engine"]["rules"] = []          # a tampered file that would silence every rule
    path.write_text(json.dumps(document))
    folder.chmod(0o777)
    assert cache.read(document["key"]) is None
    sample = evidence({M["dram"]: 91.4, M["sm"]: 20.0})
    assert cached(root).evaluate(sample).to_json() == fresh(root).evaluate(sample).to_json()
    assert json.loads(path.read_text())["engine"]["rules"] == []   # not rewritten either
