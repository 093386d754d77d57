"""References kept on the device, scrambled (Session, References; CPU with a numpy stand-in device).

A reference computed on the device stays there XORed with a ChaCha20 stream whose key only the host
holds; checks unscramble a temporary copy and scrub it. Driven here through the real session,
verification and comparison code with numpy as the array module: a spy on the candidate's calls
asserts that no plain reference exists while one runs, and the host path, the device path and the
device path without room give the same verdicts and numbers. GPU tests (`-m gpu`): a KernelBench
task's device reference against the host one, and a scan of device memory for the reference.
"""

from __future__ import annotations

import copy
import ctypes

import numpy as np
import pytest
import yaml
from host_session_kit import MATMUL_CU, MATMUL_SPEC, FakeDevice

from skillbase.errors import InputError
from skillbase.harness import session as session_module
from skillbase.harness import verify
from skillbase.harness.result import CheckResult
from skillbase.harness.session import CallOutcome, Session
from skillbase.harness.verify import POISON

REF = """\
import numpy as np

SEEN, RETURNED = [], []


def host(inputs, sizes):
    return {"C": inputs["A"] @ inputs["B"]}


def device(inputs, sizes):
    SEEN.append(dict(inputs))
    out = inputs["A"] @ inputs["B"]
    inputs["A"][...] = 0          # writes its inputs: they are the harness's copies, not the pristine ones
    RETURNED.append(out)
    return {"C": out}


device.device = True


def short(inputs, sizes):
    return {"C": np.zeros(3, dtype=np.float32)}


short.device = True
"""


class StubLauncher:
    label, has_setup, setup_for = "candidate", False, None

    def __init__(self, wrong: bool = False):
        self.wrong = wrong

    def setup(self, scalars):
        return False

    def teardown(self):
        pass

    def close(self):
        pass


@pytest.fixture
def task(tmp_path):
    (tmp_path / "ref.py").write_text(REF)
    (tmp_path / "k.cu").write_text(MATMUL_CU)

    def write(function: str):
        spec = copy.deepcopy(MATMUL_SPEC)
        spec["reference"] = {"python": f"ref.py:{function}"}
        path = tmp_path / f"{function}.task.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        (tmp_path / f"{function}.cu").write_text(MATMUL_CU)
        return path
    return write


def _session(monkeypatch, path, candidate=None, room=FakeDevice.room):
    monkeypatch.setattr(session_module, "Device", type("Fake", (FakeDevice,), {"room": room}))
    monkeypatch.setattr(session_module, "launcher_for", lambda entry, spec, label: candidate or StubLauncher())
    job = {"task": str(path), "candidate": {"library": "unused"}, "reference": {"kind": "python"}}
    return Session(job)


def _spy_candidate(monkeypatch, session, cases: list, events: list):
    """Session.call for the candidate, on the stand-in device: first asserts that no plain reference
    is on the device (no unscrambled view open, every device-kept reference scrambled), then computes."""

    def call(self, launcher, case, poison=POISON, fill_shared=True, offset_bytes=0):
        assert self.plain_references == 0, "a plain reference is on the device while a candidate runs"
        for c in cases:
            for name in c.reference.names:
                if c.reference.on_device(name):
                    scrambled = c.reference._device[name][0]
                    plain = c.host_inputs["A"] @ c.host_inputs["B"]     # what the reference computed
                    assert np.count_nonzero(scrambled.view(np.uint32) == plain.view(np.uint32)) <= 2
        events.append("candidate")
        out = (case.host_inputs["A"] @ case.host_inputs["B"]).astype(np.float32)
        if launcher.wrong:
            out[0, 0] += 1.0
        return CallOutcome({"C": out}, {"A": 0, "B": 0}, self)

    monkeypatch.setattr(Session, "call", call)
    real_compare = session_module.compare_outputs

    def compare(*args, **kwargs):
        events.append("compare")
        assert session.plain_references == 1, "a comparison sees the plain reference, inside device_view"
        return real_compare(*args, **kwargs)

    monkeypatch.setattr(session_module, "compare_outputs", compare)


