"""The worker's GPU state for one job: the task, the loaded libraries, inputs, references and calls.

A `Case` is one (size, seed, variant) of the task: host inputs, a pristine device copy of each,
and its reference outputs (`References`): kept on the device scrambled with a key only the host
holds (harness.scramble: ChaCha20), or on the host, never in the clear on the device while a candidate runs,
where it could find them. A reference computed on the device (a native reference, or a python
reference marked `device = True`) stays there scrambled unless the device lacks room for it
(`ROOM_CALL_SETS`), then it is copied to the host, as every unmarked python reference is; checks
unscramble or upload it for one comparison and scrub that copy. `Session.call` runs one launcher
on fresh copies of a case's inputs with poisoned outputs, checks the inputs afterwards against
the pristine copies on the device, keeps device copies of the outputs and scrubs every device
buffer it used before freeing it (CuPy's pool hands freed blocks to the next allocation, which
must never see a previous call's results).

Scratch arguments (role `scratch`) are allocated and poisoned like outputs, but never brought back,
compared or reported. Libraries whose spec names `hooks:` are set up in `prepare()` (each size,
before any reference or candidate call at it, never inside a timed window or a probe) and torn
down by `close()`.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from skillbase.errors import InputError
from skillbase.harness.device import Device, wait_ms
from skillbase.harness.native import NativeLauncher
from skillbase.harness.phases import Phases
from skillbase.harness.scramble import new_key, scramble
from skillbase.harness.torch_launcher import TorchLauncher, launcher_for
from skillbase.harness.verify import POISON, compare_outputs

SCALE_VARIANT = 4.0   # a power of two: exact in every float format, changes every magnitude

# A reference stays on the device (scrambled) only while the device keeps room, after it, for what
# the job still allocates at that size: timing holds two buffer slots of every pointer argument per
# timed kernel (candidate and baseline: 4 sets), more than a verification call holds (a set of
# buffers, its output copies, one plain reference and a comparison's temporaries, each at most an
# argument's size); plus a fixed allowance for what the libraries allocate beside CuPy (cuBLAS and
# cuDNN workspaces, torch's cache, CUPTI's buffers). Short of it the reference goes to the host
# (today's path): the same bytes, the same comparisons, the same verdicts.
ROOM_CALL_SETS = 4
ROOM_FIXED_BYTES = 2 << 30
DLPACK_CUDA = 2    # DLDeviceType kDLCUDA


@dataclass
class Case:
    size: str
    sizes: dict[str, int]
    seed: int
    variant: str
    resolved: Any                                  # skillbase.task.ResolvedTask
    host_inputs: dict[str, np.ndarray]
    pristine: dict[str, Any]                       # cupy arrays, flat storage dtype
    outputs: list[Any]                             # ArgSpec of out/inout args (scratch excluded)
    tolerance: dict[str, tuple[float, float]]      # name -> (rtol, atol_scale)
    reference: References | None = None            # set by Session.prepare


class References:
    """A case's reference outputs, with one way in: `device_view(name)`, a plain device copy for one
    check, scrubbed when the block ends, or `host(name)`, a host copy made on demand (its time is the
    `reference-host` phase). Each output is kept either scrambled on the device (its key on the host
    only) or plain on the host, so no caller can meet a scrambled buffer or forget to scrub a plain one."""

    def __init__(self, session: Session):
        self._session = session
        self._host: dict[str, np.ndarray] = {}
        self._device: dict[str, tuple[Any, tuple[int, ...]]] = {}   # name -> (scrambled device array, its key)

    @property
    def names(self) -> list[str]:
        return [*self._host, *self._device]

    def on_device(self, name: str) -> bool:
        return name in self._device

    def keep_host(self, name: str, array: np.ndarray) -> None:
        self._host[name] = array

    def keep_device(self, name: str, array) -> None:
        """A scrambled copy of a device array in a buffer of ours (the caller scrubs the original)."""
        own = array.copy()
        key = new_key()          # fresh per output: two outputs never share a stream
        scramble(own, key)
        self._device[name] = (own, key)

    def host(self, name: str) -> np.ndarray:
        """The reference on the host; a scrambled one is unscrambled into a scrubbed device copy (the
        device's speed, not numpy's) and brought back."""
        if name in self._host:
            return self._host[name]
        with self._session.phases("reference-host"), self.device_view(name) as plain:
            return self._session.cp.asnumpy(plain)

    @contextlib.contextmanager
    def device_view(self, name: str):
        """A plain device copy of one output for a check, overwritten with POISON when the block ends."""
        session = self._session
        if name in self._device:
            scrambled, key = self._device[name]
            plain = scrambled.copy()
            scramble(plain, key)
        else:
            plain = session.cp.asarray(self._host[name])
        session.plain_references += 1
        try:
            yield plain
        finally:
            session.device.memset(plain, POISON)
            session.device.sync()
            session.plain_references -= 1


@dataclass
class CallOutcome:
    outputs: dict[str, Any]          # device (cupy) copies of the outputs; `release` scrubs them
    inputs_changed: dict[str, int]
    session: Any = None

    def host(self, name: str) -> np.ndarray:
        return self.outputs[name].get()

    def release(self) -> None:
        """Scrub and free the output copies: a freed block must never hand results to a later call."""
        if self.session is not None and self.outputs:
            self.session._scrub(self.outputs)


class Session:
    """Everything one worker job needs on the GPU."""

    def __init__(self, job: dict, progress: Callable[[str], None] = lambda message: None,
                 phases: Phases | None = None):
        from skillbase.task import load_task

        self.progress = progress
        self.phases = phases or Phases()     # where the job's time goes (inputs and references counted here)
        self.device = Device(int(job.get("device", 0)))
        # Snapshot before any candidate code is loaded: a library constructor could change limits.
        self.limits_snapshot = self.device.limits()
        self.spec = load_task(job["task"], check_launcher=False)
        self.args = list(self.spec.args)
        self.cp = self.device.cp
        self.side_stream = self.cp.cuda.Stream(non_blocking=True)
        reference = job.get("reference") or {"kind": "self"}
        self.reference_kind = reference["kind"]
        self.python_reference = self.spec.reference_callable() if self.reference_kind == "python" else None
        # A python reference marked `fn.device = True` takes device inputs and may return device arrays
        # (docs/task-format.md); an unmarked one keeps the numpy contract.
        self.device_reference = getattr(self.python_reference, "device", False) is True
        self.plain_references = 0     # plain reference copies on the device now (never while a candidate runs)
        self.reference = None
        # Each library comes with the hooks of the spec that describes it (the job says which).
        if self.reference_kind == "cuda":
            self.reference = NativeLauncher(reference["library"], self.spec.launcher, self.args, "reference",
                                            hooks=reference.get("hooks"))
        self.baseline = None
        if job.get("baseline"):
            self.baseline = NativeLauncher(job["baseline"]["library"], self.spec.launcher, self.args, "baseline",
                                           hooks=job["baseline"].get("hooks"))
        # A native library, or a PyTorch implementation where the task allows torch (same interface).
        self.candidate = launcher_for(job["candidate"], self.spec, "candidate")
        if self.reference_kind == "self":
            # Verifying a kernel against itself (`skillbase check`): a second, separate instance.
            self.reference = launcher_for(job["candidate"], self.spec, "reference")
        self.kept_sizes, self.kept = set(), {}
        verify, timing = job.get("verify") or {}, job.get("time") or {}
        # The probes' size (verification's first) and the timed ones: their cases serve again there.
        self.keep_cases_at(*[(name, sizes) for name, sizes in [*verify.get("sizes", [])[:1], *timing.get("sizes", [])]])

    @property
    def launchers(self) -> list[NativeLauncher]:
        return [launcher for launcher in (self.reference, self.baseline, self.candidate) if launcher is not None]

    # -- hooks ------------------------------------------------------------------------------------
    def setup(self, scalars: dict[str, Any], inputs: dict[str, np.ndarray] | None = None) -> None:
        """hooks.setup of every loaded library, with this size's scalars (a no-op when they are
        already set up for them). Called from prepare(), so before any call at a size and never
        inside a timed window or a launch-stream probe; the device is synchronised afterwards.
        `inputs`: host inputs at this size, on which a torch launcher warms up (else it draws its own)."""
        ran = False
        for launcher in self.launchers:
            ran = (launcher.setup(scalars, inputs) if isinstance(launcher, TorchLauncher)
                   else launcher.setup(scalars)) or ran
        if ran:
            self.device.sync()

    def assert_set_up(self, launcher: NativeLauncher, scalars: dict[str, Any]) -> None:
        """Inside a probe or a timed window nothing may be set up: it must have happened before."""
        if launcher.has_setup and launcher.setup_for != launcher.setup_key(scalars):
            raise RuntimeError(f"internal: {launcher.label} is not set up for {scalars} before a probe/timed call")

    # -- cases ----------------------------------------------------------------------------------
    def keep_cases_at(self, *sizes: tuple[str, dict[str, int]]) -> None:
        """Keep the host inputs and references of the spec cases drawn at these sizes (the probes'
        and the timed ones) for the whole job: a later `prepare` or `value_sets` of the same case
        uploads them again instead of drawing them and computing the reference once more."""
        self.kept_sizes.update((name, _sizes_key(s)) for name, s in sizes)

    def prepare(self, size: str, sizes: dict[str, int], seed: int, variant: str = "spec") -> Case:
        """One case, ready for calls: its pristine device copies uploaded, its reference computed. A
        kept case (`keep_cases_at`) is drawn and its reference computed once per job; each `prepare`
        uploads fresh pristine copies from its host inputs (a released case's copies were poisoned)."""
        key = (size, _sizes_key(sizes), seed, variant)
        case = self.kept.get(key)
        if case is not None:
            self.setup(case.resolved.scalars, case.host_inputs)
            if not case.pristine:
                with self.phases("upload"):
                    case.pristine.update(self._upload(case.host_inputs))
            return case
        resolved = self.spec.resolve(sizes)
        with self.phases("inputs"):
            host = self.spec.make_inputs(sizes, seed)
            if variant == "scaled-x4":
                host = {name: self._scaled(name, array) for name, array in host.items()}
        # Before the reference runs at this size, outside every timed window; a torch launcher warms up on
        # these inputs (of the task's own kind) rather than drawing another set.
        self.setup(resolved.scalars, host)
        with self.phases("upload"):
            pristine = self._upload(host)
        outputs = [a for a in self.args if a.pointer and a.written]
        tolerance = {}
        from skillbase.task import DEFAULT_TOLERANCES

        for a in outputs:
            rule, default = self.spec.tolerance_rule(a), DEFAULT_TOLERANCES[a.dtype]
            tolerance[a.name] = (float(default.rtol if rule.rtol is None else rule.rtol),
                                 float(default.atol_scale if rule.atol_scale is None else rule.atol_scale))
        case = Case(size, dict(sizes), seed, variant, resolved, host, pristine, outputs, tolerance)
        with self.phases("reference"):
            case.reference = self.reference_outputs(case)
        if variant == "spec" and (size, key[1]) in self.kept_sizes:
            self.kept[key] = case
        return case

    def value_sets(self, size: str, sizes: dict[str, int], count: int, first_seed: int) -> list[Case]:
        """`count` spec cases at this size for timing's rotated input sets: the kept ones verification
        already drew here (verified, their references known), then fresh seeds from `first_seed`."""
        key = _sizes_key(sizes)
        seeds = [k[2] for k in self.kept if k[:2] == (size, key) and k[3] == "spec"][:count]
        seeds += [first_seed + i for i in range(count - len(seeds))]
        return [self.prepare(size, sizes, seed) for seed in seeds]

    def _upload(self, host: dict[str, np.ndarray]) -> dict[str, Any]:
        return {name: self.cp.asarray(np.ascontiguousarray(array).reshape(-1)) for name, array in host.items()}

    def _scaled(self, name: str, array: np.ndarray) -> np.ndarray:
        from skillbase.task.dtypes import DTYPES, bf16_bits_to_float32, float32_to_bf16_bits
        from skillbase.task.generators import in_chunks

        a = self.spec.arg(name)
        init = a.init or {}
        if not DTYPES[a.dtype].is_float or init.get("dist", "uniform") not in ("uniform", "normal") \
                or init.get("rescale") is False:
            return array   # indices, structured data, hooks, a declared domain: their values carry meaning
        # One pass into one new array (the original stays the spec case's), chunk by chunk on the cores:
        # a KernelBench input is GiBs.
        flat, out = np.ascontiguousarray(array).reshape(-1), np.empty(array.size, dtype=array.dtype)

        def scale(start: int, stop: int) -> None:
            if a.dtype == "bf16":
                out[start:stop] = float32_to_bf16_bits(bf16_bits_to_float32(flat[start:stop]) * SCALE_VARIANT)
            else:
                np.multiply(flat[start:stop], array.dtype.type(SCALE_VARIANT), out=out[start:stop])
        in_chunks(array.size, scale)
        return out.reshape(array.shape)

    def reference_outputs(self, case: Case) -> References:
        references = References(self)
        if self.python_reference is None:
            outcome = self.call(self.reference, case, poison=POISON, fill_shared=False)
            try:
                for name, array in outcome.outputs.items():
                    self._keep(references, case, name, array)
            finally:
                outcome.release()     # the plain outputs are overwritten before anything else runs
            return references
        if not self.device_reference:
            try:
                produced = self.python_reference({k: v.copy() for k, v in case.host_inputs.items()},
                                                 dict(case.sizes))
                for a in case.outputs:
                    references.keep_host(a.name, self._host_reference(produced, a, case))
            finally:
                self._scrub_torch_cache()
            return references
        # Fresh device copies of the pristine inputs (the reference may write them), shaped like the host's.
        inputs = {name: case.pristine[name].copy().reshape(np.shape(array)) for name, array in case.host_inputs.items()}
        produced, seen = None, []
        try:
            produced = self.python_reference(inputs, dict(case.sizes))
            self.device.sync()
            for a in case.outputs:
                value = self._produced(produced, a)
                device = self._as_device(value)
                if device is not None:
                    seen.append(device)
                    device = self._device_storage(device, a, case)
                    if device is not None:
                        seen.append(device)        # a converted or reshaped copy is plain too
                if device is None:    # a host array, or bf16 floats to round the host's way
                    references.keep_host(a.name, self._host_reference(produced, a, case))
                else:
                    self._keep(references, case, a.name, device)
        finally:
            # Nothing the reference saw or made stays plain on the device: its input copies and its outputs
            # (blocks of its own allocator, e.g. torch's cache) are overwritten; torch's cache is given back.
            for array in seen:
                if array.flags.c_contiguous:
                    self.device.memset(array, POISON)
                else:
                    array.fill(0)         # a strided view: a memset of its byte count would write past it
            self._scrub(inputs)
            del produced, seen
            self._scrub_torch_cache()
        return references

    def _scrub_torch_cache(self) -> None:
        """After a python reference: the free blocks of torch's caching allocator hold what it computed
        (intermediates, its output's earlier copies); overwrite them, then give free segments back."""
        torch = sys.modules.get("torch")
        if torch is None or not torch.cuda.is_available():
            return
        torch.cuda.synchronize()
        for segment in torch.cuda.memory_snapshot():
            if segment.get("device", self.device.index) != self.device.index:
                continue
            address = int(segment["address"])
            for block in segment.get("blocks", []):      # in address order, covering the segment
                if block.get("state") == "inactive" and block["size"]:
                    self.cp.cuda.runtime.memsetAsync(address, POISON, int(block["size"]), self.device.null.ptr)
                address += int(block["size"])
        self.device.sync()
        torch.cuda.empty_cache()

    def _produced(self, produced, a):
        if not isinstance(produced, dict) or a.name not in produced:
            raise InputError(f"{self.spec.path}: the python reference returned no array for '{a.name}'")
        return produced[a.name]

    def _host_reference(self, produced, a, case: Case) -> np.ndarray:
        """One output of a python reference on the host, in its dtype's storage (bf16 rounded RNE)."""
        from skillbase.task.dtypes import to_storage

        value = self._produced(produced, a)
        device = self._as_device(value)
        if device is not None:
            value = self.cp.asnumpy(device)
        shape = case.resolved.arg(a.name).shape
        return np.ascontiguousarray(to_storage(np.asarray(value), a.dtype)).reshape(shape)

    def _as_device(self, value):
        """A device array (CuPy, or anything with `__cuda_array_interface__` or a CUDA `__dlpack__`) as
        CuPy, sharing its memory; None for a host array."""
        cp = self.cp
        if isinstance(value, cp.ndarray):
            return value
        if isinstance(value, np.ndarray):
            return None
        if hasattr(value, "__cuda_array_interface__"):
            return cp.asarray(value)
        if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__") \
                and int(value.__dlpack_device__()[0]) == DLPACK_CUDA:
            return cp.from_dlpack(value)
        return None

    def _device_storage(self, array, a, case: Case):
        """A device output in its dtype's storage and shape; None where only the host conversion rounds
        the task's way (bf16 from floats: `to_storage`, one rule)."""
        from skillbase.task.dtypes import DTYPES

        storage = DTYPES[a.dtype].storage
        if array.dtype != storage:
            if a.dtype == "bf16":
                if array.dtype.itemsize != 2 or array.dtype.kind not in "iu":
                    return None
                array = array.view(storage)       # bf16 given as its 16-bit patterns
            else:
                array = array.astype(storage)
        ra = case.resolved.arg(a.name)
        if array.size != ra.numel:
            raise InputError(f"{self.spec.path}: the python reference returned {array.size} elements for "
                             f"'{a.name}', expected {ra.numel}")
        return array.reshape(ra.shape)

    def _keep(self, references: References, case: Case, name: str, array) -> None:
        """Keep one device reference scrambled on the device, or on the host when the device lacks room."""
        from skillbase.task.dtypes import DTYPES

        call = sum(case.resolved.arg(a.name).numel * DTYPES[a.dtype].itemsize for a in self.args if a.pointer)
        if self.device.mem_available() - array.nbytes >= ROOM_CALL_SETS * call + ROOM_FIXED_BYTES:
            references.keep_device(name, array)
        else:
            references.keep_host(name, self.cp.asnumpy(array))

    @contextlib.contextmanager
    def reference_on_device(self, a, case: Case):
        """One reference output, plain on the device for a check, then scrubbed: it is never there while
        a candidate runs (a candidate could go looking for it)."""
        with case.reference.device_view(a.name) as reference:
            yield reference

    def sanity(self, a, case: Case) -> str | None:
        """spec_sanity of one reference output, computed on the device."""
        from skillbase.harness.verify import spec_sanity

        with self.reference_on_device(a, case) as reference:
            return spec_sanity(a.name, reference, a.dtype, *case.tolerance[a.name])

    def compare(self, a, output, case: Case, poison: int | None):
        """compare_outputs of a device output against the case's reference, on the device."""
        rtol, atol_scale = case.tolerance[a.name]
        with self.reference_on_device(a, case) as reference:
            return compare_outputs(a.name, output, reference, a.dtype, rtol, atol_scale, poison=poison)

    def release(self, case: Case) -> None:
        for array in case.pristine.values():
            self.device.memset(array, POISON)
        case.pristine.clear()

    # -- calls ----------------------------------------------------------------------------------
    def _buffers(self, case: Case, poison: int, offset_bytes: int = 0):
        """Fresh device buffers for one call; with `offset_bytes` each is a view that many bytes into
        a larger allocation, so its address is aligned to the spec's `align:` and no more."""
        from skillbase.task.dtypes import DTYPES

        cp = self.cp
        buffers = {}
        for a in self.args:
            if not a.pointer:
                continue
            storage = DTYPES[a.dtype].storage
            skip = offset_bytes // np.dtype(storage).itemsize   # the spec keeps align >= the element size
            if a.name in case.pristine and not skip:
                buffers[a.name] = case.pristine[a.name].copy()      # a fresh copy (and address) per call
                continue
            whole = cp.empty(case.resolved.arg(a.name).numel + skip, dtype=storage)
            self.device.memset(whole, poison)
            buffers[a.name] = whole[skip:]
            if a.name in case.pristine:
                buffers[a.name][...] = case.pristine[a.name]
        return buffers

    def call(self, launcher: NativeLauncher, case: Case, poison: int = POISON, fill_shared: bool = True,
             offset_bytes: int = 0) -> CallOutcome:
        # A no-op unless another size was set up since prepare().
        self.setup(case.resolved.scalars, case.host_inputs)
        buffers = self._buffers(case, poison, offset_bytes)
        arguments = launcher.arguments({k: v.data.ptr for k, v in buffers.items()}, case.resolved.scalars)
        if fill_shared:
            self.device.fill_shared_nan()
        launcher(arguments)
        self.device.sync()   # a sticky CUDA error (illegal address ...) raises here
        changed = {}
        for a in self.args:
            if a.pointer and a.role == "in":
                changed[a.name] = self._bytes_differ(buffers[a.name], case.pristine[a.name])
        outputs = {}
        for a in case.outputs:
            # A device copy: compared on the GPU (fast for big outputs), scrubbed by release().
            outputs[a.name] = buffers[a.name].copy().reshape(case.resolved.arg(a.name).shape)
        self._scrub(buffers)
        return CallOutcome(outputs, changed, self)

    def _bytes_differ(self, work, pristine) -> int:
        cp = self.cp
        return int(cp.count_nonzero(work.view(cp.uint8) != pristine.view(cp.uint8)))

    def _scrub(self, buffers: dict) -> None:
        for array in buffers.values():
            self.device.memset(array, POISON)
        self.device.sync()
        buffers.clear()

    def probe_call(self, launcher: NativeLauncher, case: Case, spin_ms: float = 20.0, timer=None) -> dict[str, Any]:
        """Call with the launch stream held busy; see whether outputs change before the stream frees.

        With a CUPTI `timer` (harness.cupti) the hold, the call and a marker kernel queued on the launch
        stream right after it are bracketed in windows, and the call's records say from device
        timestamps whether its work ran while the stream was held or after the stream moved on."""
        cp = self.cp
        self.assert_set_up(launcher, case.resolved.scalars)   # never set up inside the probe window
        buffers = self._buffers(case, POISON)
        # Outputs and scratch: a byte of either written while the launch stream is blocked is work
        # that ran outside it.
        outs = [a.name for a in case.outputs if a.role == "out"] + [a.name for a in self.args if a.scratch]
        snaps = {name: cp.empty_like(buffers[name]) for name in outs}
        arguments = launcher.arguments({k: v.data.ptr for k, v in buffers.items()}, case.resolved.scalars)
        self.device.fill_shared_nan()
        self.device.sync()
        windows = _ProbeWindows(timer, self.device)
        with windows.hold():
            self.device.spin(spin_ms)
        spin_done = self.device.event()
        spin_done.record(self.device.null)
        start = time.perf_counter()
        with windows.call():
            launcher(arguments)
        return_ms = (time.perf_counter() - start) * 1e3
        windows.mark_after()          # the launch stream moves on here
        # Give work on another stream or thread time to run, then look at the outputs from a
        # non-blocking stream of ours, which does not wait for the spinning launch stream.
        wait_ms(min(5.0, spin_ms / 4))
        with self.side_stream:
            for name in outs:
                snaps[name].data.copy_from_device_async(buffers[name].data, buffers[name].nbytes, self.side_stream)
        self.side_stream.synchronize()
        spin_running = not spin_done.done
        self.device.sync()
        records = windows.read()
        spun_ms = self.device.spun_ms()
        written_early = sum(int(cp.count_nonzero(snaps[name].view(cp.uint8) != POISON)) for name in outs)
        final_ok, reason = True, ""
        for a in case.outputs:
            c = self.compare(a, buffers[a.name], case, poison=POISON if a.role == "out" else None)
            if not c.ok and final_ok:
                final_ok, reason = False, c.reason
        changed = {a.name: self._bytes_differ(buffers[a.name], case.pristine[a.name])
                   for a in self.args if a.pointer and a.role == "in"}
        if any(changed.values()) and final_ok:
            name = next(n for n, v in changed.items() if v)
            final_ok, reason = False, f"modified input '{name}'"
        del snaps
        self._scrub(buffers)
        return {"return_ms": return_ms, "spin_running": spin_running and spun_ms >= 0.8 * spin_ms,
                "spun_ms": spun_ms, "written_early": written_early, "final_ok": final_ok, "reason": reason,
                **records}

    def close(self, teardown: bool = True) -> None:
        """Tear down (hooks.teardown, after a clean job only) and unload every library."""
        if teardown:
            for launcher in self.launchers:
                launcher.teardown()
            self.device.sync()
        for launcher in (self.candidate, self.baseline, self.reference):
            if launcher is not None:
                launcher.close()


class _ProbeWindows:
    """The CUPTI windows of one probe call (hold, call, after), or nothing without a timer."""

    def __init__(self, timer, device):
        self.timer = timer
        self.device = device
        if timer is not None:
            # A 4-byte memset queued on the launch stream right after the call marks when the stream
            # moved on (not a spin kernel: that would overwrite the hold's own spun-time report).
            self.marker = device.cp.zeros(1, dtype=device.cp.uint32)
            device.sync()
            timer.discard()      # the device is idle: earlier records are not this probe's

    @contextlib.contextmanager
    def _window(self):
        if self.timer is not None:
            self.timer.open()
        try:
            yield
        finally:
            if self.timer is not None:
                self.timer.close()

    hold = call = _window

    def mark_after(self) -> None:
        if self.timer is not None:
            with self._window():
                self.device.memset(self.marker, 0)

    def read(self) -> dict[str, Any]:
        """After a device sync: {'cupti': False} without a timer or with records that do not add up,
        else what the call's records show. With the three windows, whatever the records: the call's
        memory API calls ('allocations', 'frees', 'allocation_name'), counted by CUPTI's callbacks."""
        if self.timer is None:
            return {"cupti": False}
        from skillbase.harness.cupti import KERNEL_KINDS, KIND_MEMSET, attribute, other_streams, unordered

        records, windows, dropped = self.timer.collect()
        if len(windows) != 3:
            return {"cupti": False}
        memory = {"allocations": windows[1].allocations, "frees": windows[1].frees,
                  "allocation_name": windows[1].allocation_name}
        if dropped:
            return {"cupti": False, **memory}
        hold, call, after = attribute(records, windows)
        hold_k = [r for r in hold if r.kind in KERNEL_KINDS]
        after_m = [r for r in after if r.kind == KIND_MEMSET or r.kind in KERNEL_KINDS]   # however the driver ran it
        if len(hold_k) != 1 or len(after_m) != 1 or not call or not all(r.complete for r in call):
            return {"cupti": False, **memory}
        return {"cupti": True, **memory, "unordered": unordered(call, hold_k[0], after_m[0]),
                "other_streams": other_streams(call, hold_k[0].stream_id), "call_records": len(call),
                "foreign_calls": windows[1].foreign_calls}


def _sizes_key(sizes: dict[str, int]) -> tuple:
    return tuple(sorted((name, int(value)) for name, value in sizes.items()))
