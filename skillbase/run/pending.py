"""Runs paused for someone else's kernel (`--agent external`): what each waits for, and where.

A run paused by the external applier has written one prompt (`<store>/runs/run_N/<key>.prompt.md`)
and a `waiting.json` naming it. `list_pending()` reads every paused run of the store into a
`PendingPrompt`: the prompt to hand a coder, whether it is a first try (coder) or a repair
(debugger), the round and skill, and where its candidate is expected: `<candidates>/run_N.cu`
(with an optional `run_N.meta.json` beside it), `<candidates>` being the run's batch folder
(`bench optimize`) or `<store>/candidates` for a run started on its own. `skillbase pending`,
`resume --all` and the MCP server read this one list.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillbase.agents.coder import extract_cuda
from skillbase.documents import versioned
from skillbase.errors import SkillbaseError
from skillbase.run.artifacts import digest_bytes
from skillbase.run.store import RunRow, RunStore, batch_name, parse_batch_ref
from skillbase.run.types import RunStatus

# r3/v0/a1: round 3, variant 0, attempt 1; g/a0: the generator's first try (`optimize --from-reference`)
_KEY = re.compile(r"^(?:r(?P<round>\d+)/v(?P<variant>\d+)|(?P<generator>g))/a(?P<attempt>\d+)$")

CODER = "coder"          # a first try at applying the round's skill
DEBUGGER = "debugger"    # a repair of the try before it (its error is in the prompt)
GENERATOR = "generator"  # the first kernel of a task written from its PyTorch reference
KINDS = (CODER, DEBUGGER, GENERATOR)   # what a waiting prompt asks for (the documents' `kind`)
MAX_CANDIDATE_BYTES = 4 << 20          # a kernel's source is not larger


@dataclass(frozen=True)
class PendingPrompt:
    """One paused run's open request: a prompt in, one candidate file out."""

    run: str                     # run_N
    run_id: int
    task: str                    # the task's name (the operator's dtype for a bench run)
    operator: str | None         # bench runs: the operator and dtype
    dtype: str | None
    batch: str | None            # batch_N, or None for a run started on its own
    kind: str                    # coder | debugger | generator
    round: int
    attempt: int                 # 0 = the first try, 1.. = repairs
    key: str                     # the attempt's step key, r3/v0/a1
    skill: str
    prompt_path: Path | None     # None when the run's prompt file is gone (resume re-writes it)
    candidate_path: Path         # where the candidate is expected
    meta_path: Path              # its optional {"model", "wall_s", "reply_tokens"}
    waiting: str | None = None   # why the last `resume --all` did not judge a candidate (missing, empty ...)

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "task": self.task, "operator": self.operator, "dtype": self.dtype,
                "batch": self.batch, "kind": self.kind, "round": self.round, "attempt": self.attempt,
                "key": self.key, "skill": self.skill,
                "prompt": str(self.prompt_path) if self.prompt_path else None,
                "candidate": str(self.candidate_path), "meta": str(self.meta_path), "waiting": self.waiting}


@dataclass(frozen=True)
class Pending:
    """The open prompts of one store (`skillbase pending`)."""

    store: Path
    prompts: list[PendingPrompt]

    def to_json(self) -> dict[str, Any]:
        return versioned("pending", {"store": str(self.store), "prompts": [p.to_json() for p in self.prompts]})


def candidates_folder(store: RunStore, batch_settings: dict | None) -> Path:
    """Where a paused run's candidate is expected by default: its batch's folder, else the store's."""
    if batch_settings and batch_settings.get("candidates"):
        return Path(batch_settings["candidates"])
    return store.location / "candidates"


def run_folder(store: RunStore, run_id: int) -> Path:
    """The run's own folder (prompts, waiting.json, best.cu)."""
    return store.location / "runs" / f"run_{run_id}"


def list_pending(store_path=None, batch: str | int | None = None) -> list[PendingPrompt]:
    """Every paused run of the store (of one batch when `batch` is given), oldest run first."""
    return pending(store_path, batch).prompts


def pending(store_path=None, batch: str | int | None = None) -> Pending:
    """`list_pending` with the store it read (read-only: nothing is written)."""
    store = RunStore.open(store_path, read_only=True)
    try:
        return Pending(store.location, pending_in(store, batch))
    finally:
        store.close()


