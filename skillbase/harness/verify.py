"""Verification: is the candidate's output the reference's, on every size, seed and call?

Two layers. The pure functions (`compare_outputs`, `spec_sanity`, `precision_hint`) hold the
comparison rules and are tested on the CPU. `verify_candidate` drives them on the GPU inside the
worker process, implementing the VERIFY.md defences row by row:

- outputs poisoned before every call (all bytes 0xFF: NaN for every float dtype, -1 / max for
  integers; repeats use a second pattern, 0x7F, so an element that happens to equal one poison
  cannot pass twice) -- reuse of a freed reference buffer, reading memory nothing wrote; scratch
  arguments are poisoned the same way but never compared (a spec must have an out/inout too);
- fresh device copies of the inputs for every call, compared bit for bit with a pristine copy
  afterwards -- mutating inputs;
- NaN / Inf must sit where the reference has them -- NaN as a wildcard;
- an element passes when |out - ref| <= atol_scale * max|ref| + rtol * |ref|, and the whole
  output when ||out - ref|| / ||ref|| <= max(rtol, atol_scale) -- trivial outputs under a loose
  absolute tolerance, precision downgrades;
- every scored size plus the irregular one, several seeds, and inputs scaled by 4 -- hard-coded
  shapes and value ranges;
- repeated calls on identical inputs (and a repeat of any failing call, to tell a moving error,
  i.e. a race, from a wrong algorithm) -- races, uninitialised reads;
- shared memory filled with NaN by a filler kernel right before each candidate call --
  uninitialised shared memory that happens to hold zeros in a fresh process;
- probes with the launch stream held busy by a 20 ms spin kernel, on several calls (the first
  call's lazy module load synchronises and hides a side stream) -- side streams / threads, a
  synchronising or allocating launcher;
- device limits compared with a snapshot taken before the candidate's library was loaded (not
  with zero: the H200 reports a non-zero persisting-L2 limit before anything runs);
- where the spec's `align:` promises less than cudaMalloc's 256 bytes, one more call on buffers
  offset by exactly that many bytes -- a vectorized access on a silently rounded pointer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from skillbase.harness.result import CheckResult, Probe, SizeCheck

POISON = 0xFF          # NaN in f32/f64/f16/bf16, -1 in signed ints
POISON_ALT = 0x7F      # 3.4e38 in f32/bf16, NaN in f16, large positive ints

# Elements per comparison pass. A pass holds about six chunk-sized float64 arrays (0.5 GiB each at
# 2**26), ~3 GiB whatever the output's size: two workers share a GPU, and whole-output copies of a
# 1.6e9-element output ran it out of memory. A 1.6e9-element output is still only ~25 chunks, so the
# per-chunk launches and host synchronisations (a few per chunk) add little.
COMPARE_CHUNK = 1 << 26

# Scale-free error bands that betray a precision change on a float task (METHOD.md): fp32
# reordering stays far below 1e-5; TF32/FP16 operands land near 3e-4; bf16 between 1e-3 and 1e-2.
_PRECISION_BANDS = {
    "f32": ((1e-4, 1.5e-3, "TF32/FP16"), (1.5e-3, 5e-2, "BF16/FP16")),
    "f64": ((1e-12, 1e-5, "FP32"), (1e-5, 5e-2, "FP16/BF16")),
}


@dataclass
class OutputComparison:
    name: str
    ok: bool
    reason: str
    numel: int
    bad: int = 0
    unwritten: int = 0
    nonfinite_mismatch: int = 0
    max_abs_err: float | None = None
    rel_l2_err: float | None = None
    atol: float = 0.0
    rtol: float = 0.0
    bad_mask: np.ndarray | None = None   # which elements failed (to tell a moving error from a fixed one)

    def summary(self) -> dict[str, Any]:
        return {"max_abs_err": self.max_abs_err, "rel_l2_err": self.rel_l2_err, "bad": self.bad,
                "unwritten": self.unwritten, "numel": self.numel, "atol": self.atol, "rtol": self.rtol}


def array_module(*arrays):
    """numpy, or cupy when any argument is a CuPy array: the comparisons run where the data is.

    Large outputs are compared on the device: on the host, float64 copies and masks of a 256 MiB
    output took ~10 s per comparison, which made verification of big kernels host-bound.
    """
    for array in arrays:
        if type(array).__module__.split(".")[0] == "cupy":
            import cupy

            return cupy
    return np


def _elements(array, dtype: str):
    """The flat storage of an array, one item per element (bf16: its uint16 bits); a view when contiguous."""
    xp = array_module(array)
    flat = xp.ascontiguousarray(xp.asarray(array)).reshape(-1)
    return flat.view(xp.uint16) if dtype == "bf16" else flat


def _chunks(n: int):
    """(start, end) of consecutive slices of at most COMPARE_CHUNK elements."""
    step = COMPARE_CHUNK
    return ((start, min(start + step, n)) for start in range(0, n, step))


def as_numbers(array, dtype: str):
    """Storage -> float64 (floats, bf16 decoded) or int64 (integers), flattened (numpy or cupy)."""
    from skillbase.task.dtypes import DTYPES, bf16_bits_to_float32

    xp = array_module(array)
    flat = _elements(array, dtype)
    if dtype == "bf16":
        return _float32_to_float64(bf16_bits_to_float32(flat))
    if flat.dtype == np.float32:
        return _float32_to_float64(flat)
    if DTYPES[dtype].is_float:
        return flat.astype(xp.float64)
    return flat.astype(xp.int64)


def _float32_to_float64(values):
    """float32 -> float64, exact, subnormals included.

    CuPy compiles its kernels with -ftz=true, so on the device the cast flushes float32 subnormals to zero,
    and a subnormal written where the reference holds 0 would be judged right on the device and wrong on
    the host (found on the H200 by the chunked comparison's GPU test). The subnormals are decoded again
    from their bits (integer and float64 work, which no flush touches); they are rare, so the fix costs
    one pass over the bits and no output-sized float64 temporaries beyond the cast itself."""
    return restore_subnormals(values.astype(array_module(values).float64), values)


def restore_subnormals(wide, values):
    """`wide` (float64, cast from the float32 `values`, perhaps with subnormals flushed) with every subnormal
    decoded exactly from its bits; the same array, changed in place."""
    xp = array_module(values)
    bits = values.view(xp.uint32)
    # Subnormal: 1 <= |bits| <= 0x7FFFFF; unsigned wrap-around puts +-0 at the top of the range.
    magnitude = bits & xp.uint32(0x7FFFFFFF)
    magnitude -= xp.uint32(1)                   # in place: one 4-byte temporary per element, not two
    subnormal = magnitude < xp.uint32(0x7FFFFF)
    del magnitude
    if bool(subnormal.any()):
        sub = bits[subnormal]
        exact = xp.ldexp((sub & xp.uint32(0x7FFFFF)).astype(xp.float64), -149)
        wide[subnormal] = xp.where((sub >> xp.uint32(31)) != 0, -exact, exact)
    return wide


def poisoned_mask(raw, byte: int):
    """Elements whose every byte still equals the poison byte (never written by the kernel)."""
    xp = array_module(raw)
    raw = xp.ascontiguousarray(raw).reshape(-1)
    if raw.size == 0:
        return xp.zeros(0, dtype=bool)
    as_bytes = raw.view(xp.uint8).reshape(raw.size, raw.itemsize)
    return xp.all(as_bytes == byte, axis=1)


def precision_hint(rel_l2_err: float | None, dtype: str) -> str:
    """A short note when the scale-free error looks like a lower-precision computation."""
    if rel_l2_err is None or not np.isfinite(rel_l2_err):
        return ""
    for low, high, label in _PRECISION_BANDS.get(dtype, ()):
        if low <= rel_l2_err < high:
            return (f"; a relative error of {rel_l2_err:.2g} is typical of {label} arithmetic: precision "
                    f"downgrade on a {dtype} task?")
    return ""


def compare_outputs(name: str, out_raw: np.ndarray, ref_raw: np.ndarray, dtype: str, rtol: float, atol_scale: float,
                    poison: int | None = POISON) -> OutputComparison:
    """Compare one output with the reference under the task's tolerance rule.

    Host (numpy) or device (cupy) arrays; when either is on the device the other is brought there
    and everything is computed on the GPU (the caller scrubs any reference it uploaded). The work
    goes chunk by chunk (COMPARE_CHUNK): only `bad_mask` (one bool per element) is output-sized.
    """
    xp = array_module(out_raw, ref_raw)
    out_flat, ref_flat = _elements(xp.asarray(out_raw), dtype), _elements(xp.asarray(ref_raw), dtype)
    if out_flat.size != ref_flat.size:
        return OutputComparison(name, False, f"{name}: {out_flat.size} elements, the reference has {ref_flat.size}",
                                ref_flat.size)
    return _compare_chunked(name, lambda start, end: out_flat[start:end], ref_flat, dtype, rtol, atol_scale, poison)


def _finite_magnitude(ref_flat, dtype: str) -> float:
    """max |ref| over the finite reference elements (0.0 when there are none), chunk by chunk."""
    xp = array_module(ref_flat)
    magnitude = 0.0
    for start, end in _chunks(ref_flat.size):
        ref = as_numbers(ref_flat[start:end], dtype)
        # Non-finite elements count as 0, which cannot raise a maximum of absolute values.
        magnitude = max(magnitude, float(xp.abs(xp.where(xp.isfinite(ref), ref, 0.0)).max()))
    return magnitude


def _compare_chunked(name: str, out_chunk, ref_flat, dtype: str, rtol: float, atol_scale: float,
                     poison: int | None) -> OutputComparison:
    """compare_outputs on flat storage; `out_chunk(start, end)` gives the output's storage of that slice."""
    xp = array_module(ref_flat)
    n = ref_flat.size
    if n == 0:
        return OutputComparison(name, True, "", 0, max_abs_err=0.0, rel_l2_err=0.0)
    integer = as_numbers(ref_flat[:0], dtype).dtype.kind == "i"
    # The magnitude only matters through atol = atol_scale * magnitude: skip its pass when that is 0.
    atol = atol_scale * (_finite_magnitude(ref_flat, dtype) if not integer and atol_scale else 0.0)
    exact = rtol == 0 and atol_scale == 0
    bad_mask = xp.empty(n, dtype=bool)
    bad = unwritten = nonfinite_mismatch = 0
    max_abs, any_both, ref_sq, err_sq = None, False, 0.0, 0.0
    first = None                         # (index, got, expected) of the first bad element
    for start, end in _chunks(n):
        out_raw, ref_raw = out_chunk(start, end), ref_flat[start:end]
        out, ref = as_numbers(out_raw, dtype), as_numbers(ref_raw, dtype)
        if integer:
            wrong = out != ref
            diff = xp.abs(out - ref).astype(np.float64)
            ref_part = ref.astype(np.float64)
        else:
            finite_ref, finite_out = xp.isfinite(ref), xp.isfinite(out)
            # Non-finite values must coincide: NaN with NaN, +Inf with +Inf.
            nan_out, nan_ref = xp.isnan(out), xp.isnan(ref)
            inf_mismatch = (xp.isinf(out) | xp.isinf(ref)) & ~(out == ref)
            nonfinite_bad = (nan_out != nan_ref) | (inf_mismatch & ~(nan_out & nan_ref))
            both = finite_ref & finite_out
            # Zeros outside `both`: they add nothing to the norms and cannot raise the maximum.
            ref_part = xp.where(both, ref, 0.0)
            # In place: each float64 temporary is a chunk's worth of memory (8 bytes per element).
            diff = xp.where(both, out, 0.0)
            diff -= ref_part
            xp.abs(diff, out=diff)
            if exact:
                value_bad = both & (out != ref)
            else:
                limit = xp.abs(ref_part)
                limit *= rtol
                limit += atol
                value_bad = both & (diff > limit)
                del limit
            wrong = value_bad | nonfinite_bad
            nonfinite_mismatch += int(nonfinite_bad.sum())
            any_both = any_both or bool(both.any())
        bad_mask[start:end] = wrong
        # The norms first, so their chunk-sized operands are gone before the poison masks are made.
        chunk_max = float(diff.max())
        max_abs = chunk_max if max_abs is None else max(max_abs, chunk_max)
        ref_sq += float(xp.dot(ref_part, ref_part))
        err_sq += float(xp.dot(diff, diff))
        del diff, ref_part
        chunk_bad = int(wrong.sum())
        if chunk_bad:
            bad += chunk_bad
            if poison is not None:
                # An element counts as unwritten only where the reference is not the poison pattern itself.
                unwritten_mask = poisoned_mask(out_raw, poison) & ~poisoned_mask(ref_raw, poison)
                unwritten += int((unwritten_mask & wrong).sum())
            if first is None:
                index = int(xp.argmax(wrong))
                first = (start + index, out[index].item(), ref[index].item())
    ref_norm, err_norm = math.sqrt(ref_sq), math.sqrt(err_sq)
    rel = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else float("inf"))
    if integer:
        result = OutputComparison(name, True, "", n, bad=bad, unwritten=unwritten, max_abs_err=max_abs,
                                  rel_l2_err=rel, bad_mask=bad_mask)
    else:
        result = OutputComparison(name, True, "", n, bad=bad, unwritten=unwritten,
                                  nonfinite_mismatch=nonfinite_mismatch,
                                  max_abs_err=max_abs if any_both else None, rel_l2_err=rel,
                                  atol=atol, rtol=rtol, bad_mask=bad_mask)
    if result.bad:
        result.ok = False
        result.reason = _describe_bad(name, result, *first, "" if integer else dtype)
        return result
    limit = max(rtol, atol_scale)
    if not integer and not exact and rel > limit:
        result.ok = False
        result.reason = (f"{name}: relative L2 error {rel:.3g} exceeds {limit:.3g} although every element is "
                         f"within tolerance" + precision_hint(rel, dtype))
    return result


