"""`skillbase kernelbench import` on problems written in KernelBench's format (tests/fixtures/kernelbench):
good problems become tasks whose specs load, whose shapes and work follow the sizes, and whose
reference is the problem's own forward pass; bad ones get a one-line reason and the rest still import."""

from __future__ import annotations

import importlib.util
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import torch
from click.testing import CliRunner

from skillbase.cli import cli
from skillbase.documents import schema_path
from skillbase.errors import InputError
from skillbase.kernelbench.importer import find_problems, import_problems
from skillbase.task import load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
GOOD = ["level1/1_Matmul.py", "level1/2_ReLU.py", "level1/3_Sum_reduction_over_a_dimension.py",
        "level1/4_Shift_and_scale_by_scalar.py", "level2/1_Conv2d_ReLU_BiasAdd.py", "level2/2_Gemm_Scale_ReLU.py",
        "level3/1_MLP.py"]
BAD = {"level1/1_Import_error.py": "does not import: ImportError",
       "level1/2_Unseeded_dropout.py": "random ops without a seed",
       "level1/3_Tuple_output.py": "forward returns a tuple",
       "level1/4_Dynamic_shape.py": "dynamic shape",
       "level1/5_List_input.py": "get_inputs()[1] is a list, not a tensor or a Python number",
       "level1/6_Random_scalar.py": "get_inputs()[1] is a float drawn at random"}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("tasks")
    return import_problems(FIXTURES, out)


def test_every_good_problem_imports_and_both_specs_load(imported):
    assert sorted(p.problem for p in imported.imported) == sorted(GOOD)
    for p in imported.imported:
        spec = load_task(p.task_dir / "model.task.yaml", check_launcher=False)   # model.cu comes from the generator
        torch_spec = load_task(p.task_dir / "torch.task.yaml")                    # checks kb_forward's parameters
        assert spec.launcher == torch_spec.launcher == "kb_forward"
        assert [a.name for a in spec.args] == [a.name for a in torch_spec.args]
        assert spec.reference == {"python": "kb_task.py:reference"} and spec.allow == ()
        assert torch_spec.is_torch and "torch" in torch_spec.allow
        assert any(v % 32 for v in spec.irregular.values())


def test_bad_problems_each_get_their_reason_and_the_good_ones_in_the_same_folder_still_import(tmp_path):
    report = import_problems(FIXTURES / "bad", tmp_path, level=1)
    reasons = {p.problem: p.reason for p in report.problems}
    assert set(reasons) == set(BAD)
    for problem, expected in BAD.items():
        assert expected in reasons[problem] and "\n" not in reasons[problem], reasons[problem]
    mixed = tmp_path / "mixed" / "level1"
    mixed.mkdir(parents=True)
    for name in ("1_Matmul.py", "2_ReLU.py"):
        (mixed / name).write_text((FIXTURES / "level1" / name).read_text())
    (mixed / "3_Tuple_output.py").write_text((FIXTURES / "bad" / "level1" / "3_Tuple_output.py").read_text())
    report = import_problems(tmp_path / "mixed", tmp_path / "out")
    assert [p.imported for p in report.problems] == [True, True, False]


def test_a_problem_whose_output_is_all_zeros_imports_with_a_note_that_no_kernel_can_be_judged_by_it(tmp_path):
    """A note, not a refusal: the harness's spec sanity is what refuses the reference at run time, and refusing at
    import would renumber the problems after it (the committed KernelBench reports name runs by number)."""
    # outside FIXTURES: the other tests import all of it
    report = import_problems(FIXTURES.parent / "kernelbench_degenerate", tmp_path, level=1)
    [problem] = report.problems
    assert problem.imported, problem.reason
    assert any(n.startswith("its output is all zeros on two input draws at the irregular sizes") for n in problem.notes)
    healthy = import_problems(FIXTURES, tmp_path / "healthy", level=1, problems=("2_ReLU",))
    assert not any("would pass" in n for p in healthy.problems for n in p.notes)


def _spec(imported, problem):
    p = next(p for p in imported.imported if p.problem == problem)
    return load_task(p.task_dir / "model.task.yaml", check_launcher=False)