def pending_in(store: RunStore, batch: str | int | None = None, run_id: int | None = None) -> list[PendingPrompt]:
    """`list_pending` on an open store (only run `run_id`'s prompt, when given: one run's summary)."""
    wanted = parse_batch_ref(batch) if batch is not None else None
    if wanted is not None:
        store.get_batch(wanted)   # an unknown batch is an error, not an empty list
    members = {m.run_id: m for m in store.batch_members(wanted)}
    settings = {b.id: b.settings for b in store.list_batches()}
    runs = sorted((r for r in store.list_runs(status=RunStatus.PAUSED)
                   if (wanted is None or r.id in members) and (run_id is None or r.id == run_id)), key=lambda r: r.id)
    found = []
    for run in runs:
        waiting = _waiting_file(store, run.id)
        key = waiting.get("key", "")
        match = _KEY.match(key)
        if match is None:
            continue   # paused before batches (or by hand) without a readable request: `resume run_N` re-asks
        member = members.get(run.id)
        folder = candidates_folder(store, settings.get(member.batch_id) if member else None)
        candidate = folder / f"{run.name}.cu"
        note = _standing_note(store.last_event_at(run.id, "candidate-waiting"), key, candidate) \
            or _judged_already(store, run, candidate, key)
        attempt = int(match["attempt"])
        prompt = Path(waiting["prompt"]) if waiting.get("prompt") else None
        found.append(PendingPrompt(
            run=run.name, run_id=run.id, task=run.task_name,
            operator=member.operator if member else None, dtype=member.dtype if member else None,
            batch=batch_name(member.batch_id) if member else None,
            kind=DEBUGGER if attempt > 0 else GENERATOR if match["generator"] else CODER,
            round=int(match["round"] or 0), attempt=attempt, key=key,
            skill=waiting.get("skill", ""), prompt_path=prompt if prompt and prompt.exists() else None,
            candidate_path=candidate, meta_path=folder / f"{run.name}.meta.json", waiting=note))
    return found


def _standing_note(event: tuple[dict, float] | None, key: str, candidate: Path) -> str | None:
    """Why the last `resume --all` did not judge this prompt's candidate, while it still says so: not once the
    answer was written after it (a "missing" note with the file now there, say after a store moved machines).
    A "missing" note that still holds names the file where this store expects it (the note was written where the
    batch ran: a store packed on the GPU machine names that machine's folder)."""
    if event is None or event[0].get("key") != key:
        return None
    reason, at = str(event[0].get("reason", "")), event[1]
    try:
        written = candidate.stat().st_mtime
    except OSError:
        return missing_note(candidate) if reason.startswith("missing:") else reason
    return None if reason.startswith("missing:") or written > at + 1.0 else reason


def judged_again(path: Path, source: str, judged: dict[str, str], key: str) -> str | None:
    """The note of a candidate whose source was already judged in its run (`judged`: artifact digest by step
    key), as a file left from the last trip is: one place for `resume --all` and `pending`."""
    digest = digest_bytes(source.encode("utf-8"))
    earlier = next((k for k, seen in judged.items() if seen == digest), None)
    return None if earlier is None else \
        f"for another prompt: {path.name} was already judged for {earlier}; {key} needs a new candidate"


def candidate_source(text: str, launcher: str | None) -> str:
    """The kernel source a candidate file holds: the file itself, or the CUDA file in its fence when it is a
    reply as a chat model writes it (`NoCodeInReply` when that fence is missing or wrong). The judged source,
    so an answer left from the last trip is known whether or not it was fenced."""
    return extract_cuda(text, launcher or "launch") if "```" in text else text


def _judged_already(store: RunStore, run: RunRow, candidate: Path, key: str) -> str | None:
    """`judged_again`'s note for the file now at `candidate`, read as it stands (None when it is not a
    readable kernel source: `resume --all` says what is wrong with it)."""
    try:
        if not candidate.is_file() or candidate.stat().st_size > MAX_CANDIDATE_BYTES:
            return None
        source = candidate_source(candidate.read_text(encoding="utf-8"), run.manifest.get("launcher"))
    except (OSError, UnicodeDecodeError, SkillbaseError):
        return None
    return judged_again(candidate, source, store.judged_sources(run.id), key)


def missing_note(candidate: Path) -> str:
    """The note of a prompt whose candidate file is not there: one place for `resume --all` and `pending`."""
    return f"missing: no {candidate.name} in {candidate.parent}"


def waiting_key(store: RunStore, run_id: int) -> str | None:
    """The step key of the prompt the run last wrote (`r3/v0/a1`), or None when it wrote none."""
    key = _waiting_file(store, run_id).get("key")
    return key if isinstance(key, str) and _KEY.match(key) else None


def _waiting_file(store: RunStore, run_id: int) -> dict:
    path = run_folder(store, run_id) / "waiting.json"
    try:
        data = json.loads(store.here(path.read_text()))   # a moved store opened read-only: its prompt here
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
