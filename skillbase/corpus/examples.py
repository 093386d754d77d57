"""The verified example the coder is shown: the before/after pair closest to the kernel at hand.

A skill's examples live in `examples/` (or `examples/<name>/`), each complete with before.cu,
after.cu and task.yaml, and an optional expect.yaml (`kernel:`, `why:`). `pick_example` ranks
them by the similarity of static features (the current kernel's against each example's
before.cu) and, with the `search` extra, by the similarity of the evidence in words; the focus
kernel of a file is the evidence's choice (`skillbase.evidence.model.focus_static_kernel`).

    match = pick_example(corpus, "mem.coalesce", source=text)    # ExampleMatch or None
    example_for_coder(corpus, "mem.coalesce", source=text)        # prompt text, or ""
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillbase.corpus import search
from skillbase.corpus.model import EXAMPLE_FILES, Corpus, Skill, plain
from skillbase.datafile.yamldoc import load_yaml
from skillbase.errors import SkillbaseError

if TYPE_CHECKING:
    from skillbase.evidence.model import Evidence

# The static features compared (evidence.static.kernels[k] paths): counts as log1p, flags as 0/1.
FEATURE_PATHS = (
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


def examples_of(skill: Skill) -> list[Example]:
    """Complete example pairs of a skill."""
    root = skill.examples_dir
    folders = [root] + sorted(p for p in root.glob("*") if p.is_dir()) if root.is_dir() else []
    out = []
    for folder in folders:
        if all((folder / name).is_file() for name in EXAMPLE_FILES):
            kernel, why = None, ""
            expect = folder / "expect.yaml"
            if expect.is_file():
                # a malformed expect.yaml is reported by the examples' own tests; here it only costs the hints
                try:
                    data = load_yaml(expect).data
                except SkillbaseError:
                    data = None
                data = data if isinstance(data, dict) else {}
                kernel = data.get("kernel") if isinstance(data.get("kernel"), str) else None
                why = plain(data.get("why")) if isinstance(data.get("why"), str) else ""
            out.append(Example(skill.id, folder, kernel, why))
    return out


def feature_vector(kernel: dict | None) -> list[float]:
    """Static features of one kernel (evidence.static.kernels[k]) as a vector: log1p of counts, 0/1 flags."""
    out = []
    for dotted in FEATURE_PATHS:
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
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)


def focus_features(static: dict | None, preferred: str | None = None) -> dict | None:
    """The static features of the kernel that stands for a file: `preferred` when it names one,
    else the evidence's no-profile choice (the only kernel, the first one launched, the first)."""
    from skillbase.evidence.model import focus_static_kernel  # the evidence package is heavy: only when used

    kernels = (static or {}).get("kernels") or {}
    if not kernels:
        return None
    try:
        name, _ = focus_static_kernel(static, preferred)
    except SkillbaseError:   # `preferred` names none of the file's kernels: the file's own focus
        name, _ = focus_static_kernel(static)
    return kernels[name]


_STATIC_CACHE: dict[tuple[str, int, int], dict | None] = {}


def _static_of_file(path: Path) -> dict | None:
    """Static features of a source file (cached per file version); None when it cannot be analysed."""
    from skillbase.evidence import static_features  # tree-sitter: only when an example is picked

    try:
        stat = path.stat()
    except OSError:
        return None
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _STATIC_CACHE:
        try:
            _STATIC_CACHE[key] = static_features(path)
        except SkillbaseError:
            _STATIC_CACHE[key] = None
    return _STATIC_CACHE[key]


def _static_of_source(source: str) -> dict | None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kernel.cu"
        path.write_text(source, encoding="utf-8")
        return _static_of_file(path)


def _features_here(evidence: Evidence | None, source: str | None) -> dict | None:
    """The current kernel's static features: the evidence's focus kernel, else parsed from `source`."""
    if evidence is not None and evidence.focus_static() is not None:
        return evidence.focus_static()
    static = evidence.static if evidence is not None else None
    if not (static or {}).get("kernels") and source:
        static = _static_of_source(source)
    return focus_features(static, evidence.focus_kernel if evidence is not None else None)


def evidence_text(evidence: Evidence | None = None, candidate: dict | None = None) -> str:
    """What the evidence says, in words: the candidate's reasons (its stored JSON), the ncu rule titles."""
    parts = []
    if candidate:
        because = candidate.get("because")
        parts += [plain(b) for b in because if b] if isinstance(because, list) else [plain(because)]
    focus = evidence.focus() if evidence is not None else None
    for rule in focus.ncu_rules if focus is not None else []:
        if rule.get("title"):
            parts.append(plain(rule["title"]))
    return " ".join(p for p in parts if p)


def pick_example(corpus: Corpus, skill_id: str, *, source: str | None = None, evidence: Evidence | None = None,
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
        for other in skill.related:
            related = corpus.get(other)
            if related is not None:
                pool += [(e, False) for e in examples_of(related)]
    if not pool:
        return None
    features = _features_here(evidence, source)
    here = feature_vector(features) if features is not None else None
    text_scores: dict[int, float] = {}
    if (use_text is None and search.available() and len(pool) > 1) or use_text:
        query = plain(f"{evidence_text(evidence, candidate)} {(source or '')[:1500]}")
        if query:
            docs = []
            for example, _ in pool:
                owner = corpus.get(example.skill_id)
                when = next((t for n, t in search.sections(owner.data) if n == "when_to_apply"), "") if owner else ""
                docs.append(plain(f"{example.why} {when} {example.before.read_text(errors='replace')[:1500]}"))
            vectors = search.embed([query] + docs)
            text_scores = {i: float(vectors[0] @ vectors[i + 1]) for i in range(len(docs))}
    matches = []
    for i, (example, own) in enumerate(pool):
        there = feature_vector(focus_features(_static_of_file(example.before), example.kernel))
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


def example_for_coder(corpus: Corpus | None, skill_id: str, source: str | None = None,
                      evidence: Evidence | None = None, candidate: dict | None = None, limit: int = 3000) -> str:
    """The chosen example as prompt text (before.cu / after.cu), or "" when there is none (no
    corpus, no example, the `search` extra broken, a file unreadable): an example is a help, and
    its absence must not stop a run."""
    if corpus is None:
        return ""
    try:
        match = pick_example(corpus, skill_id, source=source, evidence=evidence, candidate=candidate)
    except (SkillbaseError, OSError):
        return ""
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