def _describe_bad(name: str, c: OutputComparison, first: int, got, expected, dtype: str = "") -> str:
    if c.unwritten and c.unwritten == c.bad:
        return (f"{name}: {c.unwritten} of {c.numel} elements not written (still hold the poison pattern; "
                f"first at index {first})")
    if c.nonfinite_mismatch and c.nonfinite_mismatch == c.bad:
        return (f"{name}: NaN/Inf at {c.nonfinite_mismatch} of {c.numel} places where the reference has none or "
                f"another value (first at index {first}: got {got}, expected {expected}); uninitialised memory "
                "or NaN math?")
    extra = ""
    if c.unwritten:
        extra += f", {c.unwritten} never written"
    if c.nonfinite_mismatch:
        extra += f", {c.nonfinite_mismatch} NaN/Inf"
    return (f"{name}: {c.bad} of {c.numel} elements outside tolerance{extra} (first at index {first}: got {got}, "
            f"expected {expected}; atol {c.atol:.3g}, rtol {c.rtol:g}; relative L2 error {c.rel_l2_err:.3g})"
            + precision_hint(c.rel_l2_err, dtype))


def spec_sanity(name: str, ref_raw: np.ndarray, dtype: str, rtol: float, atol_scale: float) -> str | None:
    """Why this reference output cannot catch trivial candidates, or None when it can.

    A spec whose reference is all zeros, constant, or so small that zeros pass the tolerance lets
    a kernel that computes nothing pass (KernelBench: zeros pass 4 of 60 L1 tasks in bf16).
    Chunk by chunk, like compare_outputs: no output-sized copies.
    """
    xp = array_module(ref_raw)
    ref_flat = _elements(ref_raw, dtype)
    n = ref_flat.size
    if n == 0:
        return f"reference output {name} is empty"
    head = as_numbers(ref_flat[:1], dtype)[0]
    finite_count, nonzero, constant = 0, False, True
    for start, end in _chunks(n):
        ref = as_numbers(ref_flat[start:end], dtype)
        finite = xp.isfinite(ref) if ref.dtype.kind == "f" else xp.ones(ref.size, dtype=bool)
        finite_count += int(finite.sum())
        nonzero = nonzero or bool(xp.any(finite & (ref != 0)))
        constant = constant and bool(xp.all(ref == head))
    if finite_count == 0:
        return f"reference output {name} is entirely NaN/Inf"
    if not nonzero:
        return f"reference output {name} is all zeros: a kernel that writes zeros would pass"
    if n > 1 and constant and finite_count == n:
        return f"reference output {name} is constant ({head.item()}): a kernel that writes one value would pass"
    zeros = _compare_chunked(name, lambda start, end: xp.zeros(end - start, dtype=ref_flat.dtype), ref_flat, dtype,
                             rtol, atol_scale, poison=None)
    if zeros.ok:
        return f"reference output {name} sits below the tolerance: an all-zero output would pass"
    return None


