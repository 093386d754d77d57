"""Device memory shared by several skillbase processes on one GPU: a reservation ledger per GPU.

    from skillbase.harness.gpu_memory import capacity_bytes, judgement_bytes, reserve
    need = judgement_bytes(spec, job, l2_bytes=device.l2_bytes)
    with reserve(need, capacity_bytes(total), uuid=device.uuid, phases=phases):
        ...                            # draw inputs, compute references, verify, time

Two workers on one GPU (`--workers-per-gpu 2`), or a `check` beside a batch, each allocate what
their task needs; at KernelBench sizes (6.4 GB per array) two judgements and a neighbour ran an
H200 out of memory and lost their device time. So a judgement reserves its estimated bytes before
it allocates and waits while the others' reservations plus its own would not fit the GPU. A job
alone on the GPU always goes ahead: one too big for the device gets its out-of-memory
`environment` answer as before.

The ledger is one text file per GPU *UUID* in the cache folder (`<cache>/gpu-memory/`), a line per
reservation (`PID STARTTIME TOKEN BYTES`), read and rewritten under `fcntl.flock` (held only for
that). Dead holders never block: every reader drops the lines of processes that are gone (or are
zombies, or whose PID now names a process started later), so a killed worker's reservation ends
with it. The wait is counted in the job's `memory_wait` phase. The reservation is taken before the
GPU lock's shared hold (harness.gpu_lock), never inside it: a job that waits for memory while
holding the lock shared would block the holder's exclusive timed phase, whose end frees the memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillbase.config import cache_root
from skillbase.errors import EnvironmentProblem
from skillbase.harness.phases import MEMORY_WAIT

if TYPE_CHECKING:
    from skillbase.harness.phases import Phases

POLL_S = 0.1
WAIT_NOTICE_S = 2.0
# Device memory no reservation may take: the CUDA context of every process on the GPU (each worker,
# a `check` beside it, PyTorch's) and whatever programs that are not skillbase hold. An allowance, not
# a measurement: compare a shared run's `nvidia-smi` per-process figures with the recorded peaks.
HEADROOM_BYTES = 8 << 30


def capacity_bytes(total_bytes: int) -> int:
    """What skillbase reservations may share of a GPU with `total_bytes` of memory."""
    return max(0, int(total_bytes) - HEADROOM_BYTES)


# -- the estimate ------------------------------------------------------------------------------------

def judgement_bytes(spec, job: dict[str, Any], *, l2_bytes: int = 0, device_references: bool = True,
                    torch_parties: int = 0) -> int:
    """Device bytes a `check` job (worker.py) holds at its worst, from the task spec and the job's sizes.

    Counted from what the harness allocates (session.py, verify.py, timing.py, device.py); where
    several steps' buffers are summed that never live at once, it is an upper bound, not a peak.
    `device_references`: references kept scrambled on the device (a native or `self` reference, a
    python one marked `device = True`; session._keep moves them to the host when room is short, which
    this does not count on). `torch_parties`: the PyTorch implementations in the job (a torch candidate,
    a device python reference), whose caching allocator holds what their computation needs."""
    from skillbase.harness.l2 import flush_bytes
    from skillbase.harness.session import ROOM_FIXED_BYTES
    from skillbase.harness.timing import MAX_BATCH, SLOT_MEMORY_CAP, VALUE_SETS
    from skillbase.harness.verify import COMPARE_CHUNK, VerifyPlan

    verify, timing = job.get("verify") or {}, job.get("time") or {}
    verify_sizes = [dict(s) for _, s in verify.get("sizes", [])]
    timed_sizes = [dict(s) for _, s in timing.get("sizes", [])]
    seeds = len(verify.get("seeds", VerifyPlan.seeds))
    refs = 1 if device_references else 0
    kernels = 1 if timing.get("shared_slots") or not job.get("baseline") else 2    # sets of timing slots
    per = {_key(s): _arrays(spec, s) for s in [*verify_sizes, *timed_sizes]}

    def comparison(a: dict) -> int:
        # A comparison (verify._compare_chunked): a plain copy of the largest reference output, and one
        # chunk's temporaries, at most COMPARE_CHUNK elements: five float64 arrays (out, ref, ref_part,
        # diff, limit: 40 B an element), about a dozen one-byte masks (isfinite, isnan, isinf, both,
        # wrong ...: 12 B) and as_numbers' uint32 (4 B): 56 B counted from the code, rounded up to 64.
        return a["out_max"] + 64 * min(a["out_numel_max"], COMPARE_CHUNK)

    # Kept for the whole job, on the device (Session.keep_cases_at): the references of the seeds drawn
    # at the first verified size (the probes' cases), and of the value sets of every timed size (which
    # take the seeds verification kept there first).
    first = _key(verify_sizes[0]) if verify_sizes else None
    cases = {_key(s): VALUE_SETS for s in timed_sizes}
    if first is not None:
        cases[first] = max(seeds, cases.get(first, 0))
    kept = refs * sum(count * per[key]["out"] for key, count in cases.items())
    previous = max((per[_key(s)]["out"] for s in verify_sizes), default=0)
    steps = [0]
    for s in verify_sizes:
        a = per[_key(s)]
        steps.append(a["in"]                     # the case's pristine input copies
                     + refs * (a["out"] + previous)   # its references, and the previous case's (still held)
                     + a["all"]                  # a call's fresh buffers (every pointer argument)
                     + a["out"] + a["scratch"]   # its output copies, or a probe's output+scratch snapshots
                     + a["in_max"]               # the input check: one bool per byte of an input
                     + comparison(a)
                     + 2 * a["out_numel"])       # bad masks of every output, and a failed call's repeat's
    for s in timed_sizes:
        a = per[_key(s)]
        steps.append(VALUE_SETS * a["in"]        # the value sets' pristine input copies
                     # Buffer slots per kernel (timing._Slots): 2, or for a batch of launches up to one per
                     # launch (MAX_BATCH) within SLOT_MEMORY_CAP, the first two freed before
                     + kernels * max(2 * a["all"], min(MAX_BATCH * a["all"], SLOT_MEMORY_CAP))
                     + comparison(a) + a["out_numel_max"]    # re-verifying the last sample's output
                     + flush_bytes(l2_bytes))    # the L2 flush buffer (Device.flush_l2)
    if timed_sizes:
        steps.append(2 * max(1 << 30, 8 * l2_bytes))    # Device.peaks' copy buffers, when not cached
    # Not known from the spec, so allowances, not counts: what the libraries allocate beside CuPy
    # (a hooks.setup's workspace, cuBLAS/cuDNN, CUPTI's buffers: session's own allowance), and for each
    # PyTorch implementation its caching allocator's outputs and intermediates, allowed one more set
    # of the call's arrays.
    allowance = ROOM_FIXED_BYTES + torch_parties * max((a["all"] for a in per.values()), default=0)
    return kept + max(steps) + allowance


def _key(sizes: dict[str, int]) -> tuple:
    return tuple(sorted((k, int(v)) for k, v in sizes.items()))


def _arrays(spec, sizes: dict[str, int]) -> dict[str, int]:
    """Byte counts of the pointer arguments at one size, by role."""
    resolved = spec.resolve(sizes)
    pointers = [(a, resolved.arg(a.name)) for a in spec.args if a.pointer]
    outs = [r for a, r in pointers if a.written]
    ins = [r for a, r in pointers if a.role in ("in", "inout")]
    return {"all": sum(r.nbytes for _, r in pointers),
            "in": sum(r.nbytes for r in ins),
            "in_max": max((r.nbytes for a, r in pointers if a.role == "in"), default=0),
            "out": sum(r.nbytes for r in outs),
            "out_max": max((r.nbytes for r in outs), default=0),
            "out_numel": sum(r.numel for r in outs),
            "out_numel_max": max((r.numel for r in outs), default=0),
            "scratch": sum(r.nbytes for a, r in pointers if a.scratch)}


# -- the ledger --------------------------------------------------------------------------------------

def ledger_folder() -> Path:
    return cache_root() / "gpu-memory"


@contextlib.contextmanager
def reserve(nbytes: int, capacity: int, *, uuid: str | bytes | None = None, device_index: int = 0,
            phases: Phases | None = None, on_wait: Callable[[str], None] | None = None) -> Iterator[int]:
    """Hold a reservation of `nbytes` on the GPU for the body, once it fits `capacity` beside the other
    live reservations (or no other is held). `phases` counts the wait as `memory_wait`; `on_wait` is
    told once, in a line, when it lasts. Yields the bytes reserved. One per job: a process's own earlier
    reservation counts like another's (the worker takes one, for its whole job)."""
    from skillbase.harness.gpu_lock import gpu_file_name

    name = gpu_file_name(uuid, device_index)
    path = ledger_folder() / f"{name}.ledger"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as error:
        raise EnvironmentProblem(f"cannot open the GPU memory ledger {path} ({error.strerror})",
                                 hint="the cache folder must be writable (SKILLBASE_CACHE)") from None
    mine = (os.getpid(), _start_time(os.getpid()), secrets.token_hex(4), int(nbytes))
    started, said, blocked = time.monotonic(), False, False
    try:
        with contextlib.ExitStack() as waiting:
            while True:
                with _locked(fd):
                    entries = _live(_read(fd))
                    others = sum(e[3] for e in entries)
                    admitted = not entries or others + mine[3] <= capacity
                    _write(fd, entries + [mine] if admitted else entries)
                if admitted:
                    break
                if phases is not None and not blocked:
                    blocked = True
                    waiting.enter_context(phases(MEMORY_WAIT))
                if not said and on_wait is not None and time.monotonic() - started >= WAIT_NOTICE_S:
                    said = True
                    on_wait(f"waiting for device memory: {mine[3] / 2**30:.1f} GiB needed, {others / 2**30:.1f} "
                            f"GiB of {capacity / 2**30:.1f} GiB reserved by {len(entries)} other skillbase job(s)")
                time.sleep(POLL_S)
        try:
            yield mine[3]
        finally:
            with _locked(fd):
                _write(fd, [e for e in _live(_read(fd)) if e[:3] != mine[:3]])
    finally:
        os.close(fd)


