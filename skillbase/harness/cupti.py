"""Kernel time from CUPTI activity records: what the device itself says each launcher call took.

CUDA events on the launch stream time more than the kernels (the event commands and the gaps
between launches: +8 % on a 33 us copy against ncu on the H200) and nothing on another stream.
CUPTI's activity records carry the device start and end of every kernel, memcpy and memset, with
the stream it ran on and the correlation ID of the API call that issued it. Our C++ helper
(`cupti_timer.cpp`, built once per machine with nvcc into the cache and loaded with ctypes)
brackets host calls in *windows* and hands back the records each window issued, on any stream and
from any thread; `attribute` and `call_span_ns` turn them into times, `unordered` into the
launch-stream check. Pure functions are tested on the CPU.

CUPTI allows one subscriber per process: under ncu, nsys or compute-sanitizer (or without the
library) `start_timer` raises `CuptiUnavailable` with the reason, and the harness times with
events instead, saying so in the result (`SizeTiming.timer`).
"""

from __future__ import annotations

import bisect
import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from skillbase.config import cache_root, private_dir
from skillbase.errors import EnvironmentProblem, SkillbaseError

SOURCE = Path(__file__).with_name("cupti_timer.cpp")
NAME_BYTES = 64
RECORD_CAPACITY = 1 << 16     # records per collect (a timed sample issues a handful)
MAX_WINDOWS = 4096            # cupti_timer.cpp's SKB_MAX_WINDOWS

KIND_MEMCPY = 1               # CUpti_ActivityKind values (cupti_activity.h)
KIND_MEMSET = 2
KIND_KERNEL = 3
KIND_CONCURRENT_KERNEL = 10   # CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
KERNEL_KINDS = (KIND_KERNEL, KIND_CONCURRENT_KERNEL)


class CuptiUnavailable(SkillbaseError):
    """CUPTI cannot time this process (no library, no driver, another profiler attached)."""


class CuptiError(SkillbaseError):
    """A CUPTI call failed after the timer had started."""


class _Record(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_uint32), ("stream_id", ctypes.c_uint32), ("correlation_id", ctypes.c_uint32),
                ("device_id", ctypes.c_uint32), ("start_ns", ctypes.c_uint64), ("end_ns", ctypes.c_uint64),
                ("name", ctypes.c_char * NAME_BYTES)]


class _Window(ctypes.Structure):
    _fields_ = [("first_correlation", ctypes.c_uint32), ("last_correlation", ctypes.c_uint32),
                ("calls", ctypes.c_uint32), ("foreign_calls", ctypes.c_uint32), ("allocations", ctypes.c_uint32),
                ("frees", ctypes.c_uint32), ("allocation_name", ctypes.c_char * NAME_BYTES)]


@dataclass(frozen=True)
class Record:
    """One kernel, memcpy or memset as the device ran it (ns on CUPTI's clock)."""

    kind: int
    stream_id: int
    correlation_id: int
    start_ns: int
    end_ns: int
    name: str = ""

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def complete(self) -> bool:
        return self.end_ns > 0 and self.end_ns >= self.start_ns


@dataclass(frozen=True)
class Window:
    """The API calls one window saw: correlation IDs [first, last], how many, how many from other threads,
    how many allocated or freed memory (a runtime call and the driver calls it made: one) and the first
    allocating function's name."""

    first_correlation: int
    last_correlation: int
    calls: int = 0
    foreign_calls: int = 0
    allocations: int = 0
    frees: int = 0
    allocation_name: str = ""

    def owns(self, record: Record) -> bool:
        return self.first_correlation != 0 and self.first_correlation <= record.correlation_id <= self.last_correlation


# ------------------------------------------------------------------------------------------------
# Pure functions (CPU-tested)
# ------------------------------------------------------------------------------------------------

def attribute(records: list[Record], windows: list[Window]) -> list[list[Record]]:
    """The records each window issued, in start order (a record outside every window is dropped:
    the harness's own copies, poisoning and flushes)."""
    out: list[list[Record]] = [[] for _ in windows]
    # Windows follow one another, so their ID ranges do not overlap: find each record's by bisection
    # (a sample of 1000 launches has 1001 windows and as many records).
    ranked = sorted((w.first_correlation, i) for i, w in enumerate(windows) if w.first_correlation)
    firsts = [first for first, _ in ranked]
    for record in records:
        at = bisect.bisect_right(firsts, record.correlation_id) - 1
        if at >= 0 and windows[ranked[at][1]].owns(record):
            out[ranked[at][1]].append(record)
    for found in out:
        found.sort(key=lambda r: (r.start_ns, r.end_ns))
    return out


def call_span_ns(records: list[Record]) -> int:
    """A launcher call's device time: first start to last end of what it issued (0 when nothing).

    One kernel: its duration, which is what ncu's gpu__time_duration reads. Several: the gaps between
    them count, since the call cannot finish sooner; the host's launch latency before the first does not."""
    if not records:
        return 0
    return max(r.end_ns for r in records) - min(r.start_ns for r in records)