# ------------------------------------------------------------------------------------------------
# GPU procedure (runs inside the worker; `session` is skillbase.harness.session.Session)
# ------------------------------------------------------------------------------------------------

@dataclass
class VerifyPlan:
    sizes: list[tuple[str, dict[str, int]]]     # scored sizes first, then "irregular"
    seeds: tuple[int, ...] = (0, 1)             # seeds at the first size (more at no cost there)
    scaled_variant: bool = True                 # one call with float inputs scaled by 4
    repeats: int = 2                            # extra calls on identical inputs (determinism)
    probe_calls: int = 3                        # launch-stream probes (several: the first call hides side streams)
    spin_ms: float = 20.0
    sanity: bool = True


def verify_candidate(session, plan: VerifyPlan, result: CheckResult) -> bool:
    """Run every verification check; record them in `result`; False at the first failure."""
    seed_counter = 0
    for index, (size_name, sizes) in enumerate(plan.sizes):
        calls = [(seed, "spec") for seed in (plan.seeds if index == 0 else plan.seeds[:1])]
        if index == 0 and plan.scaled_variant:
            calls.append((plan.seeds[-1] + 1, "scaled-x4"))
        if size_name == "irregular":
            calls.append((plan.seeds[-1] + 2, "spec"))
        for seed, variant in calls:
            seed = seed + 1000 * index
            seed_counter += 1
            session.progress(f"verifying at {size_name} (seed {seed}{', ' + variant if variant != 'spec' else ''})")
            case = session.prepare(size_name, sizes, seed, variant)
            if plan.sanity and index == 0 and variant == "spec" and not result.sanity:
                problems = [p for p in (session.sanity(a, case) for a in case.outputs) if p]
                if problems:
                    result.sanity.extend(problems)
                    result.fail("spec-error", f"spec sanity at {size_name}: {problems[0]}")
                    return False
            check = _check_call(session, case, size_name, variant, POISON)
            result.checks.append(check)
            if not check.ok:
                result.fail("incorrect", check.reason)
                return False
            if index == 0 and variant == "spec" and seed == plan.seeds[0]:
                offset = misaligned_offset(session.spec)
                if offset:
                    shifted = _check_call(session, case, size_name, f"offset {offset} B", POISON, offset=offset)
                    result.checks.append(shifted)
                    if not shifted.ok:
                        result.fail("incorrect", f"wrong when the buffers are only {offset}-byte aligned (the spec's "
                                                 f"align: {offset}): {shifted.reason}; does it assume wider "
                                                 "alignment (a vector access on a rounded pointer)?")
                        return False
                for r in range(plan.repeats):
                    repeat = _check_call(session, case, size_name, "repeat", POISON_ALT if r % 2 == 0 else POISON)
                    result.checks.append(repeat)
                    if not repeat.ok:
                        result.fail("incorrect", f"non-deterministic: repeat {r + 1} on identical inputs failed "
                                                 f"({repeat.reason}); a race or a read of memory nothing wrote?")
                        return False
            session.release(case)
        if index == 0 and plan.probe_calls:
            # The probes run on the first case again (kept by the session: uploaded afresh, not redrawn).
            probed = session.prepare(size_name, sizes, plan.seeds[0], "spec")
            if not launch_stream_probes(session, probed, plan, result):
                return False
    return audit_device_state(session, result)


