"""Timed phases alone on their GPU: an inter-process reader-writer lock per GPU.

    from skillbase.harness.gpu_lock import gpu_lock
    with gpu_lock(0):                 # the CUDA device index this process sees; exclusive
        ...                           # timing, launch-stream probes: no other skillbase GPU work meanwhile
    with gpu_lock(0, shared=True):    # any other GPU work (verification): many at once, never during a timed phase
    with gpu_lock(0, phases=phases):  # the time spent blocked counted in the job's `gpu_wait` phase

Timing and the launch-stream probes measure time on the device; a neighbour's kernels on the same
GPU stretch both (three `check` processes on one H200 once quarantined two honest kernels). So a
worker holds the lock *shared* for its whole job and *exclusive* around its timed phase and its
probes: several candidates still verify side by side, and none runs anything while another is timed.

The lock is `fcntl.flock` on one file per GPU *UUID* in the cache folder (`<cache>/gpu-locks/`):
a UUID names the physical GPU whatever CUDA_VISIBLE_DEVICES renumbers, and the kernel drops the
lock when its holder dies (a killed worker never leaves the GPU locked). Within one process the
lock nests: an exclusive section inside a shared one converts the process's lock and converts it
back after. A process waiting for the exclusive lock holds a turnstile that new shared holders pass
through, so verifications cannot starve a timed phase. The exclusive holder writes its PID into
the file: a worker whose *parent* (or an ancestor: ncu starts the profiled worker) holds the lock
exclusively goes ahead under it (the parent reserved the GPU for it) instead of waiting for a
parent that waits for it. Given the job's `Phases`, every wait (for the lock, its turnstile, or the
shared hold taken back after a nested exclusive section) is counted as its `gpu_wait` phase, pausing
the phase around it; a request granted at once records nothing. With $SKILLBASE_GPU_LOCK_LOG set,
each exclusive section this process held is appended to that file (`LOCK PID START END`, epoch
seconds): a debug record that tests check for overlaps.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skillbase.config import cache_root, env
from skillbase.errors import EnvironmentProblem
from skillbase.harness.phases import GPU_WAIT

if TYPE_CHECKING:
    from skillbase.harness.phases import Phases

WAIT_NOTICE_S = 2.0      # say once that we wait, after this long
POLL_S = 0.05
LOG_ENV = "SKILLBASE_GPU_LOCK_LOG"


@dataclass
class _Held:
    fd: int
    path: Path
    exclusive: bool
    depth: int = 1
    inherited: bool = False      # our parent holds it exclusively for us: no flock of our own


_held: dict[str, _Held] = {}        # lock name -> this process's hold
_held_guard = threading.Lock()


def lock_folder() -> Path:
    return cache_root() / "gpu-locks"


def format_uuid(raw: bytes | str) -> str:
    """CUDA's 16 UUID bytes (cudaDeviceProp.uuid) as nvidia-smi prints them: GPU-8-4-4-4-12 hex."""
    if isinstance(raw, str):
        return raw if raw.startswith(("GPU-", "MIG-")) else f"GPU-{raw}"
    h = bytes(raw).hex()
    return f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def device_uuid(device_index: int = 0) -> str:
    """The UUID of the GPU that CUDA device `device_index` is in this process.

    CUDA_VISIBLE_DEVICES is applied the way CUDA applies it (indices or UUIDs); nvidia-smi gives the
    UUID of a physical index. Without either, the physical index names the lock."""
    from skillbase.harness.env import gpus

    physical: str = str(device_index)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip():
        entries = [e.strip() for e in visible.split(",") if e.strip()]
        if device_index >= len(entries):
            raise EnvironmentProblem(f"CUDA device {device_index} does not exist "
                                     f"(CUDA_VISIBLE_DEVICES={visible} shows {len(entries)})")
        physical = entries[device_index]
        if physical.startswith(("GPU-", "MIG-")):
            return physical
    for gpu in gpus():
        if str(gpu.index) == physical and gpu.uuid.startswith(("GPU-", "MIG-")):
            return gpu.uuid
    return f"index-{physical}"


def gpu_file_name(uuid: str | bytes | None = None, device_index: int = 0) -> str:
    """The GPU's name as a file name (its UUID: `uuid`, else looked up from `device_index`): the lock file's,
    and the memory ledger's (harness.gpu_memory), so that both name one GPU alike."""
    name = format_uuid(uuid) if uuid is not None else device_uuid(device_index)
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