def _verify(monkeypatch, session):
    """verify_candidate on the real path, the GPU-only probes and device audit stubbed."""
    cases = []
    prepare = session.prepare

    def kept_prepare(*args, **kwargs):
        case = prepare(*args, **kwargs)
        cases.append(case)
        return case

    monkeypatch.setattr(session, "prepare", kept_prepare)
    monkeypatch.setattr(verify, "launch_stream_probes", lambda session, case, plan, result: True)
    monkeypatch.setattr(verify, "audit_device_state", lambda session, result: True)
    events: list[str] = []
    _spy_candidate(monkeypatch, session, cases, events)
    sizes = session.spec.verify_sizes()
    result = CheckResult()
    ok = verify.verify_candidate(session, verify.VerifyPlan(sizes=sizes, probe_calls=0), result)
    # What timing does: its input sets (kept cases among them), then a re-verification.
    value_sets = session.value_sets("default", dict(session.spec.sizes_for("default")), 3, 5000)
    cases.extend(value_sets)
    outcome = session.call(session.candidate, value_sets[-1])
    timed = session.compare(session.spec.arg("C"), outcome.outputs["C"], value_sets[-1], poison=None)
    return ok, result, timed, cases, events


@pytest.mark.parametrize("wrong", [False, True])
def test_no_plain_reference_is_on_the_device_while_a_candidate_runs(task, monkeypatch, wrong):
    session = _session(monkeypatch, task("device"), StubLauncher(wrong))
    assert session.device_reference
    views = []
    real_view = session_module.References.device_view

    def spied_view(self, name):
        views.append(name)
        return real_view(self, name)

    monkeypatch.setattr(session_module.References, "device_view", spied_view)
    ok, result, timed, cases, events = _verify(monkeypatch, session)
    assert ok is not wrong and (wrong or result.checks)
    assert events.count("candidate") >= (2 if wrong else 5) and "compare" in events
    assert views, "every check went through device_view"
    assert all(c.reference.on_device("C") for c in cases)
    assert session.plain_references == 0
    assert (timed.bad > 0) is wrong


def test_host_device_and_no_room_paths_give_identical_verdicts(task, monkeypatch):
    seen = {}
    for mode in ("host", "device", "no-room"):
        for wrong in (False, True):
            with monkeypatch.context() as m:
                path = task("host" if mode == "host" else "device")
                session = _session(m, path, StubLauncher(wrong), room=0 if mode == "no-room" else FakeDevice.room)
                ok, result, timed, cases, _ = _verify(m, session)
                where = {c.reference.on_device("C") for c in cases}
                assert where == {mode == "device"}, (mode, where)
                seen[(mode, wrong)] = (ok, result.status, result.reason,
                                       [(c.ok, c.max_abs_err, c.rel_l2_err, c.bad_elements, c.outputs)
                                        for c in result.checks], (timed.ok, timed.bad, timed.max_abs_err))
    for wrong in (False, True):
        assert seen[("host", wrong)] == seen[("device", wrong)] == seen[("no-room", wrong)]
    assert seen[("host", False)][0] and not seen[("host", True)][0]


def test_a_device_reference_gets_fresh_copies_and_leaves_nothing_plain(task, monkeypatch):
    session = _session(monkeypatch, task("device"))
    module = session.python_reference.__globals__
    module["SEEN"].clear()
    module["RETURNED"].clear()
    sizes = dict(session.spec.sizes_for("default"))
    case = session.prepare("default", sizes, 7)
    (inputs,), (returned,) = module["SEEN"], module["RETURNED"]
    # Copies of the pristine inputs, shaped like the host's; the reference wrote its copy, not them.
    for name, host in case.host_inputs.items():
        assert not np.shares_memory(inputs[name], case.pristine[name])
        assert np.array_equal(case.pristine[name], np.ravel(host))
    assert inputs["A"].shape == case.host_inputs["A"].shape
    # What it saw and what it returned are scrubbed; the kept copy is scrambled, the host view exact.
    assert all(np.all(array.view(np.uint8) == POISON) for array in (*inputs.values(), returned))
    expected = case.host_inputs["A"] @ case.host_inputs["B"]
    scrambled = case.reference._device["C"][0]
    assert np.count_nonzero(scrambled == expected) <= 2
    assert np.array_equal(case.reference.host("C"), expected)
    assert "reference-host" in session.phases.seconds
    with case.reference.device_view("C") as plain:
        assert session.plain_references == 1 and np.array_equal(plain, expected)
    assert np.all(plain.view(np.uint8) == POISON) and session.plain_references == 0


