"""One worker job draws each case's inputs and computes its reference once (CPU, a spy on both).

A KernelBench draw of a GB-sized input costs seconds, and so does its PyTorch reference: the job's
verification cases serve the launch-stream probes and timing's input sets again, and a torch
launcher warms up on the case being prepared instead of drawing its own set. The device is a numpy
stand-in; the checks' own calls are stubbed (they need a GPU), everything that draws is real.
"""

from __future__ import annotations

import copy
import types
from collections import Counter

import numpy as np
import pytest
import yaml
from host_session_kit import MATMUL_CU, MATMUL_SPEC, FakeDevice

from skillbase.harness import session as session_module
from skillbase.harness import torch_launcher, verify
from skillbase.harness.result import CheckResult, SizeCheck
from skillbase.harness.timing import VALUE_SETS
from skillbase.task import load_task
from skillbase.task.spec import TaskSpec

torch = pytest.importorskip("torch")

SPEC = {**MATMUL_SPEC, "reference": {"python": "ref.py:compute"}}


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """A task on disk, and Counters of make_inputs draws and reference computations by (sizes, seed)."""
    (tmp_path / "ref.py").write_text("def compute(inputs, sizes):\n    return {'C': inputs['A'] @ inputs['B']}\n")
    (tmp_path / "k.cu").write_text(MATMUL_CU)
    (tmp_path / "k.task.yaml").write_text(yaml.safe_dump(copy.deepcopy(SPEC), sort_keys=False))
    draws, references = Counter(), Counter()
    make_inputs, reference_callable = TaskSpec.make_inputs, TaskSpec.reference_callable

    def spy_make_inputs(self, sizes, seed):
        draws[(tuple(sorted(dict(sizes).items())), seed)] += 1
        return make_inputs(self, sizes, seed)

    def spy_reference_callable(self):
        reference = reference_callable(self)

        def counted_reference(inputs, sizes):
            references[tuple(sorted(sizes.items()))] += 1
            return reference(inputs, sizes)
        return counted_reference

    monkeypatch.setattr(TaskSpec, "make_inputs", spy_make_inputs)
    monkeypatch.setattr(TaskSpec, "reference_callable", spy_reference_callable)
    return tmp_path / "k.task.yaml", draws, references


def torch_candidate(spec):
    """A real TorchLauncher's setup (warm-up) around a CPU matmul: the eager baseline's launcher."""
    launcher = torch_launcher.TorchLauncher.__new__(torch_launcher.TorchLauncher)
    launcher.label, launcher.spec, launcher.name, launcher.args = "candidate", spec, spec.launcher, list(spec.args)
    launcher.compile, launcher.calls, launcher.setup_calls, launcher.setup_for = False, 0, 0, None
    launcher.torch = types.SimpleNamespace(cuda=types.SimpleNamespace(synchronize=lambda: None))
    launcher.fn = lambda A, B, C, M, N, K: C.copy_(A @ B)
    return launcher


def test_a_judgement_draws_each_case_and_its_reference_once(counted, monkeypatch):
    path, draws, references = counted
    spec = load_task(path, check_launcher=False)
    candidate = torch_candidate(spec)
    monkeypatch.setattr(session_module, "Device", FakeDevice)
    monkeypatch.setattr(session_module, "launcher_for", lambda entry, spec, label: candidate)
    real_warm_up = torch_launcher.warm_up_tensors
    monkeypatch.setattr(torch_launcher, "warm_up_tensors", lambda *a, **k: real_warm_up(*a, **{**k, "device": "cpu"}))
    # The candidate's calls and the probes need a GPU: stubbed, after checking what they are given.
    seen = []

    def check_call(session, case, size_name, variant, poison, offset=0):
        assert case.pristine and all(np.array_equal(case.pristine[n], np.ravel(a)) for n, a in case.host_inputs.items())
        seen.append((size_name, case.seed, variant))
        return SizeCheck(size=size_name, sizes=dict(case.sizes), seed=case.seed, variant=variant)

    def probes(session, case, plan, result):
        seen.append((case.size, case.seed, "probes"))
        session.release(case)
        return True

    monkeypatch.setattr(verify, "_check_call", check_call)
    monkeypatch.setattr(verify, "launch_stream_probes", probes)
    monkeypatch.setattr(verify, "audit_device_state", lambda session, result: True)

    sizes = spec.verify_sizes()
    default = dict(spec.sizes_for("default"))
    job = {"task": str(path), "candidate": {"python": "kb_task.py"}, "reference": {"kind": "python"},
           "verify": {"sizes": [[n, s] for n, s in sizes]}, "time": {"sizes": [["default", default]]}}
    session = session_module.Session(job)
    assert verify.verify_candidate(session, verify.VerifyPlan(sizes=sizes), CheckResult())
    # What _time_size does first: its rotated input sets at the timed size.
    value_sets = session.value_sets("default", default, VALUE_SETS, 5000)

    # Verification: seeds 0 and 1 and the x4-scaled call at the first size, two at the irregular one;
    # the probes run on seed 0 again; timing rotates seeds 0, 1 and one fresh set.
    assert [c.seed for c in value_sets] == [0, 1, 5000]
    assert ("default", 0, "probes") in seen and len(value_sets) == VALUE_SETS
    assert sum(draws.values()) == 6, f"each case drawn once, no warm-up draws: {draws}"
    assert max(draws.values()) == 1, draws
    assert sum(references.values()) == 6, references
    assert candidate.setup_calls == 3, "warmed up at the first size, the irregular one, the first again"
    # Drawing and uploading are counted apart: on the H200 an upload of a 6 GiB case is its own seconds.
    assert {"inputs", "upload", "reference"} <= set(session.phases.seconds), session.phases.seconds
    # A reused case is uploaded afresh from its host inputs (verification poisoned its copies), and its
    # reference is the one computed when it was drawn.
    for case in value_sets:
        for name, array in case.host_inputs.items():
            assert np.array_equal(case.pristine[name], np.ravel(array))
        np.testing.assert_allclose(case.reference.host("C"), case.host_inputs["A"] @ case.host_inputs["B"], rtol=1e-5)
        session.release(case)
        assert not case.pristine


def test_the_warm_up_uses_the_inputs_it_is_given_without_writing_them(counted):
    path, draws, _ = counted
    spec = load_task(path, check_launcher=False)
    scalars = spec.resolve("default").scalars
    host = spec.make_inputs(spec.sizes_for("default"), 3)
    before = {name: array.copy() for name, array in host.items()}
    tensors = torch_launcher.warm_up_tensors(spec, scalars, device="cpu", host=host)
    tensors["A"].fill_(7.0)      # an implementation that writes its input writes the warm-up's copy
    assert sum(draws.values()) == 1, "no draw of its own"
    assert all(np.array_equal(host[name], before[name]) for name in host)