def misaligned_offset(spec) -> int:
    """The byte offset of the extra verification call: the spec's `align:` when it promises less than
    cudaMalloc's 256 bytes (the launcher then gets pointers aligned to exactly that), else 0."""
    from skillbase.task.spec import CUDA_MALLOC_ALIGN

    align = getattr(spec, "align", CUDA_MALLOC_ALIGN)
    return align if align < CUDA_MALLOC_ALIGN else 0


def _check_call(session, case, size_name: str, variant: str, poison: int, offset: int = 0) -> SizeCheck:
    outcome = session.call(session.candidate, case, poison=poison, fill_shared=True, offset_bytes=offset)
    check = SizeCheck(size=size_name, sizes=dict(case.sizes), seed=case.seed, variant=variant)
    errors, rels = [], []
    masks: dict[str, np.ndarray] = {}
    for name, changed in outcome.inputs_changed.items():
        if changed:
            check.ok = False
            check.reason = (f"modified input '{name}' at {size_name} ({changed} bytes differ from the pristine "
                            "copy): a kernel may not write its inputs")
            outcome.release()
            return check
    for a in case.outputs:
        c = session.compare(a, outcome.outputs[a.name], case, poison=poison if a.role == "out" else None)
        check.outputs[a.name] = c.summary()
        masks[a.name] = c.bad_mask
        check.bad_elements += c.bad
        if c.max_abs_err is not None:
            errors.append(c.max_abs_err)
        if c.rel_l2_err is not None:
            rels.append(c.rel_l2_err)
        if not c.ok and check.ok:
            check.ok = False
            check.reason = f"at {size_name} {_sizes_text(case.sizes)}, seed {case.seed}" + \
                (f" ({variant})" if variant != "spec" else "") + f": {c.reason}"
    outcome.release()
    check.max_abs_err = max(errors) if errors else None
    check.rel_l2_err = max(rels) if rels else None
    if not check.ok and variant != "repeat":
        # A moving error is a race: repeat the same inputs (other poison) and see whether the set
        # of wrong elements changes. A fixed set (never written, hard-coded size) does not move.
        again = session.call(session.candidate, case, poison=POISON_ALT, fill_shared=True, offset_bytes=offset)
        moved = False
        for a in case.outputs:
            first = masks.get(a.name)
            second = session.compare(a, again.outputs[a.name], case,
                                     poison=POISON_ALT if a.role == "out" else None).bad_mask
            if first is not None and second is not None and not bool(array_module(first).array_equal(first, second)):
                moved = True
                break
        again.release()
        if moved:
            check.reason = "non-deterministic (the wrong elements change between identical calls: a race?): " + \
                check.reason
    return check


