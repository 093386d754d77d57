"""One skillbase process at a time on a GPU's timed phases: an inter-process lock per GPU.

    from skillbase.harness.gpu_lock import gpu_lock
    with gpu_lock(0):          # the CUDA device index this process sees
        ...                    # timing, launch-stream probes: nothing else of ours shares the GPU

Timing and the launch-stream probes measure time on the device; a neighbour's kernels on the same
GPU stretch both (three `check` processes on one H200 once quarantined two honest kernels). The
worker takes this lock around its timed phase and its probes; verification, which measures no
time, runs unlocked, so several candidates still share a GPU for everything else.

The lock is `fcntl.flock` on one file per GPU *UUID* in the cache folder (`<cache>/gpu-locks/`):
a UUID names the physical GPU whatever CUDA_VISIBLE_DEVICES renumbers, and the kernel drops the
lock when its holder dies (a killed worker never leaves the GPU locked). Within one process the
lock is re-entrant. A process that holds it may run a worker that times on the same GPU: the holder
writes its PID into the file, and a worker whose parent holds the lock goes ahead under it (the
parent reserved the GPU for it) instead of waiting for a parent that waits for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from skillbase.config import cache_root
from skillbase.errors import EnvironmentProblem

WAIT_NOTICE_S = 2.0      # say once that we wait, after this long
POLL_S = 0.05

_held: dict[str, int] = {}          # lock name -> depth, in this process
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


def _lock_name(uuid: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in uuid)


@contextlib.contextmanager
def gpu_lock(device_index: int = 0, *, uuid: str | bytes | None = None,
             on_wait: Callable[[str], None] | None = None) -> Iterator[Path]:
    """Hold the GPU's lock for the body (blocking until no other skillbase process holds it).

    `uuid` names the GPU directly (the worker passes the one CUDA reports); else it is looked up
    from `device_index`. `on_wait` is told once, in a line, when the wait lasts. Yields the lock file."""
    name = _lock_name(format_uuid(uuid) if uuid is not None else device_uuid(device_index))
    folder = lock_folder()
    path = folder / f"{name}.lock"
    with _held_guard:
        if _held.get(name):
            _held[name] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield path
        finally:
            with _held_guard:
                _held[name] -= 1
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as error:
        raise EnvironmentProblem(f"cannot open the GPU lock {path} ({error.strerror})",
                                 hint="the cache folder must be writable (SKILLBASE_CACHE)") from None
    try:
        locked = _acquire(fd, path, on_wait)
        with _held_guard:
            _held[name] = 1
        try:
            if locked:
                # Who holds it: a child of ours goes ahead under it; a person sees who waits for whom.
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield path
        finally:
            with _held_guard:
                _held.pop(name, None)
            if locked:
                os.ftruncate(fd, 0)      # never a stale holder: a child would take it for its parent
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(fd: int, path: Path, on_wait: Callable[[str], None] | None) -> bool:
    """True once this process holds the lock; False when its parent holds it (for this process)."""
    started = time.monotonic()
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            holder = _holder(path)
            if holder is not None and holder == os.getppid():
                return False
            if not told and on_wait is not None and time.monotonic() - started >= WAIT_NOTICE_S:
                told = True
                who = f" (held by process {holder})" if holder is not None else ""
                on_wait(f"waiting for the GPU lock{who}: another skillbase process is timing on this GPU")
            time.sleep(POLL_S)


def _holder(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def holds_lock(device_index: int = 0, *, uuid: str | bytes | None = None) -> bool:
    """Does this process hold the GPU's lock now?"""
    name = _lock_name(format_uuid(uuid) if uuid is not None else device_uuid(device_index))
    with _held_guard:
        return bool(_held.get(name))
