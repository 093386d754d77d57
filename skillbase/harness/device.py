"""The GPU through CuPy: device facts, helper kernels, limits, memory and measured peaks.

CuPy is an optional extra (`pip install 'skillbase[gpu]'`); it is imported only here and only when
a GPU is needed, and its absence is one `EnvironmentProblem` line. Everything that runs candidate
code uses CuPy's *legacy* null stream, which is the stream a launcher's `<<<grid, block>>>` launches
on: both runtimes (CuPy's and the candidate's statically linked one) share the device's primary
context, so events, the null stream and device limits are the same objects for both.

Helper kernels (compiled once per process by NVRTC through CuPy):
- `spin`: holds the launch stream busy for a given time using %globaltimer (a loop on a volatile
  local can be deleted by the compiler; a timer read in asm cannot), and reports how long it spun
  so a probe can tell whether the spin really happened;
- `fill_smem`: writes 0xFF (NaN) into the largest shared-memory block an SM can hold, on every SM,
  so a candidate that reads shared memory it never wrote sees NaN, not the zeros of a fresh process;
- `read_flush`: reads a buffer 2.5x the L2's size, evicting every line (see `flush_l2`);
- `fma_peak` and `copy4`: the FP32 FMA and copy-bandwidth ceilings for the roofline floor.
"""

from __future__ import annotations

import functools
import time
from typing import Any

from skillbase.errors import EnvironmentProblem
from skillbase.harness.gpu_lock import format_uuid

CUPY_HINT = "install the GPU extra: pip install 'skillbase[gpu]' (cupy-cuda13x for CUDA 13, cupy-cuda12x for 12)"

# cudaLimit values (driver_types.h); audited against a snapshot taken before the candidate runs.
LIMITS = {"stack_size": 0x00, "printf_fifo_size": 0x01, "malloc_heap_size": 0x02,
          "max_l2_fetch_granularity": 0x05, "persisting_l2_cache_size": 0x06}
# The stack size grows by itself when a kernel needs more local memory: not a cheat, not audited.
AUDITED_LIMITS = ("printf_fifo_size", "malloc_heap_size", "max_l2_fetch_granularity", "persisting_l2_cache_size")

_HELPERS = r"""
extern "C" __global__ void skillbase_spin(unsigned long long ns, unsigned long long* spun) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
    if (threadIdx.x == 0 && blockIdx.x == 0) spun[0] = now - start;
}

extern "C" __global__ void skillbase_fill_smem(unsigned int words) {
    extern __shared__ unsigned int smem[];
    volatile unsigned int* v = smem;   // volatile: stores nobody reads must still happen
    for (unsigned int i = threadIdx.x; i < words; i += blockDim.x) v[i] = 0xFFFFFFFFu;
    __syncthreads();
}

extern "C" __global__ void skillbase_fma_peak(float* out, int iters, float a, float b) {
    float x0 = threadIdx.x * 1e-3f, x1 = x0 + 1e-3f, x2 = x0 + 2e-3f, x3 = x0 + 3e-3f;
    float x4 = x0 + 4e-3f, x5 = x0 + 5e-3f, x6 = x0 + 6e-3f, x7 = x0 + 7e-3f;
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int j = 0; j < 16; ++j) {   // 8 independent chains hide the FMA latency
            x0 = fmaf(x0, a, b); x1 = fmaf(x1, a, b); x2 = fmaf(x2, a, b); x3 = fmaf(x3, a, b);
            x4 = fmaf(x4, a, b); x5 = fmaf(x5, a, b); x6 = fmaf(x6, a, b); x7 = fmaf(x7, a, b);
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}

extern "C" __global__ void skillbase_read_flush(const uint4* __restrict__ src, unsigned long long n, unsigned int* sink) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned int acc = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint4 v = src[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9E3779B9u) sink[0] = acc;   // a store the compiler cannot prove dead keeps every load
}

extern "C" __global__ void skillbase_copy4(const float4* __restrict__ src, float4* __restrict__ dst, unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}
"""  # noqa: E501 - CUDA source: its long loop headers stay as written


def import_cupy():
    """CuPy, or one EnvironmentProblem line saying how to get it / why no device answers."""
    try:
        import cupy
    except ImportError as error:
        raise EnvironmentProblem(f"CuPy is not importable ({error}); the harness needs it to run kernels",
                                 hint=CUPY_HINT) from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # noqa: BLE001 - CUDARuntimeError without a driver, ImportError of libcudart ...
        raise EnvironmentProblem(f"no usable CUDA device ({_one_line(error)})",
                                 hint="run on a machine with an NVIDIA GPU and driver (check `nvidia-smi`)") from None
    if count == 0:
        raise EnvironmentProblem("no CUDA device found",
                                 hint="run on a machine with an NVIDIA GPU (check `nvidia-smi`)")
    return cupy


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