def unordered(call: list[Record], hold: Record | None, after: Record | None = None) -> list[str]:
    """Work of a call that the launch stream did not order: it started while the stream was held by
    `hold` (a kernel queued before the call), or was still running when `after` (a kernel queued on
    the launch stream right after the call) started. One line per offending record."""
    found = []
    for r in call:
        where = f"{r.name or 'a kernel'} on stream {r.stream_id}"
        if hold is not None and r.start_ns < hold.end_ns and r.stream_id != hold.stream_id:
            found.append(f"{where} started {(hold.end_ns - r.start_ns) / 1e3:.1f} us before the held launch stream "
                         f"(stream {hold.stream_id}) was released")
        elif after is not None and r.end_ns > after.start_ns and r.stream_id != after.stream_id:
            found.append(f"{where} was still running {(r.end_ns - after.start_ns) / 1e3:.1f} us after the launch "
                         f"stream (stream {after.stream_id}) had moved on")
    return found


def other_streams(call: list[Record], launch_stream: int) -> list[int]:
    """Streams other than the launch stream that a call's records ran on."""
    return sorted({r.stream_id for r in call if r.stream_id != launch_stream})


# ------------------------------------------------------------------------------------------------
# Building the helper
# ------------------------------------------------------------------------------------------------

def toolkit_root(nvcc: str) -> Path:
    """The CUDA toolkit `nvcc` belongs to, as nvcc itself reports it (TOP= of a dry run), since the nvcc
    on PATH may be a wrapper script outside the toolkit; else the folder above nvcc's own."""
    try:
        proc = subprocess.run([nvcc, "--dryrun", "-E", "-x", "cu", os.devnull], capture_output=True, text=True,
                              timeout=60)
        for line in (proc.stderr + proc.stdout).splitlines():
            if line.startswith("#$ TOP="):
                return Path(line.split("=", 1)[1].strip()).resolve()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return Path(nvcc).resolve().parent.parent


def find_cupti(nvcc: str) -> tuple[Path, Path]:
    """(the folder with cupti.h, libcupti.so*) of the toolkit that `nvcc` belongs to.

    Toolkits place CUPTI in extras/CUPTI (runfile installs), targets/<arch>/ (packages) or beside the
    toolkit's own headers and libraries (pip-style layouts)."""
    root = toolkit_root(nvcc)
    includes = [root / "extras" / "CUPTI" / "include", *sorted(root.glob("targets/*/include")), root / "include"]
    libraries = [root / "extras" / "CUPTI" / "lib64", *sorted(root.glob("targets/*/lib")), root / "lib64",
                 root / "lib"]
    include = next((d for d in includes if (d / "cupti.h").is_file()), None)
    if include is None:
        raise CuptiUnavailable(f"cupti.h not found in the CUDA toolkit at {root}")
    for folder in libraries:
        found = sorted(folder.glob("libcupti.so*"), key=lambda p: (len(p.name), p.name))
        if found:
            return include, found[0]
    raise CuptiUnavailable(f"libcupti.so not found in the CUDA toolkit at {root}")


def build_timer(cache_dir: Path | None = None) -> Path:
    """The helper library, compiled once per (source, nvcc, CUPTI) into `<cache>/cupti/<key>/`;
    `CuptiUnavailable` with the reason for anything that stops it (the harness then uses events)."""
    try:
        return _build_timer(cache_dir)
    except EnvironmentProblem as error:
        raise CuptiUnavailable(error.message) from None
    except OSError as error:
        raise CuptiUnavailable(f"cannot build the CUPTI timer ({error})") from None


def _build_timer(cache_dir: Path | None) -> Path:
    from skillbase.harness.env import nvcc_path, nvcc_version_text

    nvcc = nvcc_path()
    include, library = find_cupti(nvcc)
    digest = hashlib.sha256()
    for part in (SOURCE.read_bytes(), nvcc_version_text(nvcc).encode(), (include / "cupti.h").read_bytes(),
                 str(library.resolve()).encode()):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    if cache_dir is not None:
        root = cache_dir / "cupti"
    else:   # the helper is loaded and run: a cache others can write into could hand us theirs (as in build.py)
        private_dir(cache_root())
        root = private_dir(cache_root() / "cupti")
    entry = root / digest.hexdigest()[:24]
    target = entry / "libskillbase_cupti.so"
    if target.is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
    try:
        # -cudart none: the helper calls CUPTI only; the library path is linked by name with an rpath,
        # since a toolkit may ship libcupti.so.13 without the unversioned development link.
        command = [nvcc, "-shared", "-Xcompiler", "-fPIC", "-O2", "-std=c++17", "-cudart", "none", f"-I{include}",
                   "-o", str(scratch / target.name), str(SOURCE), "-Xlinker", str(library.resolve()),
                   "-Xlinker", f"-rpath={library.resolve().parent}"]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise CuptiUnavailable(f"cannot build the CUPTI timer ({error})") from None
        if proc.returncode != 0:
            text = (proc.stderr or proc.stdout).strip().splitlines()
            raise CuptiUnavailable(f"the CUPTI timer does not build: {text[0] if text else proc.returncode}")
        try:
            os.rename(scratch, entry)
        except OSError:
            if not target.is_file():   # another process finished the same key first: use its copy
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