def _sizes_text(sizes: dict[str, int]) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in sizes.items()) + ")"


def launch_stream_probes(session, case, plan: VerifyPlan, result: CheckResult) -> bool:
    """Side-stream, synchronising-launcher and allocating-launcher probes on several calls.

    Held under the GPU's lock (harness.gpu_lock): the probes time the launcher's return and the hold
    kernel, which a neighbour's kernels would stretch. With CUPTI (harness.cupti), whether the call's
    work ran outside the launch stream is read from device timestamps and stream IDs, not inferred
    from the wall clock, and whether the launcher allocates from CUPTI's count of its allocation API
    calls, not from the device's free memory. A stream or sync positive is confirmed on another call
    before the candidate fails."""
    from skillbase.harness.cupti import CuptiUnavailable, start_timer
    from skillbase.harness.gpu_lock import gpu_lock

    try:
        timer = start_timer()
    except CuptiUnavailable:
        timer = None     # the output snapshot and the host clock decide alone
    with gpu_lock(session.device.index, uuid=session.device.uuid, on_wait=session.progress,
                  phases=session.phases):
        return _probes(session, case, plan, result, timer)


def probe_finding(obs: dict, spin_ms: float) -> tuple[str, str] | None:
    """(probe name, what it saw) for a launch-stream probe's observation that fails a candidate, or None.

    Device facts first: CUPTI records of work the launch stream did not order, output bytes written
    while the stream was held; then the host clock: a launcher that returned only after the held
    stream drained synchronised on it."""
    if obs.get("cupti") and obs.get("unordered"):
        return "launch-stream-order", f"CUPTI records: {obs['unordered'][0]}"
    if obs.get("spin_running") and obs.get("written_early"):
        return "launch-stream-order", (f"{obs['written_early']} output bytes written while the launch stream "
                                       "was still blocked")
    if obs["return_ms"] > 0.5 * spin_ms:
        return "synchronising-launcher", (f"the launcher returned after {obs['return_ms']:.1f} ms while the launch "
                                          f"stream was busy for {spin_ms:.0f} ms")
    return None