def test_shapes_are_expressions_over_the_size_constants(imported):
    matmul = _spec(imported, "level1/1_Matmul.py")
    assert [(a.name, [e.text for e in a.shape]) for a in matmul.args if a.pointer] == \
        [("A", ["M", "K"]), ("B", ["K", "N"]), ("out", ["M", "N"])]
    assert matmul.presets["default"] == {"K": 48, "M": 64, "N": 40}
    assert matmul.irregular == {"K": 47, "M": 63, "N": 39}
    conv = _spec(imported, "level2/1_Conv2d_ReLU_BiasAdd.py")
    out = conv.resolve("irregular").arg("out").shape
    assert out == (7, 16, 29, 29)       # a 3x3 convolution of 31x31 without padding, 16 channels kept fixed
    assert conv.resolve("default").arg("conv_weight").shape == (16, 3, 3, 3)
    reduction = _spec(imported, "level1/3_Sum_reduction_over_a_dimension.py")
    assert "reduce_dim" not in reduction.symbols     # 1 is a configuration value, not a size


def test_work_model_counts_every_operator_at_every_size(imported):
    matmul = _spec(imported, "level1/1_Matmul.py")
    for sizes in ("default", "irregular"):
        s = matmul.sizes_for(sizes)
        m, n, k = s["M"], s["N"], s["K"]
        assert matmul.work(sizes) == (2 * m * n * k, 4 * (m * k + k * n + m * n))
    gemm = _spec(imported, "level2/2_Gemm_Scale_ReLU.py")
    s = gemm.sizes_for("irregular")
    b, i, o = s["batch_size"], s["in_features"], s["out_features"]
    assert gemm.work("irregular")[0] == 2 * b * i * o + 2 * b * o     # addmm, then scale and ReLU per output
    conv = _spec(imported, "level2/1_Conv2d_ReLU_BiasAdd.py")     # 3 input channels, 3x3, 16 output channels
    for sizes in ("default", "irregular"):
        s = conv.sizes_for(sizes)
        outputs = s["batch_size"] * 16 * (s["height"] - 2) * (s["width"] - 2)
        assert conv.work(sizes)[0] == 2 * 3 * 3 * 3 * outputs + outputs + outputs     # conv, ReLU, bias add


def _problem_model(file: Path, state: dict):
    module_spec = importlib.util.spec_from_file_location("kb_fixture", file)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    model = module.Model(*module.get_init_inputs())
    model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    return model


@pytest.mark.parametrize("problem", ["level1/1_Matmul.py", "level2/2_Gemm_Scale_ReLU.py", "level3/1_MLP.py"])
def test_the_reference_is_the_problems_own_forward_pass_on_the_tasks_inputs(imported, problem):
    spec = _spec(imported, problem)
    seed = random.randrange(1 << 30)
    inputs = spec.make_inputs("default", seed)
    again = spec.make_inputs("default", seed)
    other = spec.make_inputs("default", seed + 1)
    assert all(np.array_equal(inputs[k], again[k]) for k in inputs)
    assert not all(np.array_equal(inputs[k], other[k]) for k in inputs)
    produced = spec.reference_callable()({k: v.copy() for k, v in inputs.items()}, spec.sizes_for("default"))
    facts = json.loads((spec.path.parent / "problem.json").read_text())
    adapter_names = [a.name for a in spec.args if a.pointer and a.role == "in"]
    n_inputs = len([a for a in adapter_names if a in ("A", "B", "x")])
    kb = importlib.util.spec_from_file_location("kb_task_under_test", spec.path.parent / "kb_task.py")
    module = importlib.util.module_from_spec(kb)
    kb.loader.exec_module(module)
    state = {key: inputs[name] for name, key in module._KB["params"]}
    model = _problem_model(FIXTURES / problem, state)
    with torch.no_grad():
        expected = model(*[torch.from_numpy(inputs[n]) for n in adapter_names[:n_inputs]]).numpy()
    assert facts["problem"] == problem
    assert np.array_equal(produced["out"].reshape(expected.shape), expected)


def test_an_existing_task_folder_is_kept_without_force(tmp_path):
    first = import_problems(FIXTURES / "level1" / "2_ReLU.py", tmp_path)
    task = first.problems[0].task_dir
    (task / "model.cu").write_text("// the user's kernel\n")
    again = import_problems(FIXTURES / "level1" / "2_ReLU.py", tmp_path)
    assert "exists (use --force" in again.problems[0].reason
    assert (task / "model.cu").read_text() == "// the user's kernel\n"
    forced = import_problems(FIXTURES / "level1" / "2_ReLU.py", tmp_path, force=True)
    assert forced.problems[0].imported and not (task / "model.cu").exists()