# ------------------------------------------------------------------------------------------------
# The timer (one per process: CUPTI's subscriber is process-wide)
# ------------------------------------------------------------------------------------------------

class CuptiTimer:
    """The loaded helper, started: `window()` brackets calls, `collect()` returns what they issued."""

    def __init__(self, library: Path):
        try:
            self.lib = ctypes.CDLL(str(library))
        except OSError as error:
            raise CuptiUnavailable(f"cannot load the CUPTI timer ({error})") from None
        lib = self.lib
        lib.skb_cupti_error.restype = ctypes.c_char_p
        lib.skb_cupti_error.argtypes = []
        for name in ("skb_cupti_start", "skb_cupti_close", "skb_cupti_discard", "skb_cupti_stop",
                     "skb_cupti_record_size", "skb_cupti_window_size"):
            getattr(lib, name).restype = ctypes.c_int
            getattr(lib, name).argtypes = []
        lib.skb_cupti_open.restype = ctypes.c_int
        lib.skb_cupti_open.argtypes = [ctypes.POINTER(ctypes.c_int)]
        lib.skb_cupti_collect.restype = ctypes.c_int
        lib.skb_cupti_collect.argtypes = [ctypes.POINTER(_Record), ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                          ctypes.POINTER(_Window), ctypes.POINTER(ctypes.c_int),
                                          ctypes.POINTER(ctypes.c_ulonglong)]
        if lib.skb_cupti_record_size() != ctypes.sizeof(_Record) or \
                lib.skb_cupti_window_size() != ctypes.sizeof(_Window):
            raise CuptiUnavailable("the CUPTI timer's record layout differs from skillbase's (stale build?)")
        self._records = (_Record * RECORD_CAPACITY)()
        self._windows = (_Window * MAX_WINDOWS)()
        self._index = ctypes.c_int(0)
        self.started = False

    def _error(self) -> str:
        return (self.lib.skb_cupti_error() or b"").decode("utf-8", "replace")

    def start(self) -> None:
        if self.lib.skb_cupti_start() != 0:
            raise CuptiUnavailable(self._error())
        self.started = True

    def open(self) -> int:
        if self.lib.skb_cupti_open(ctypes.byref(self._index)) != 0:
            raise CuptiError(self._error())
        return self._index.value

    def close(self) -> None:
        if self.lib.skb_cupti_close() != 0:
            raise CuptiError(self._error())

    def discard(self) -> None:
        """Forget every record so far (the device must be idle, or its late records count later)."""
        if self.lib.skb_cupti_discard() != 0:
            raise CuptiError(self._error())

    def collect(self) -> tuple[list[Record], list[Window], int]:
        """(records, windows, records CUPTI dropped) since the last collect; the device must be synchronised."""
        count, windows, dropped = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_ulonglong(0)
        code = self.lib.skb_cupti_collect(self._records, RECORD_CAPACITY, ctypes.byref(count), self._windows,
                                          ctypes.byref(windows), ctypes.byref(dropped))
        if code != 0:
            raise CuptiError(self._error())
        records = [Record(r.kind, r.stream_id, r.correlation_id, r.start_ns, r.end_ns,
                          r.name.decode("utf-8", "replace")) for r in self._records[:count.value]]
        found = [Window(w.first_correlation, w.last_correlation, w.calls, w.foreign_calls, w.allocations, w.frees,
                        w.allocation_name.decode("utf-8", "replace")) for w in self._windows[:windows.value]]
        return records, found, int(dropped.value)

    def stop(self) -> None:
        """Disable the activity kinds and unsubscribe (a no-op when stopped). A failed unsubscribe raises
        CuptiError: CUPTI keeps the subscriber, so a later `start` in this process would be refused."""
        if self.started:
            self.started = False
            if self.lib.skb_cupti_stop() != 0:
                raise CuptiError(self._error())


_timer: CuptiTimer | None = None
_unavailable: str | None = None


def start_timer() -> CuptiTimer:
    """This process's started CUPTI timer; `CuptiUnavailable` (the reason) when CUPTI cannot time here.

    Tried once per process: a failure is remembered, so one clock serves every measurement."""
    global _timer, _unavailable
    if _timer is not None:
        return _timer
    if _unavailable is not None:
        raise CuptiUnavailable(_unavailable)
    try:
        timer = CuptiTimer(build_timer())
        timer.start()
    except CuptiUnavailable as error:
        _unavailable = error.message
        raise
    _timer = timer
    return timer
