"""`skillbase init`: drafts from the launcher's signature, never overwrites, asks which launcher."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from skillbase.cli import main
from skillbase.errors import InputError
from skillbase.task import load_task
from skillbase.task.draft import draft_spec

REPO = Path(__file__).resolve().parents[2]


def copy_example(tmp_path: Path, name: str) -> Path:
    target = tmp_path / f"{name}.cu"
    shutil.copy(REPO / "examples" / name / f"{name}.cu", target)
    return target


def run_cli(args, capsys):
    code = 0
    try:
        main(args)
    except SystemExit as exit_:
        code = exit_.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


def test_draft_of_sgemm_fills_what_the_signature_says(tmp_path, capsys):
    cu = copy_example(tmp_path, "naive_sgemm")
    code, out, err = run_cli(["init", str(cu)], capsys)
    assert code == 0, err
    spec = yaml.safe_load((tmp_path / "naive_sgemm.task.yaml").read_text())
    assert spec["launcher"] == "sgemm"
    assert [a["name"] for a in spec["args"]] == ["A", "B", "C", "M", "N", "K"]
    assert [a.get("role") for a in spec["args"][:3]] == ["in", "in", "out"]
    assert all(a["dtype"] == "f32" for a in spec["args"][:3]) and all(a["dtype"] == "i32" for a in spec["args"][3:])
    assert spec["sizes"]["presets"]["default"] == {"M": 2048, "N": 2048, "K": 2048}
    assert spec["args"][0]["shape"] == ["TODO"]
    # one line per thing to fill in or check
    assert "args[0] (A).shape: TODO" in out and "args[2] (C).role: guessed out" in out and "work.flops: TODO" in out
    # an unfinished draft cannot be used
    with pytest.raises(InputError, match="still TODO"):
        load_task(cu)


def test_draft_of_vector_add_loads_as_is(tmp_path, capsys):
    cu = copy_example(tmp_path, "vector_add")
    assert run_cli(["init", str(cu)], capsys)[0] == 0
    spec = load_task(cu)
    assert spec.resolve("default").arg("c").shape == (1 << 24,)
    assert spec.irregular["n"] % 32 != 0


def test_draft_of_conv_has_every_scalar_as_a_symbol(tmp_path):
    text, todo = draft_spec(copy_example(tmp_path, "conv2d_direct"))
    spec = yaml.safe_load(text)
    assert list(spec["sizes"]["presets"]["small"]) == ["N", "C", "H", "W", "K", "R", "S", "P", "Q", "stride", "pad"]
    assert any(line.startswith("sizes.presets") for line in todo)


def test_never_overwrites_without_force(tmp_path, capsys):
    cu = copy_example(tmp_path, "vector_add")
    spec_path = tmp_path / "vector_add.task.yaml"
    spec_path.write_text("mine\n")
    code, _, err = run_cli(["init", str(cu)], capsys)
    assert code != 0 and "already exists" in err and "--force" in err and spec_path.read_text() == "mine\n"
    assert run_cli(["init", str(cu), "--force"], capsys)[0] == 0
    assert spec_path.read_text() != "mine\n"


def test_several_launchers_need_a_choice(tmp_path, capsys):
    cu = tmp_path / "two.cu"
    cu.write_text('extern "C" void first(const float* x, float* y, int n) {}\n'
                  'extern "C" void second(const double* x, double* y, long long n) {}\n')
    code, _, err = run_cli(["init", str(cu)], capsys)
    assert code != 0 and "first, second" in err and "--launcher" in err
    assert run_cli(["init", str(cu), "--launcher", "second"], capsys)[0] == 0
    spec = yaml.safe_load((tmp_path / "two.task.yaml").read_text())
    assert spec["launcher"] == "second" and spec["args"][0]["dtype"] == "f64" and spec["args"][2]["dtype"] == "i64"
    code, _, err = run_cli(["init", str(cu), "--launcher", "third", "--force"], capsys)
    assert code != 0 and "third" in err


def test_no_launcher_is_explained(tmp_path, capsys):
    cu = tmp_path / "bare.cu"
    cu.write_text("__global__ void k(float* x) {}\n")
    code, _, err = run_cli(["init", str(cu)], capsys)
    assert code != 0 and 'extern "C"' in err


def test_integer_inputs_get_a_warning(tmp_path):
    cu = tmp_path / "gather.cu"
    cu.write_text('extern "C" void gather(const int* idx, const float* src, float* dst, int n) {}\n')
    _, todo = draft_spec(cu)
    assert any("idx" in line and "indices" in line for line in todo)


def test_a_stream_parameter_is_named_with_what_to_do(tmp_path, capsys):
    # a launcher written for a framework takes the stream it launches on; the harness owns the stream, so the
    # draft and `check` both say to drop it (not "1.0 is a placeholder" for a cudaStream_t scalar)
    cu = tmp_path / "scale.cu"
    cu.write_text("__global__ void k(const float* x, float* y, int n) {}\n"
                  'extern "C" void scale(const float* x, float* y, int n, cudaStream_t stream) '
                  "{ k<<<(n + 255) / 256, 256, 0, stream>>>(x, y, n); }\n")
    code, out, err = run_cli(["init", str(cu)], capsys)
    assert code == 0, err
    assert "args[3] (stream): a cudaStream_t parameter; drop the stream parameter" in out
    assert "placeholder" not in next(line for line in out.splitlines() if "args[3]" in line)
    code, out, err = run_cli(["check", str(cu)], capsys)
    assert code == 2 and "cannot pass 'cudaStream_t stream' by value" in err and "drop the stream parameter" in err