def _probes(session, case, plan: VerifyPlan, result: CheckResult, timer) -> bool:
    session.call(session.candidate, case, poison=POISON, fill_shared=True).release()   # warm: lazy module load is done
    # One probe whose findings are not used: whatever CUPTI or CuPy allocate on the device the first
    # time a probe runs (activity buffers, our side stream's first copy) is in place before the
    # free-memory snapshot, so it cannot pass for memory the launcher kept.
    session.probe_call(session.candidate, case, spin_ms=plan.spin_ms, timer=timer)
    # The call and the probe before the windows are also the warm-up of a torch launcher's caching
    # allocator (beside torch_launcher's own warm-up at set-up): it cudaMallocs a size's blocks on
    # its first call and reuses them after, so an honest torch implementation allocates nothing in
    # the windows below, while a launcher that allocates on every call still does there.
    memory_gone = _memory_mark(session)
    inconclusive = 0
    calls = 0
    streams: set[int] = set()
    api: list[dict | None] = []     # per probe call: CUPTI's count of its memory API calls, None without
    for trial in range(plan.probe_calls):
        session.progress(f"launch-stream probe {trial + 1}/{plan.probe_calls}")
        obs = session.probe_call(session.candidate, case, spin_ms=plan.spin_ms, timer=timer)
        calls += 1
        api.append(_memory_calls(obs))
        if _output_wrong(obs, f"launch-stream probe call {calls}", result):
            return False
        finding = probe_finding(obs, plan.spin_ms)
        if finding is not None:
            # Confirm on another call: one slow return or one odd sample is not yet a verdict.
            again = session.probe_call(session.candidate, case, spin_ms=plan.spin_ms, timer=timer)
            calls += 1
            api.append(_memory_calls(again))
            if _output_wrong(again, f"launch-stream probe call {calls}", result):
                return False
            confirmed = probe_finding(again, plan.spin_ms)
            if confirmed is not None and confirmed[0] == finding[0]:
                name, seen = finding
                result.probes.append(Probe(name, False, f"calls {calls - 1} and {calls}: {seen}"))
                if name == "synchronising-launcher":
                    result.fail("incorrect", f"launcher synchronises: it returned only after the busy launch stream "
                                             f"drained ({obs['return_ms']:.1f} ms, then {again['return_ms']:.1f} ms); "
                                             "a launcher may not sync, copy or allocate")
                else:
                    result.fail("incorrect", f"work outside the launch stream on calls {calls - 1} and {calls} "
                                             f"({seen}); side stream or thread?")
                return False
            obs = again
        streams.update(obs.get("other_streams", ()))
        if not (obs.get("cupti") or obs["spin_running"]):
            inconclusive += 1
    if all(seen is not None for seen in api):
        further: list[dict | None] = []
        if any(seen["allocations"] for seen in api) and getattr(session.candidate, "caching_allocator", False):
            # A caching allocator (torch's) may cudaMalloc once more on a later call when its pool grows (the
            # H200, session 24: torch.compile of a triu(matmul) on 1 of 3 calls): a one-off is the pool, an
            # allocation on the further calls too is the implementation allocating per call.
            for trial in range(CONFIRM_ALLOCATION_CALLS):
                session.progress(f"allocation probe {trial + 1}/{CONFIRM_ALLOCATION_CALLS}")
                obs = session.probe_call(session.candidate, case, spin_ms=plan.spin_ms, timer=timer)
                calls += 1
                if _output_wrong(obs, f"allocation probe call {trial + 1}", result):
                    return False
                further.append(_memory_calls(obs))
        if all(seen is not None for seen in further):
            memory = _allocation_calls_verdict(api, memory_gone(), further)
        else:
            memory = _allocation_verdict(session, case, plan, memory_gone(), calls, "CUPTI windows incomplete")
    else:
        memory = _allocation_verdict(session, case, plan, memory_gone(), calls,
                                     "CUPTI unavailable" if timer is None else "CUPTI windows incomplete")
    session.release(case)
    how = "CUPTI records" if timer is not None else "output snapshots"
    detail = f"{plan.probe_calls - inconclusive} of {plan.probe_calls} probes conclusive ({how})"
    if streams:
        detail += f"; work ordered with the launch stream ran on stream(s) {sorted(streams)}"
    result.probes.append(Probe("launch-stream-order", True, detail, conclusive=inconclusive < plan.probe_calls))
    result.probes.append(memory.probe)
    if memory.failure:
        result.fail("incorrect", memory.failure)
        return False
    return True


