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
from skillbase.run.store import RunStore
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
    assert prompt.template.name == "generator.v2"
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


def test_external_generator_prompt_is_pending_and_resume_all_judges_repairs_and_continues(relu_task, tmp_path):
    from skillbase.run.batch import resume_all
    from skillbase.run.pending import list_pending
    from skillbase.run.session import start_generator_run

    store = tmp_path / "store"
    summary = start_generator_run(relu_task, Settings(agent="external", rounds=1, repairs=1), store_path=store,
                                  gpu=False)
    assert summary["status"] == "paused" and not relu_task.exists()
    (first,) = list_pending(store)
    assert (first.kind, first.key, first.skill) == ("generator", "g/a0", "generator")
    assert "Write the FIRST CUDA version" in first.prompt_path.read_text()
    first.candidate_path.parent.mkdir(parents=True, exist_ok=True)
    first.candidate_path.write_text(fenced(KERNELS / "relu_broken.cu"))
    outcome = resume_all(store)
    assert [m.action for m in outcome.members] == ["judged"]
    (repair,) = list_pending(store)
    assert (repair.kind, repair.key) == ("debugger", "g/a1") and "undeclared_size" in repair.prompt_path.read_text()
    assert not relu_task.exists()
    repair.candidate_path.write_text((KERNELS / "relu.cu").read_text())
    (member,) = resume_all(store).members
    assert member.reason.startswith("g/a1: unverified: compiled (no GPU: not timed); then ")
    assert relu_task.read_text() == (KERNELS / "relu.cu").read_text()       # written once it passed
    runs = RunStore.open(store)
    try:                                                                     # and the loop ran from it
        run = runs.get_run(first.run_id)
        assert run.manifest["task_digest"] and run.manifest["from_reference"]
        assert runs.step_result(run.id, "baseline")["status"] == "unverified"
        assert set(runs.judged_sources(run.id)) >= {"g/a0", "g/a1"}
    finally:
        runs.close()


def test_a_gone_generator_or_debugger_prompt_is_written_again_by_resume_as_it_was(relu_task, tmp_path):
    """A store rebuilt without its prompts (they quote the problem): `resume run_N` writes the waiting
    generator or debugger prompt again, the same text, from the task and the store; a second `resume`
    without a candidate then names the prompt's path."""
    from skillbase.run.batch import resume_all
    from skillbase.run.pending import list_pending
    from skillbase.run.session import resume_run, start_generator_run

    store = tmp_path / "store"
    start_generator_run(relu_task, Settings(agent="external", rounds=1, repairs=2), store_path=store, gpu=False)
    (first,) = list_pending(store)
    written = first.prompt_path.read_text()
    first.prompt_path.unlink()
    assert list_pending(store)[0].prompt_path is None
    resume_run(first.run, store_path=store)
    assert first.prompt_path.read_text() == written

    first.candidate_path.parent.mkdir(parents=True, exist_ok=True)
    first.candidate_path.write_text(fenced(KERNELS / "relu_broken.cu"))
    resume_all(store)
    (repair,) = list_pending(store)
    written = repair.prompt_path.read_text()
    assert "undeclared_size" in written
    repair.prompt_path.unlink()
    resume_run(repair.run, store_path=store)
    (again,) = list_pending(store)
    assert (again.kind, again.key) == ("debugger", "g/a1") and again.prompt_path.read_text() == written
    with pytest.raises(InputError, match=f"waits for its first kernel: the debugger prompt is in "
                                         f"{again.prompt_path}"):
        resume_run(repair.run, store_path=store)


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
