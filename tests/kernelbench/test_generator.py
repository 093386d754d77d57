"""The generator step (`optimize --from-reference`) without a GPU: the versioned prompt names the
launcher the spec expects, the coder's answer is judged (compile-only here) and repaired by the
debugger over a real HTTP OpenAI-compatible server, and the kernel is written only once it passes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from llm_server import ScriptedLLM, Step

from skillbase.errors import InputError
from skillbase.kernelbench.importer import import_problems
from skillbase.run.session import generate_from_reference
from skillbase.run.types import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
KERNELS = FIXTURES / "kernels"


def fenced(path: Path) -> str:
    return f"Here it is.\n```cuda\n{path.read_text()}```\nOne thread per element."


@pytest.fixture()
def relu_task(tmp_path):
    report = import_problems(FIXTURES / "level1" / "2_ReLU.py", tmp_path)
    return report.problems[0].task_dir / "model.cu"


def test_the_prompt_names_the_launcher_every_argument_and_the_model(relu_task):
    from skillbase.kernelbench.generator import generator_prompt

    prompt = generator_prompt(relu_task)
    assert prompt.template.name == "generator.v1"
    text = prompt.text
    assert 'extern "C" void kb_forward(const float* x, float* out, int batch_size, int dim)' in text
    assert "- `x`: f32 [batch_size, dim], an input of forward()" in text
    assert "- `out`: f32 [batch_size, dim], the model's output" in text
    assert "return torch.relu(x)" in text and "skillbase adapter" not in text
    assert "batch_size = 15, dim = 999" in text            # the irregular size is announced


def test_openai_generator_repairs_a_build_failure_then_writes_the_kernel(relu_task, monkeypatch):
    steps = [Step(fenced(KERNELS / "relu_broken.cu")), Step(fenced(KERNELS / "relu.cu"))]
    with ScriptedLLM(steps) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        outcome = generate_from_reference(relu_task, Settings(agent="openai", model="m", repairs=2), gpu=False,
                                          progress=lambda line: None)
        requests = server.requests
    assert [t["status"] for t in outcome.tries] == ["build-failed", "unverified"]
    assert outcome.written and relu_task.read_text() == (KERNELS / "relu.cu").read_text()
    first, repair = (r["messages"][-1]["content"] for r in requests)
    assert "Write the FIRST CUDA version" in first
    assert "undeclared_size" in repair and "repairing a kernel that failed" in repair


def test_a_generator_that_never_passes_writes_nothing(relu_task, monkeypatch):
    steps = [Step(fenced(KERNELS / "relu_broken.cu")), Step("no code, sorry")]
    with ScriptedLLM(steps) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        with pytest.raises(InputError, match="the generator's 2 tries all failed; the last: no-code"):
            generate_from_reference(relu_task, Settings(agent="openai", model="m", repairs=1), gpu=False,
                                    progress=lambda line: None)
    assert not relu_task.exists()


def test_external_writes_the_prompt_beside_the_task(relu_task):
    outcome = generate_from_reference(relu_task, Settings(agent="external"), gpu=False)
    assert not outcome.written and not relu_task.exists()
    assert outcome.prompt_path == relu_task.with_name("model.generator.prompt.md")
    assert "kb_forward" in outcome.prompt_path.read_text()


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "skillbase", *args], capture_output=True, text=True)


def test_cli_refuses_no_coder_and_an_existing_kernel_in_one_line(relu_task, tmp_path):
    done = _cli("optimize", str(relu_task), "--from-reference", "--agent", "none", "--no-gpu",
                "--store", str(tmp_path / "store"))
    assert done.returncode != 0 and done.stderr.splitlines()[0] == (
        "error: --from-reference needs a coder to write the first kernel; --agent none has none")
    relu_task.write_text((KERNELS / "relu.cu").read_text())
    done = _cli("optimize", str(relu_task), "--from-reference", "--agent", "external", "--no-gpu",
                "--store", str(tmp_path / "store"))
    assert done.returncode != 0 and "exists; --from-reference writes the first version" in done.stderr
    assert relu_task.read_text() == (KERNELS / "relu.cu").read_text()