def _output_wrong(obs: dict, call: str, result: CheckResult) -> bool:
    """Whether a probe call left the outputs wrong; if so `result` fails, naming the call."""
    if obs["final_ok"]:
        return False
    result.fail("incorrect", f"{call}: output wrong after the call ({obs['reason']})")
    return True


@dataclass
class _AllocationVerdict:
    probe: Probe
    failure: str | None = None     # the result's reason when the launcher kept memory


# Further probe calls a caching-allocator launcher (torch) gets after an allocation call in the probe windows.
CONFIRM_ALLOCATION_CALLS = 6


def _leak_allowance(calls: int) -> int:
    # cudaMalloc granularity is 2 MiB; more than that per probe call (and one more) is memory the launcher kept.
    return 2 * (calls + 1) * (1 << 20)


def _memory_calls(obs: dict) -> dict | None:
    """A probe call's memory API calls as CUPTI counted them inside the launcher, None without CUPTI windows."""
    if "allocations" not in obs:
        return None
    return {"allocations": obs["allocations"], "frees": obs.get("frees", 0), "name": obs.get("allocation_name", "")}


def _allocation_calls_verdict(api: list[dict], leaked: int, further: list[dict] = ()) -> _AllocationVerdict:
    """Did the launcher call an allocation function on any probe call, as CUPTI's API callbacks saw it?

    `further`: a caching-allocator launcher's further probe calls, made because it allocated in `api`: it
    fails only when it allocates there too (its pool grew once otherwise, which the probe says and passes).

    Device memory is not read for this: the driver's free memory is the whole device's, so a
    neighbour's free hides a launcher's leak (H200, session 19: tests/cheats/vector_add/leak_alloc.cu,
    64 MiB kept per call, was judged ok beside processes taking and freeing memory) and a neighbour's
    allocation looks like one. The figure stays in the detail as information."""
    mib = 2 ** 20
    memory = f"free device memory changed by {-leaked / mib:.1f} MiB meanwhile (the whole device's: not used)"
    allocating = [seen for seen in api if seen["allocations"]]
    again = [seen for seen in further if seen["allocations"]]
    name = next((seen["name"] for seen in [*allocating, *again] if seen["name"]), "an allocation function")
    frees = sum(seen["frees"] for seen in api)
    if allocating and further and not again:
        return _AllocationVerdict(Probe(
            "allocating-launcher", True,
            f"CUPTI API callbacks: {name} called inside the launcher on {len(allocating)} of {len(api)} probe calls "
            f"and on none of {len(further)} further calls: its caching allocator's pool grew once, the "
            f"implementation does not allocate per call; {memory}"))
    if further:   # it allocated again: every call it allocated on counts
        allocating, api = [*allocating, *again], [*api, *further]
    if allocating:
        seen = f"{name} called inside the launcher on {len(allocating)} of {len(api)} probe calls"
        return _AllocationVerdict(Probe("allocating-launcher", False, f"CUPTI API callbacks: {seen}; {memory}"),
                                  f"launcher allocates device memory ({seen}); a launcher may not allocate")
    return _AllocationVerdict(Probe("allocating-launcher", True,
                                    f"CUPTI API callbacks: no allocation call inside the launcher on {len(api)} probe "
                                    f"calls ({frees} free calls); {memory}"))