class Device:
    """One GPU, its helper kernels and the measurements the harness needs from it."""

    def __init__(self, index: int = 0):
        cp = import_cupy()
        self.cp = cp
        self.index = index
        cp.cuda.Device(index).use()
        props = cp.cuda.runtime.getDeviceProperties(index)
        name = props.get("name", b"")
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.cc = f"{props.get('major')}.{props.get('minor')}"
        self.sm_count = int(props.get("multiProcessorCount", 0))
        self.l2_bytes = int(props.get("l2CacheSize", 0))
        self.smem_optin = int(props.get("sharedMemPerBlockOptin", 0) or props.get("sharedMemPerBlock", 49152))
        self.persisting_l2_max = int(props.get("persistingL2CacheMaxSize", 0) or 0)
        # CUDA's own UUID of this device names its lock (harness.gpu_lock); None: looked up by index.
        raw_uuid = props.get("uuid")
        self.uuid = format_uuid(raw_uuid) if isinstance(raw_uuid, bytes | bytearray) and len(raw_uuid) == 16 else None
        self.null = cp.cuda.Stream.null
        self._kernels: dict[str, Any] = {}
        self._spun = cp.zeros(1, dtype=cp.uint64)
        self._flush: Any = None
        self._flush_value = 0
        self._smem_attr_set = False

    # -- facts ------------------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        runtime = self.cp.cuda.runtime
        return {"name": self.name, "compute_capability": self.cc, "sm_count": self.sm_count,
                "l2_bytes": self.l2_bytes, "smem_per_block_optin": self.smem_optin,
                "driver_version": runtime.driverGetVersion(), "runtime_version": runtime.runtimeGetVersion(),
                "cupy_version": self.cp.__version__}

    # -- helpers ----------------------------------------------------------------------------------
    def kernel(self, name: str):
        if name not in self._kernels:
            self._kernels[name] = self.cp.RawKernel(_HELPERS, f"skillbase_{name}")
        return self._kernels[name]

    def sync(self) -> None:
        self.cp.cuda.runtime.deviceSynchronize()

    def memset(self, array, byte: int) -> None:
        """Fill an array's bytes on the launch stream (poisoning outputs, flushing L2)."""
        if array.nbytes:
            self.cp.cuda.runtime.memsetAsync(array.data.ptr, int(byte), array.nbytes, self.null.ptr)

    def spin(self, ms: float) -> None:
        """Queue a one-thread kernel that keeps the launch stream busy for `ms` milliseconds."""
        self.kernel("spin")((1,), (1,), (self.cp.uint64(int(ms * 1e6)), self._spun))

    def spun_ms(self) -> float:
        return float(self._spun.get()[0]) / 1e6

    def fill_shared_nan(self) -> None:
        """Every SM's shared memory := 0xFF bytes, so uninitialised shared reads see NaN."""
        k = self.kernel("fill_smem")
        size = self.smem_optin
        if not self._smem_attr_set:
            k.max_dynamic_shared_size_bytes = size   # opt in above the 48 KB default
            self._smem_attr_set = True
        # One block fits per SM at the opt-in maximum; 2x the SM count makes sure every SM gets one.
        k((max(1, 2 * self.sm_count),), (1024,), (self.cp.uint32(size // 4),), shared_mem=size)

    def event(self):
        return self.cp.cuda.Event()

    @staticmethod
    def elapsed_ms(start, end) -> float:
        import cupy

        return float(cupy.cuda.get_elapsed_time(start, end))

    # -- memory and limits ------------------------------------------------------------------------
    def mem_free(self) -> int:
        self.sync()
        free, _ = self.cp.cuda.runtime.memGetInfo()
        return int(free)

    def mem_available(self) -> int:
        """What the harness could still allocate: the driver's free memory plus the blocks CuPy's pool
        holds for reuse (freed by us, not given back to the driver); no sync, nothing allocated."""
        free, _ = self.cp.cuda.runtime.memGetInfo()
        return int(free) + int(self.cp.get_default_memory_pool().free_bytes())

    def limits(self) -> dict[str, int]:
        out = {}
        for name, code in LIMITS.items():
            try:
                out[name] = int(self.cp.cuda.runtime.deviceGetLimit(code))
            except self.cp.cuda.runtime.CUDARuntimeError:  # a limit this device does not support
                continue
        return out

    def limits_changed(self, snapshot: dict[str, int]) -> dict[str, tuple[int, int]]:
        now = self.limits()
        return {name: (snapshot[name], now[name]) for name in AUDITED_LIMITS
                if name in snapshot and name in now and snapshot[name] != now[name]}

    # -- L2 -----------------------------------------------------------------------------------------
    def flush_l2(self) -> None:
        """Evict the L2 by *reading* 2.5x its size, and demote persisting lines (outside any timed window).

        Reading, not writing: a write-based flush leaves the L2 full of dirty lines that the next
        kernel pays to write back to DRAM inside its timed window (on the H200 a memset flush added
        ~8 us to a 33 us copy and ~14 us to a 131 us one, against ncu's gpu__time_duration). Loads
        leave clean lines that are evicted for free, which is also the state ncu's cache control
        gives a profiled kernel.
        """
        from skillbase.harness.l2 import flush_bytes, reset_persisting_lines

        cp = self.cp
        if self._flush is None:
            self._flush = cp.empty(flush_bytes(self.l2_bytes) // 16 * 4, dtype=cp.uint32)
            self.memset(self._flush, 0x5A)
            self._flush_sink = cp.zeros(1, dtype=cp.uint32)
        reset_persisting_lines()
        n16 = self._flush.nbytes // 16
        blocks = max(1, 4 * self.sm_count)
        self.kernel("read_flush")((blocks,), (512,), (self._flush, cp.uint64(n16), self._flush_sink))

    # -- peaks --------------------------------------------------------------------------------------
    @functools.cached_property
    def peaks(self) -> dict[str, float]:
        """Measured copy bandwidth (bytes read + written per second) and FP32 FMA rate.

        Measuring takes seconds and every candidate runs in a fresh worker, so the figures are kept
        per device model, CC and driver in the cache for a day; anything odd about the cached file
        means measuring again.
        """
        import json
        import re
        import time

        from skillbase.config import cache_root

        root = cache_root() / "peaks"
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{self.name}-cc{self.cc}-driver{self.info().get('driver_version')}")
        path = root / f"{slug}.json"
        try:
            cached = json.loads(path.read_text())
            if time.time() - cached["measured_at"] < 86400 and cached["copy_bytes_per_s"] > 0 \
                    and cached["fp32_flops_per_s"] > 0:
                return {"copy_bytes_per_s": float(cached["copy_bytes_per_s"]),
                        "fp32_flops_per_s": float(cached["fp32_flops_per_s"])}
        except (OSError, ValueError, KeyError, TypeError):
            pass
        peaks = {"copy_bytes_per_s": self._measure_copy(), "fp32_flops_per_s": self._measure_fma()}
        try:
            root.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({**peaks, "measured_at": time.time()}))
        except OSError:
            pass
        return peaks

    def _best_ms(self, launch, reps: int = 5) -> float:
        start, end = self.event(), self.event()
        launch()  # warm-up (module load, clocks)
        best = float("inf")
        for _ in range(reps):
            self.sync()
            start.record(self.null)
            launch()
            end.record(self.null)
            end.synchronize()
            best = min(best, self.elapsed_ms(start, end))
        return best

    def _measure_copy(self) -> float:
        cp = self.cp
        nbytes = max(1 << 30, 8 * self.l2_bytes)   # far beyond L2: DRAM, not cache
        src = cp.ones(nbytes // 4, dtype=cp.float32)
        dst = cp.empty_like(src)
        memcpy_ms = self._best_ms(lambda: cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, 3,
                                                                      self.null.ptr))
        n4 = nbytes // 16
        k = self.kernel("copy4")
        grid = (self.sm_count * 8,)
        kernel_ms = self._best_ms(lambda: k(grid, (512,), (src, dst, cp.uint64(n4))))
        return 2.0 * nbytes / (min(memcpy_ms, kernel_ms) * 1e-3)

    def _measure_fma(self) -> float:
        cp = self.cp
        blocks, threads, iters = self.sm_count * 8, 256, 2048
        out = cp.empty(blocks * threads, dtype=cp.float32)
        k = self.kernel("fma_peak")
        ms = self._best_ms(lambda: k((blocks,), (threads,), (out, cp.int32(iters), cp.float32(0.999),
                                                             cp.float32(1e-3))))
        flops = 2.0 * 8 * 16 * iters * blocks * threads
        return flops / (ms * 1e-3)


def wait_ms(ms: float) -> None:
    """Sleep on the host (probes give side-stream work time to show itself)."""
    time.sleep(ms / 1e3)