@contextlib.contextmanager
def _locked(fd: int) -> Iterator[None]:
    fcntl.flock(fd, fcntl.LOCK_EX)     # held for a read and a rewrite of a few lines only
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _read(fd: int) -> list[tuple[int, int, str, int]]:
    os.lseek(fd, 0, os.SEEK_SET)
    text = b""
    while chunk := os.read(fd, 1 << 16):
        text += chunk
    entries = []
    for line in text.decode(errors="replace").splitlines():
        try:
            pid, start, token, nbytes = line.split()
            entries.append((int(pid), int(start), token, int(nbytes)))
        except ValueError:
            continue         # a torn or foreign line reserves nothing
    return entries


def _write(fd: int, entries: list[tuple[int, int, str, int]]) -> None:
    data = "".join(f"{pid} {start} {token} {nbytes}\n" for pid, start, token, nbytes in entries).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _live(entries: list[tuple[int, int, str, int]]) -> list[tuple[int, int, str, int]]:
    return [e for e in entries if _start_time(e[0]) == e[1] != -1]


def _start_time(pid: int) -> int:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), which tells a PID
    reused by a later process from the holder; -1 when the process is gone or a zombie (its memory freed)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1
    fields = stat.rpartition(")")[2].split()     # after the command name, which may hold spaces
    return -1 if fields[0] in ("Z", "X") else int(fields[19])


def pool_peak_bytes() -> dict[str, int]:
    """What this process's allocators reached, where they can say: CuPy's pool keeps every block it got
    (the harness never gives them back; CuPy itself does only on an out-of-memory retry), so its total
    now is its high water; torch's own peak of reserved bytes where torch ran on the GPU."""
    import sys

    out: dict[str, int] = {}
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        out["cupy_pool_peak_bytes"] = int(cupy.get_default_memory_pool().total_bytes())
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        out["torch_peak_reserved_bytes"] = int(torch.cuda.max_memory_reserved())
    return out
