"""What a skill is: the `Skill` and `Corpus` types, the canonical ids and the fixed headings.

A skill is `skills/<category>/<id>/skill.yaml` under fixed headings, with `examples/` beside it.
`HEADINGS` is the one list of those headings in order with their titles: `skills show` renders
them, the coder's card picks from them, and a test holds them equal to the schema's properties.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillbase.datafile.problems import Problem, did_you_mean
from skillbase.errors import InputError

BUILTIN_ORIGIN = "built-in"
SKILL_FILE = "skill.yaml"
EXAMPLE_FILES = ("before.cu", "after.cu", "task.yaml")   # an example is complete with these three

# The 67 canonical ids (shared/SKILLS.md). Evaluations outside the project refer to them: never
# rename or reuse one; retire it with `status: deprecated`.
CANONICAL_IDS: tuple[str, ...] = (
    # global memory
    "mem.coalesce", "mem.aos_to_soa", "mem.vectorize", "mem.readonly_path", "mem.smem_tiling",
    "mem.transpose_via_smem", "mem.constant_broadcast", "mem.recompute_vs_lut", "mem.kernel_fusion",
    "mem.reduce_precision_storage", "mem.eliminate_local", "mem.cp_async_pipeline",
    "mem.register_prefetch", "mem.l2_persistence", "mem.l2_tile_rasterization", "mem.cache_hints",
    # shared memory
    "smem.pad", "smem.swizzle", "smem.wider_access", "smem.register_cache",
    # compute and instruction-level parallelism
    "cmp.register_tiling", "cmp.unroll", "cmp.reduce_unroll", "cmp.ilp_multi_acc",
    "cmp.strength_reduction", "cmp.fast_math", "cmp.fp64_to_fp32", "cmp.fma_contract",
    "cmp.hoist_invariants", "cmp.tensor_core_mma", "cmp.mixed_precision_bf16", "cmp.use_library",
    "cmp.thread_coarsening", "cmp.warp_tiling",
    # control flow and synchronisation
    "cf.reduce_divergence", "cf.branch_elimination",
    "sync.reduce_barriers", "sync.reduce_membar", "sync.cooperative_groups",
    # launch configuration and occupancy
    "launch.block_size", "launch.fill_gpu", "launch.tail_effect", "launch.grid_stride",
    "occ.launch_bounds_regs", "occ.smem_budget", "occ.achieved_gap", "occ.decrease_coarsen",
    # reductions and atomics
    "red.warp_shuffle", "red.hierarchical_atomics", "red.parallelize_row",
    "atom.warp_aggregated", "atom.smem_privatization",
    # algorithms
    "alg.split_k_stream_k", "alg.persistent_kernel", "alg.spmv_csr_vector_merge",
    "alg.stencil_temporal_blocking", "alg.online_softmax_flash", "alg.single_pass_scan_lookback",
    "alg.fewer_passes",
    # host and system
    "sys.cuda_graphs", "sys.streams_overlap",
    # Hopper (sm_90 / sm_90a)
    "hop.tma_load", "hop.wgmma", "hop.clusters_dsmem", "hop.warp_specialization_setmaxnreg", "hop.fp8",
    # tuning
    "tune.parameter_sweep",
)

# Skills whose application changes state outside one launcher call; the harness forbids that
# while timing, so they must never be applied automatically (corpus validation enforces it).
ADVICE_ONLY_IDS: frozenset[str] = frozenset({"mem.l2_persistence", "sys.cuda_graphs", "sys.streams_overlap"})

# (key, title) of every heading after the identity fields (id, title, category, status, version),
# in the order the schema lists them and every skill is rendered.
HEADINGS: tuple[tuple[str, str], ...] = (
    ("summary", "Summary"), ("what_it_does", "What it does"), ("why_it_helps", "Why it helps"),
    ("when_to_apply", "When to apply"), ("when_not_to_apply", "When not to apply"), ("how", "How"),
    ("parameters", "Parameters"), ("anti_patterns", "Anti-patterns"), ("known_problems", "Known problems"),
    ("expected_gain", "Expected gain"), ("risks", "Risks"), ("references", "References"),
    ("automation", "Automation"), ("related", "Related"), ("changelog", "Changelog"),
)


def plain(text: Any) -> str:
    """Text on one line: YAML block scalars and wrapped sentences with their whitespace collapsed."""
    return " ".join(str(text or "").split())


@dataclass(frozen=True)
class Skill:
    """A validated skill: its parsed YAML (`data`), where it lives and where it came from."""

    id: str
    data: dict[str, Any]
    folder: Path
    origin: str                      # "built-in" or the user folder it was found in
    display_path: str                # the path shown in messages (relative where possible)

    @property
    def path(self) -> Path:
        return self.folder / SKILL_FILE

    @property
    def category(self) -> str:
        return self.data["category"]

    @property
    def status(self) -> str:
        return self.data["status"]

    @property
    def version(self) -> int:
        return self.data["version"]

    @property
    def title(self) -> str:
        return self.data["title"]

    @property
    def summary(self) -> str:
        return plain(self.data["summary"])

    @property
    def auto_apply(self) -> bool:
        """The one reading of `automation.auto_apply` (the schema requires it)."""
        return bool(self.data["automation"]["auto_apply"])

    @property
    def mechanical(self) -> dict | None:
        return self.data["automation"].get("mechanical")

    @property
    def related(self) -> list[str]:
        return list(self.data.get("related") or [])

    @property
    def examples_dir(self) -> Path:
        return self.folder / "examples"

    @property
    def has_example(self) -> bool:
        """True when a before/after pair exists (the task spec is checked by `validate`)."""
        return all((self.examples_dir / name).is_file() for name in ("before.cu", "after.cu"))

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def to_json(self) -> dict:
        return {"id": self.id, "title": self.title, "category": self.category, "status": self.status,
                "version": self.version, "summary": self.summary, "auto_apply": self.auto_apply,
                "mechanical": (self.mechanical or {}).get("kind"), "has_example": self.has_example,
                "origin": self.origin, "path": str(self.path)}


@dataclass
class Corpus:
    """All skills by id, plus the problems found while loading (empty when loaded strictly)."""

    skills: dict[str, Skill] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)     # folder names of skill files that failed to load

    def __contains__(self, skill_id: object) -> bool:
        return skill_id in self.skills

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.skills[i] for i in sorted(self.skills))

    def __len__(self) -> int:
        return len(self.skills)

    def get(self, skill_id: str) -> Skill | None:
        return self.skills.get(skill_id)

    def require(self, skill_id: str) -> Skill:
        """The skill, or an InputError with a did-you-mean."""
        skill = self.skills.get(skill_id)
        if skill is None:
            raise InputError(f"unknown skill '{skill_id}'" + did_you_mean_suffix(skill_id, self.skills),
                             hint="`skillbase skills list` shows every id")
        return skill

    def ids(self) -> set[str]:
        return set(self.skills)

    def categories(self) -> set[str]:
        return {skill.category for skill in self.skills.values()}

    def select(self, category: str | None = None, status: str | None = None) -> list[Skill]:
        """The skills of `category` in state `status` (None: any), in id order; an unknown
        category is an InputError with a did-you-mean."""
        if category is not None and category not in self.categories():
            raise InputError(f"no skills in category '{category}'" + did_you_mean_suffix(category, self.categories()),
                             hint=f"categories: {', '.join(sorted(self.categories()))}")
        return [s for s in self
                if (category is None or s.category == category) and (status is None or s.status == status)]

    def missing_canonical(self) -> list[str]:
        """Canonical ids with no skill in the corpus, in catalogue order."""
        return [i for i in CANONICAL_IDS if i not in self.skills]

    @property
    def digest(self) -> str:
        """sha256 over every skill file (id order): a run records which corpus it decided with."""
        h = hashlib.sha256()
        for skill in self:
            h.update(skill.id.encode() + b"\0" + _read_bytes(skill.path) + b"\0")
        return h.hexdigest()


def did_you_mean_suffix(word: str, choices) -> str:
    """`; did you mean 'x'?` to append to a corpus message, or "" when nothing is close."""
    close = did_you_mean(word, choices, quote="'")
    return f"; {close}" if close else ""


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:   # a file removed since loading counts as empty: the digest still changes
        return b""
