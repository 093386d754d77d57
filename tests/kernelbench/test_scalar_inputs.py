"""KernelBench problems whose get_inputs() returns Python numbers (`[A, s]`): each number becomes a scalar
argument of the launcher with the value get_inputs() returned, the reference and the torch implementation
pass it to forward(), and the generator prompt names it with its type and value (issue #20)."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import jsonschema
import numpy as np
import torch
from click.testing import CliRunner

from skillbase.cli import cli
from skillbase.documents import schema_path
from skillbase.kernelbench.generator import generator_prompt
from skillbase.kernelbench.importer import import_problems
from skillbase.task import load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
SCALE = FIXTURES / "level1" / "4_Shift_and_scale_by_scalar.py"

# An int read from a module constant large enough to look like a size, and a bool: both scalar inputs.
INT_AND_BOOL = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x * k, negated when flip."""

    def forward(self, x, k, flip):
        y = x * k
        return -y if flip else y


batch_size = 20
dim = 33
factor = 12


def get_inputs():
    return [torch.randn(batch_size, dim), factor, True]


def get_init_inputs():
    return []
'''


def _adapter(task_dir: Path, name: str):
    module_spec = importlib.util.spec_from_file_location(name, task_dir / "kb_task.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def test_a_float_input_becomes_a_scalar_argument_with_its_value(tmp_path):
    result = CliRunner().invoke(cli, ["kernelbench", "import", str(SCALE), "--out", str(tmp_path / "kb")])
    assert result.exit_code == 0, result.output
    assert "sizes cols, rows  scalar s = -0.375 (f64)" in result.output
    task = tmp_path / "kb" / "level1_4_Shift_and_scale_by_scalar"
    spec = load_task(task / "model.task.yaml", check_launcher=False)
    torch_spec = load_task(task / "torch.task.yaml")     # kb_forward takes the same arguments, in order
    described = [(a.name, a.pointer, a.dtype) for a in spec.args]
    assert described == [(a.name, a.pointer, a.dtype) for a in torch_spec.args]
    assert described == [("A", True, "f32"), ("s", False, "f64"), ("out", True, "f32"), ("cols", False, "i32"),
                         ("rows", False, "i32")]
    for sizes in ("default", "irregular"):
        assert spec.resolve(sizes).scalars["s"] == -0.375
    assert spec.work("default") == (2 * 24 * 40, 2 * 4 * 24 * 40)     # the scalar is neither work nor bytes
    facts = json.loads((task / "problem.json").read_text())
    assert facts["scalars"] == {"s": {"type": "float", "value": -0.375, "dtype": "f64"}}
    assert any("f64 scalar s = -0.375" in n for n in facts["notes"])
    document = CliRunner().invoke(cli, ["kernelbench", "import", str(SCALE), "--out", str(tmp_path / "kb"),
                                        "--force", "--json"]).stdout
    document = json.loads(document)
    jsonschema.validate(document, json.loads(schema_path("kernelbench-import").read_text()))
    assert document["problems"][0]["scalars"] == facts["scalars"]


def test_reference_and_torch_implementation_compute_the_problem_with_the_scalar(tmp_path):
    task = import_problems(SCALE, tmp_path).problems[0].task_dir
    spec = load_task(task / "model.task.yaml", check_launcher=False)
    seed = random.randrange(1 << 30)
    inputs = spec.make_inputs("irregular", seed)
    assert sorted(inputs) == ["A"]                        # the scalar is no array
    a = inputs["A"]
    assert a.shape == (23, 39) and not np.array_equal(a, spec.make_inputs("irregular", seed + 1)["A"])
    expected = (a - np.float32(-0.375)) * np.float32(-0.375)   # by hand: -0.375 is exact in f32
    produced = spec.reference_callable()({"A": a.copy()}, spec.sizes_for("irregular"))["out"].reshape(a.shape)
    assert np.array_equal(produced, expected)
    # The torch implementation gets the scalar the harness passes (the launcher's argument), not a copy of its own.
    adapter = _adapter(task, "kb_task_scalar")
    out = torch.empty(23, 39)
    adapter.kb_forward(torch.from_numpy(a), spec.resolve("irregular").scalars["s"], out, 39, 23)
    assert np.array_equal(out.numpy(), expected)
    adapter.kb_forward(torch.from_numpy(a), 2.5, out, 39, 23)
    assert np.array_equal(out.numpy(), (a - np.float32(2.5)) * np.float32(2.5))


def test_the_generator_prompt_shows_the_scalar_with_its_type_and_value(tmp_path):
    task = import_problems(SCALE, tmp_path).problems[0].task_dir
    text = generator_prompt(task / "model.cu").text
    assert 'extern "C" void kb_forward(const float* A, double s, float* out, int cols, int rows)' in text
    assert "- `s`: f64 scalar `double s` = -0.375, passed by value (not a pointer): the Python float forward() " \
           "receives as this input" in text
    assert "- `A`: f32 [rows, cols], an input of forward()" in text


def test_int_and_bool_inputs_and_a_size_constant_that_is_a_scalar_input(tmp_path):
    problem = tmp_path / "level1" / "7_Int_and_bool.py"
    problem.parent.mkdir()
    problem.write_text(INT_AND_BOOL)
    (result,) = import_problems(tmp_path / "level1", tmp_path / "out").problems
    assert result.imported, result.reason
    # factor (12) looks like a size, but it is an input's value: it stays fixed, the shapes vary with the others.
    assert result.symbols == {"batch_size": 20, "dim": 33}
    assert any(n.startswith("factor kept at 12: changing it changes a scalar input") for n in result.notes)
    spec = load_task(result.task_dir / "model.task.yaml", check_launcher=False)
    load_task(result.task_dir / "torch.task.yaml")
    sizes = spec.sizes_for("irregular")
    assert spec.resolve("irregular").scalars == {"k": 12, "flip": 1, **sizes}
    assert [a.dtype for a in spec.args if not a.pointer][:2] == ["i64", "u8"]
    x = spec.make_inputs("irregular", random.randrange(1 << 30))["x"]
    produced = spec.reference_callable()({"x": x.copy()}, spec.sizes_for("irregular"))["out"].reshape(x.shape)
    assert np.array_equal(produced, -(x * np.float32(12)))
    adapter = _adapter(result.task_dir, "kb_task_int_bool")
    out = torch.empty(x.shape)
    # The harness passes a u8 as an int: 0 reaches forward() as False.
    adapter.kb_forward(torch.from_numpy(x), 12, 0, out, sizes["batch_size"], sizes["dim"])
    assert np.array_equal(out.numpy(), x * np.float32(12))
    text = generator_prompt(result.task_dir / "model.cu").text
    assert "kb_forward(const float* x, long long k, unsigned char flip, float* out, int batch_size, int dim)" in text
    assert "- `flip`: u8 scalar `unsigned char flip` = 1 (bool True), passed by value" in text
    assert "- `k`: i64 scalar `long long k` = 12, passed by value (not a pointer): the Python int" in text