def test_an_unmarked_reference_keeps_the_numpy_contract(task, monkeypatch):
    session = _session(monkeypatch, task("host"))
    assert not session.device_reference
    case = session.prepare("default", dict(session.spec.sizes_for("default")), 3)
    assert not case.reference.on_device("C")
    assert np.array_equal(case.reference.host("C"), case.host_inputs["A"] @ case.host_inputs["B"])


def test_a_device_reference_of_the_wrong_size_is_a_one_line_error(task, monkeypatch):
    session = _session(monkeypatch, task("short"))
    with pytest.raises(InputError, match=r"returned 3 elements for 'C', expected 768"):
        session.prepare("default", dict(session.spec.sizes_for("default")), 3)


# -- GPU --------------------------------------------------------------------------------------------

def _kb_task(tmp_path, device_mark: bool):
    from pathlib import Path

    from skillbase.kernelbench.importer import import_problems

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
    (problem,) = import_problems(fixtures / "level2" / "2_Gemm_Scale_ReLU.py", tmp_path).imported
    if not device_mark:       # an older import: kb_task.py without the mark
        source = problem.task_dir / "kb_task.py"
        source.write_text(source.read_text().replace("reference.device = True\n", ""))
    return fixtures, problem.task_dir


@pytest.mark.gpu
def test_a_device_reference_gives_the_host_references_verdict_and_numbers(tmp_path):
    import shutil

    from skillbase.harness.runtime import Options, evaluate

    results = {}
    for mark in (True, False):
        fixtures, folder = _kb_task(tmp_path / str(mark), mark)
        assert ("reference.device = True" in (folder / "kb_task.py").read_text()) is mark
        shutil.copyfile(fixtures / "kernels" / "gemm_scale_relu.cu", folder / "model.cu")
        result = evaluate(folder / "model.cu", options=Options(time=False, timeout_s=300))
        assert result.status == "ok", f"{result.status}: {result.reason}\n{result.log[-2000:]}"
        results[mark] = [(c.ok, c.max_abs_err, c.rel_l2_err, c.bad_elements) for c in result.checks]
    assert results[True] == results[False]


def _device_holds(needle: bytes, near: list[int]) -> bool:
    """Whether any device allocation of this process, within 64 GiB of the given pointers, holds
    `needle`: what a cheat could scan for. Walks the address space with cuMemGetAddressRange."""
    import cupy as cp

    libcuda = ctypes.CDLL("libcuda.so.1")
    get_range = libcuda.cuMemGetAddressRange_v2
    get_range.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t), ctypes.c_uint64]
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    step, span = 2 << 20, 64 << 30
    address, end = max(step, min(near) - span), max(near) + span
    chunk = 256 << 20
    while address < end:
        if get_range(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(address)) != 0:
            address += step
            continue
        for offset in range(0, size.value, chunk):
            n = min(chunk + len(needle), size.value - offset)
            host = np.empty(n, dtype=np.uint8)
            try:
                cp.cuda.runtime.memcpy(host.ctypes.data, base.value + offset, n, cp.cuda.runtime.memcpyDeviceToHost)
            except cp.cuda.runtime.CUDARuntimeError:
                break               # not readable by a copy: not by a cheat's kernel either
            if host.tobytes().find(needle) >= 0:
                return True
        address = base.value + size.value
    return False


@pytest.mark.gpu
def test_a_scan_of_device_memory_does_not_find_the_kept_reference(tmp_path, monkeypatch):
    """The cheat this defends against: scan every allocation for the reference's first bytes. The
    candidate is a stub (a torch one's warm-up would compute the same values as its own output)."""
    monkeypatch.setattr(session_module, "launcher_for", lambda entry, spec, label: StubLauncher())
    _, folder = _kb_task(tmp_path, True)
    spec_path = folder / "torch.task.yaml"
    job = {"task": str(spec_path), "candidate": {"python": str(folder / "kb_task.py")},
           "reference": {"kind": "python"}}
    session = Session(job)
    try:
        assert session.device_reference
        sizes = dict(session.spec.sizes_for("default"))
        case = session.prepare("default", sizes, 11)
        assert case.reference.on_device("out")
        needle = case.reference.host("out").tobytes()[:64]
        near = [case.reference._device["out"][0].data.ptr, *(a.data.ptr for a in case.pristine.values())]
        with case.reference.device_view("out") as plain:
            assert _device_holds(needle, near), "the scan finds a plain copy (it can see the memory)"
            del plain
        assert not _device_holds(needle, near), "the kept reference is readable on the device"
    finally:
        session.close(teardown=False)