def test_a_problem_that_hangs_is_stopped_by_the_timeout(tmp_path):
    hang = tmp_path / "level1" / "1_Hang.py"
    hang.parent.mkdir()
    hang.write_text("import time\ntime.sleep(60)\n")
    report = import_problems(tmp_path, tmp_path / "out", timeout_s=3)
    assert report.problems[0].reason.startswith("timed out after 3 s")


def test_finding_problems_by_level_and_number():
    assert [p.name for p in find_problems(FIXTURES, level=2)] == ["1_Conv2d_ReLU_BiasAdd.py", "2_Gemm_Scale_ReLU.py"]
    assert [p.name for p in find_problems(FIXTURES, level=1, problems=("2",))] == ["2_ReLU.py"]
    with pytest.raises(InputError, match="no level7/ folder"):
        find_problems(FIXTURES, level=7)
    with pytest.raises(InputError, match="no problem 99"):
        find_problems(FIXTURES, level=1, problems=("99",))


def test_cli_json_report_and_one_line_errors(tmp_path):
    runner = CliRunner()
    result = runner.invoke(cli, ["kernelbench", "import", str(FIXTURES / "bad"), "--level", "1",
                                 "--problems", "3", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    jsonschema.validate(document, json.loads(schema_path("kernelbench-import").read_text()))
    assert document["imported"] == 0 and document["rejected"] == 1
    assert document["problems"][0]["reason"].startswith("forward returns a tuple")
    done = subprocess.run([sys.executable, "-m", "skillbase", "kernelbench", "import", str(tmp_path / "nothing")],
                          capture_output=True, text=True)
    assert done.returncode != 0 and done.stderr.splitlines() == [
        f"error: {tmp_path / 'nothing'}: no such file or folder",
        "hint: give a KernelBench checkout or a folder of problems"]


def test_an_out_folder_inside_path_is_not_read_as_problems(tmp_path):
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "2_ReLU.py").write_text((FIXTURES / "level1" / "2_ReLU.py").read_text())
    import_problems(tmp_path, tmp_path / "kb")
    again = import_problems(tmp_path, tmp_path / "kb", force=True)
    assert [p.problem for p in again.problems] == ["level1/2_ReLU.py"] and again.problems[0].imported


def test_score_needs_a_gpu_and_says_so_in_one_line(tmp_path):
    if shutil.which("nvidia-smi") and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0:
        pytest.skip("this machine has a GPU: the GPU test scores for real")
    import_problems(FIXTURES / "level1" / "2_ReLU.py", tmp_path)
    done = subprocess.run([sys.executable, "-m", "skillbase", "kernelbench", "score", str(tmp_path / "level1_2_ReLU")],
                          capture_output=True, text=True)
    assert done.returncode == 3 and done.stderr.splitlines()[0] == "error: no NVIDIA GPU found (nvidia-smi lists none)"


def _load(path: Path, name: str):
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("problem", ["level1/1_Matmul.py", "level3/1_MLP.py"])
def test_without_a_gpu_the_inputs_are_the_problems_own_draws_under_the_harness_seed(imported, problem, monkeypatch):
    spec = _spec(imported, problem)
    adapter = _load(spec.path.parent / "kb_task.py", "kb_task_inputs")
    monkeypatch.setattr(adapter._kb_torch.cuda, "is_available", lambda: False)
    sizes, seed = spec.sizes_for("default"), random.randrange(1 << 30)
    arrays = adapter.make_inputs(sizes, np.random.default_rng(seed))
    # The same draws made by hand with the problem's own code, on the host, as before the GPU path existed.
    own = _load(FIXTURES / problem, "kb_fixture_inputs")
    for name in adapter._KB["symbols"]:
        setattr(own, name, int(sizes[name]))
    torch.manual_seed(int(np.random.default_rng(seed).integers(0, 2**31 - 1)))
    model = own.Model(*own.get_init_inputs())
    inputs = own.get_inputs()
    expected = {name: inputs[i].numpy() for i, name in enumerate(adapter._KB["inputs"])}
    state = model.state_dict()
    expected.update({name: state[key].detach().numpy() for name, key in adapter._KB["params"]})
    assert sorted(arrays) == sorted(expected)
    assert all(arrays[k].dtype == expected[k].dtype and np.array_equal(arrays[k], expected[k]) for k in expected)
    again = adapter.make_inputs(sizes, np.random.default_rng(seed + 1))
    assert not all(np.array_equal(arrays[k], again[k]) for k in expected)