@contextlib.contextmanager
def gpu_lock(device_index: int = 0, *, uuid: str | bytes | None = None, shared: bool = False,
             on_wait: Callable[[str], None] | None = None, phases: Phases | None = None) -> Iterator[Path]:
    """Hold the GPU's lock for the body: exclusive (the default) or shared, blocking until granted.

    `uuid` names the GPU directly (the worker passes the one CUDA reports); else it is looked up
    from `device_index`. `on_wait` is told once, in a line, when a wait lasts; `phases` (the job's)
    counts the time blocked as `gpu_wait`. Yields the lock file."""
    name = gpu_file_name(uuid, device_index)
    with _held_guard:
        held = _held.get(name)
    if held is not None:
        with _nested(held, exclusive=not shared, on_wait=on_wait, phases=phases):
            yield held.path
        return
    folder = lock_folder()
    path = folder / f"{name}.lock"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as error:
        raise EnvironmentProblem(f"cannot open the GPU lock {path} ({error.strerror})",
                                 hint="the cache folder must be writable (SKILLBASE_CACHE)") from None
    try:
        locked = _acquire(fd, path, exclusive=not shared, on_wait=on_wait, phases=phases)
        held = _Held(fd, path, exclusive=not shared, inherited=not locked)
        with _held_guard:
            _held[name] = held
        since = time.time()
        try:
            if locked and not shared:
                _mark_holder(fd)
            yield path
        finally:
            with _held_guard:
                _held.pop(name, None)
            if not held.inherited:
                if held.exclusive:
                    _log_exclusive(path, since)
                    os.ftruncate(fd, 0)      # never a stale holder: a child would take it for its parent
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _nested(held: _Held, exclusive: bool, on_wait, phases: Phases | None) -> Iterator[None]:
    """A section inside this process's own hold: converted to exclusive for its length when asked.

    The shared hold is given up before the exclusive one is asked for (two processes converting
    at once would otherwise each wait for the other's shared hold), and asked for again after."""
    convert = exclusive and not held.exclusive and not held.inherited
    if convert:
        fcntl.flock(held.fd, fcntl.LOCK_UN)
        _acquire(held.fd, held.path, exclusive=True, on_wait=on_wait, phases=phases)
        held.exclusive = True
        _mark_holder(held.fd)
    since = time.time()
    held.depth += 1
    try:
        yield
    finally:
        held.depth -= 1
        if convert:
            _log_exclusive(held.path, since)
            os.ftruncate(held.fd, 0)
            held.exclusive = False
            fcntl.flock(held.fd, fcntl.LOCK_UN)
            _acquire(held.fd, held.path, exclusive=False, on_wait=on_wait, phases=phases)


def _log_exclusive(path: Path, since: float) -> None:
    """Append one exclusive section to $SKILLBASE_GPU_LOCK_LOG (debugging; written before the release,
    so two sections of one lock in the log never overlap unless the lock failed)."""
    log = env(LOG_ENV)
    if log:
        with open(log, "a") as out:
            out.write(f"{path.stem} {os.getpid()} {since:.6f} {time.time():.6f}\n")


def _mark_holder(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


def _acquire(fd: int, path: Path, exclusive: bool, on_wait: Callable[[str], None] | None,
             phases: Phases | None = None) -> bool:
    """True once this process holds the lock; False when an ancestor holds it exclusively (for us).

    Every request passes a turnstile first (`<lock>.gate`, held only while waiting): a process waiting
    for the exclusive lock holds it, so no new shared holder slips in before it and a steady stream of
    verifications cannot starve a timed phase. `phases`' `gpu_wait` runs from the first refusal to
    the grant (a request granted at once records none)."""
    started = time.monotonic()
    said = blocked = False
    waiting = contextlib.ExitStack()

    def waited(what: str) -> None:
        nonlocal said, blocked
        if not blocked and phases is not None:
            blocked = True
            waiting.enter_context(phases(GPU_WAIT))
        if not said and on_wait is not None and time.monotonic() - started >= WAIT_NOTICE_S:
            said = True
            on_wait(what)

    try:
        gate = os.open(path.with_name(path.name + ".gate"), os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as error:
        raise EnvironmentProblem(f"cannot open the GPU lock's gate beside {path} ({error.strerror})",
                                 hint="the cache folder must be writable (SKILLBASE_CACHE)") from None
    try:
        while True:
            try:
                fcntl.flock(gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited("waiting for the GPU lock: another skillbase process is waiting to time on this GPU")
                time.sleep(POLL_S)
        try:
            mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
            while True:
                try:
                    fcntl.flock(fd, mode)
                    return True
                except BlockingIOError:
                    holder = _holder(path)
                    if holder is not None and _is_ancestor(holder):
                        return False
                    who = f" (held by process {holder})" if holder is not None else ""
                    waited(f"waiting for the GPU lock{who}: another skillbase process is "
                           f"{'using' if exclusive else 'timing on'} this GPU")
                    time.sleep(POLL_S)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
    finally:
        waiting.close()
        os.close(gate)


def _is_ancestor(pid: int, depth: int = 8) -> bool:
    """Is `pid` our parent, or its parent ...? (A worker profiled under ncu is ncu's child, not the
    child of the skillbase process that holds the lock.)"""
    current = os.getppid()
    for _ in range(depth):
        if current == pid:
            return True
        if current <= 1:
            return False
        try:
            status = Path(f"/proc/{current}/status").read_text()
            current = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        except (OSError, StopIteration, ValueError, IndexError):
            return False
    return False


def _holder(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def holds_lock(device_index: int = 0, *, uuid: str | bytes | None = None, exclusive: bool = False) -> bool:
    """Does this process hold the GPU's lock now (exclusively, when asked)?"""
    name = gpu_file_name(uuid, device_index)
    with _held_guard:
        held = _held.get(name)
    return held is not None and (held.exclusive or not exclusive)
