"""Task specs that should not load (issue 22): impossible sizes, non-finite tolerances, negative work,
a tolerance on an input, files outside the spec's folder, unreadable or non-UTF-8 specs; each is one
line naming the field, with a hint."""

from __future__ import annotations

import copy
import os
import textwrap
from pathlib import Path

import pytest
import yaml

from skillbase.errors import InputError
from skillbase.task import load_task

SGEMM_CU = textwrap.dedent("""\
    __global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {}
    extern "C" void sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
        k<<<1, 1>>>(A, B, C, M, N, K);
    }
    """)
BASE = {
    "launcher": "sgemm",
    "args": [
        {"name": "A", "dtype": "f32", "shape": ["M", "K"], "role": "in"},
        {"name": "B", "dtype": "f32", "shape": ["K", "N"], "role": "in"},
        {"name": "C", "dtype": "f32", "shape": ["M", "N"], "role": "out"},
        {"name": "M", "dtype": "i32", "value": "M"},
        {"name": "N", "dtype": "i32", "value": "N"},
        {"name": "K", "dtype": "i32", "value": "K"},
    ],
    "sizes": {"presets": {"small": {"M": 64, "N": 64, "K": 64}, "default": {"M": 256, "N": 256, "K": 256}},
              "irregular": {"M": 100, "N": 103, "K": 97}},
    "work": {"flops": "2*M*N*K", "bytes": "4*(M*K + K*N + M*N)"},
}


def write_task(folder: Path, spec: dict | str) -> Path:
    (folder / "k.cu").write_text(SGEMM_CU)
    text = spec if isinstance(spec, str) else yaml.safe_dump(spec, sort_keys=False)
    (folder / "k.task.yaml").write_text(text)
    return folder / "k.cu"


def error_of(folder: Path, mutate) -> str:
    spec = copy.deepcopy(BASE)
    mutate(spec)
    with pytest.raises(InputError) as info:
        load_task(write_task(folder, spec))
    message = info.value.message
    assert "\n" not in message and "k.task.yaml" in message
    return message + " | " + (info.value.hint or "")


def test_a_shape_no_gpu_can_hold_is_refused_with_a_hint(tmp_path):
    def huge(spec):
        spec["sizes"]["presets"]["default"] = {"M": 2 ** 30, "N": 2 ** 30, "K": 256}
    message = error_of(tmp_path, huge)
    assert "args[0].shape" in message or "args[2].shape" in message
    assert "more than any GPU holds" in message and "smaller sizes" in message


def test_a_2_to_the_60_shape_expression_is_refused(tmp_path):
    message = error_of(tmp_path, lambda s: s["args"][2].update(shape=["2**60"]))
    assert "args[2].shape" in message and "GPU" in message


@pytest.mark.parametrize("dims", [["M", "0"], ["M", "K - K"], ["M", "-1"]])
def test_zero_and_negative_dimensions(tmp_path, dims):
    message = error_of(tmp_path, lambda s: s["args"][2].update(shape=dims))
    assert "args[2].shape" in message and "zero or less" in message


@pytest.mark.parametrize("value", [".nan", ".inf", "-1.0"])
@pytest.mark.parametrize("level", ["task", "arg"])
def test_non_finite_or_negative_tolerances(tmp_path, value, level):
    spec = copy.deepcopy(BASE | {"tolerance": {"rtol": "PLACE"}} if level == "task" else BASE)
    if level == "arg":
        spec["args"][2]["tolerance"] = {"rtol": "PLACE"}
    text = yaml.safe_dump(spec, sort_keys=False).replace("PLACE", "").replace("rtol: ''", f"rtol: {value}")
    cu = write_task(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_task(cu)
    where = "tolerance.rtol" if level == "task" else "args[2].tolerance.rtol"
    assert f": {where}:" in info.value.message or f": {where}" in info.value.message, info.value.message


@pytest.mark.parametrize("field,value", [("flops", "-2*M*N*K"), ("bytes", "-1"), ("flops", "1e400 * M")])
def test_negative_or_infinite_work(tmp_path, field, value):
    message = error_of(tmp_path, lambda s: s["work"].update({field: value}))
    assert f"work.{field}" in message


def test_a_tolerance_on_an_input_is_refused(tmp_path):
    message = error_of(tmp_path, lambda s: s["args"][0].update(tolerance={"rtol": 1e-3}))
    assert "args[0].tolerance" in message and "input" in message and "move the tolerance" in message


@pytest.mark.parametrize("target", ["../outside.py:ref", "sub/../../outside.py:ref"])
def test_reference_python_outside_the_spec_folder(tmp_path, target):
    task = tmp_path / "task"
    task.mkdir()
    (tmp_path / "outside.py").write_text("def ref(*a): pass\n")
    message = error_of(task, lambda s: s.update(reference={"python": target}))
    assert "reference.python" in message and "outside the spec's folder" in message


def test_a_reference_beside_the_spec_still_loads(tmp_path):
    (tmp_path / "ref.py").write_text("def ref(*a): pass\n")
    spec = copy.deepcopy(BASE)
    spec["reference"] = {"python": "ref.py:ref"}
    assert load_task(write_task(tmp_path, spec)).reference == {"python": "ref.py:ref"}


def test_non_utf8_and_unreadable_specs(tmp_path):
    cu = write_task(tmp_path, "launcher: sgemm\n")
    (tmp_path / "k.task.yaml").write_bytes(b"launcher: sgemm\nargs: \xff\xfe\n")
    with pytest.raises(InputError, match=r"k.task.yaml:2: not UTF-8"):
        load_task(cu)
    if os.getuid() != 0:   # root reads any file
        (tmp_path / "k.task.yaml").write_text("launcher: sgemm\n")
        (tmp_path / "k.task.yaml").chmod(0)
        with pytest.raises(InputError, match="cannot read"):
            load_task(cu)