def _allocation_verdict(session, case, plan: VerifyPlan, leaked: int, calls: int,
                        why: str = "CUPTI unavailable") -> _AllocationVerdict:
    """Without CUPTI's API callbacks (`why`): did the launcher keep device memory over `calls` probe calls
    that freed `leaked` bytes of it?

    The driver's free memory is the whole device's: another process that creates its CUDA context or
    grows a cache meanwhile (a second worker on the GPU, PyTorch beside us) takes memory too, and
    such a drop once failed honest kernels of a batch sharing the H200. A launcher that allocates on
    every call loses memory again, at the same rate, over further windows of calls; a neighbour's
    one-off allocation does not repeat at that rate. So a drop is a verdict only when two windows
    agree (a third window settles a disagreement). A neighbour's free can still hide a leak: only
    CUPTI's count of allocation calls is a clean signal on a shared GPU."""
    mib = 2 ** 20
    how = f"free device memory ({why})"
    if leaked <= _leak_allowance(calls):
        return _AllocationVerdict(Probe("allocating-launcher", True,
                                        f"{how}: changed by {-leaked / mib:.1f} MiB"))
    windows = [(leaked, calls)]
    for _ in range(2):
        window = _memory_window(session, case, plan)
        if isinstance(window, _AllocationVerdict):
            return window
        windows.append(window)
        rate = window[0] / window[1]
        if window[0] <= _leak_allowance(window[1]):
            break
        if any(abs(rate - other / n) <= 2 * mib for other, n in windows[:-1]):
            seen = ", then ".join(f"{lost / mib:.0f} MiB over {n} calls" for lost, n in windows)
            return _AllocationVerdict(Probe("allocating-launcher", False, f"{how}: device memory disappeared: {seen}"),
                                      f"launcher allocates device memory ({seen}); a launcher may not allocate")
    seen = ", then ".join(f"{lost / mib:.1f} MiB over {n} calls" for lost, n in windows)
    return _AllocationVerdict(Probe("allocating-launcher", True, f"{how}: fell by {seen}: not at one rate, so "
                                    "another process's allocation, not the launcher's", conclusive=False))


def _memory_window(session, case, plan: VerifyPlan) -> tuple[int, int] | _AllocationVerdict:
    """(bytes of device memory that vanished, calls) over one more window of probe calls, less our own
    pool's growth; a verdict instead when a call's output is wrong."""
    memory_gone = _memory_mark(session)
    calls = max(plan.probe_calls, 1)
    for _ in range(calls):
        obs = session.probe_call(session.candidate, case, spin_ms=plan.spin_ms, timer=None)
        if not obs["final_ok"]:
            return _AllocationVerdict(Probe("allocating-launcher", False, "output wrong on a confirming call"),
                                      f"launch-stream probe: output wrong after the call ({obs['reason']})")
    return memory_gone(), calls


def _memory_mark(session):
    """A function giving the bytes of device memory gone since this mark, less what our own CuPy pool grew
    by meanwhile (the probes' snapshots)."""
    pool = session.cp.get_default_memory_pool()
    free_before, pool_before = session.device.mem_free(), pool.total_bytes()
    return lambda: (free_before - session.device.mem_free()) - (pool.total_bytes() - pool_before)


def audit_device_state(session, result: CheckResult) -> bool:
    """Device limits must equal the snapshot taken before the candidate's library was loaded."""
    changed = session.device.limits_changed(session.limits_snapshot)
    if changed:
        text = "; ".join(f"{name} {before} -> {after}" for name, (before, after) in changed.items())
        result.probes.append(Probe("device-limits", False, text))
        result.fail("incorrect", f"device state changed by the candidate: {text} (persisting-L2 / limit changes "
                                 "survive the L2 flush and leak into other kernels' timing)")
        return False
    result.probes.append(Probe("device-limits", True, "unchanged since before the candidate was loaded"))
    return True
