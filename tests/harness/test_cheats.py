"""Planted cheats (tests/cheats/): the harness must reject each one, for the right reason.

Each `.cu` in tests/cheats/<task>/ cheats in exactly one way against the bundled tasks
(examples/vector_add, examples/naive_sgemm). CPU tests: what the static check already refuses.
GPU tests (`-m gpu`): the dynamic defence behind each VERIFY.md row, with the static check turned
off so the runtime defence itself is exercised; the reason text must name the defence.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHEATS = REPO / "tests" / "cheats"
VECTOR_ADD = REPO / "examples" / "vector_add" / "vector_add.cu"
SGEMM = REPO / "examples" / "naive_sgemm" / "naive_sgemm.cu"
ALIGN4 = REPO / "tests" / "fixtures" / "align4" / "vector_add.cu"   # vector_add whose spec says align: 4

# cheat -> (task, needs timing, expected status, reason pattern). The VERIFY.md row is in each file's header.
DYNAMIC = {
    "writes_nothing": (VECTOR_ADD, False, "incorrect", r"not written"),
    "stale_output": (VECTOR_ADD, False, "incorrect", r"outside tolerance"),
    "mutate_inputs": (VECTOR_ADD, False, "incorrect", r"modified input 'b'"),
    "side_stream": (VECTOR_ADD, False, "incorrect", r"outside the launch stream"),
    "cache_calls": (VECTOR_ADD, True, "incorrect", r"re-verification after timing"),
    "cache_pointer": (VECTOR_ADD, True, "incorrect", r"not written|re-verification after timing"),
    "hardcoded_size": (VECTOR_ADD, False, "incorrect", r"at irregular .*not written"),
    "uninit_smem": (VECTOR_ADD, False, "incorrect", r"NaN/Inf"),
    "returns_nan": (VECTOR_ADD, False, "incorrect", r"NaN/Inf"),
    "race_blocks": (VECTOR_ADD, False, "incorrect", r"non-deterministic"),
    "persist_l2": (VECTOR_ADD, False, "incorrect", r"device state changed.*persisting_l2_cache_size"),
    "alloc_sync": (VECTOR_ADD, False, "incorrect", r"launcher synchronises"),
    "leak_alloc": (VECTOR_ADD, False, "incorrect", r"launcher allocates device memory"),
    "profiler_detect": (VECTOR_ADD, False, "incorrect", r"outside tolerance"),
    "bf16_math": (SGEMM, False, "incorrect", r"precision downgrade"),
    "skip_work_memo": (SGEMM, True, "quarantined", r"faster than the roofline floor"),
    "illegal_address": (VECTOR_ADD, False, "crashed", r"illegal memory access"),
    "misaligned_float4": (ALIGN4, False, "incorrect", r"only 4-byte aligned"),
}

# cheat -> static rules that must fire (error severity) on the source alone.
STATIC = {
    "cublas": {"library-cublas"},
    "cudnn_conv": {"library-cudnn"},
    "embeds_python": {"dynamic-loading", "embedded-python"},
    "side_stream": {"stream-or-thread"},
    "alloc_sync": {"launcher-memory", "launcher-sync"},
    "leak_alloc": {"launcher-memory"},
    "persist_l2": {"l2-persistence"},
    "profiler_detect": {"env-probe"},
    "cache_calls": {"host-static-state"},
    "cache_pointer": {"host-static-state"},
    "stale_output": {"host-static-state"},
}


def _cheat(name: str) -> Path:
    found = list(CHEATS.glob(f"*/{name}.cu"))
    assert len(found) == 1, f"tests/cheats/*/{name}.cu"
    return found[0]


def test_at_least_fourteen_planted_cheats():
    cheats = {p.stem for p in CHEATS.glob("*/*.cu")} - {"hang", "illegal_address"}
    assert len(cheats) >= 14, sorted(cheats)
    # every cheat is covered by a dynamic or a static test
    assert cheats <= set(DYNAMIC) | set(STATIC), sorted(cheats - set(DYNAMIC) - set(STATIC))


@pytest.mark.parametrize("name", sorted(STATIC))
def test_static_check_refuses(name):
    from skillbase.harness.static_check import check_source, errors_only

    rules = {v.rule for v in errors_only(check_source(_cheat(name)))}
    assert STATIC[name] <= rules, f"{name}: expected {STATIC[name]}, got {rules}"


@pytest.mark.parametrize("task", [VECTOR_ADD, SGEMM])
def test_honest_baselines_pass_the_static_check(task):
    from skillbase.harness.static_check import check_source, errors_only

    assert errors_only(check_source(task)) == []


def test_cheat_sources_keep_their_launcher():
    """A cheat that does not match the task's signature would be rejected for the wrong reason."""
    from skillbase.cuda.launchers import launchers

    for path in CHEATS.glob("*/*.cu"):
        expected = "sgemm" if path.parent.name == "sgemm" else "vector_add"
        assert expected in launchers(path), path


# -------------------------------------------------------------------------------------------- GPU

def _evaluate(task: Path, candidate: Path, timed: bool, static: bool = False, timeout_s: float = 300.0):
    from skillbase.harness.runtime import Options, evaluate

    options = Options(static=static, time=timed, preset="default" if timed else None, timeout_s=timeout_s,
                      time_plan={"target_s": 0.2, "min_samples": 10, "max_samples": 60})
    return evaluate(task, candidate=candidate, baseline=task if timed else None, options=options)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(DYNAMIC))
def test_dynamic_defence_rejects(name, monkeypatch):
    task, timed, status, pattern = DYNAMIC[name]
    if name == "profiler_detect":
        # The parent runs "under a profiler"; the worker must still be a plain process.
        monkeypatch.setenv("CUDA_INJECTION64_PATH", "/nonexistent/libinjection.so")
    result = _evaluate(task, _cheat(name), timed)
    assert result.status == status, f"{name}: {result.status}: {result.reason}"
    assert re.search(pattern, result.reason), f"{name}: reason {result.reason!r} does not match {pattern!r}"


def test_library_fallback_is_rejected_statically():
    # The static check runs before the GPU is needed, so this holds on any machine.
    result = _evaluate(SGEMM, _cheat("cublas"), timed=False, static=True)
    assert result.status == "rejected-static" and "cublas" in result.reason, result.reason


@pytest.mark.gpu
def test_hang_is_killed_and_diagnosed():
    result = _evaluate(VECTOR_ADD, _cheat("hang"), timed=False, timeout_s=60)
    assert result.status == "timeout" and "hang" in result.reason, result.reason


@pytest.mark.gpu
@pytest.mark.parametrize("task", [VECTOR_ADD, SGEMM])
def test_honest_baseline_passes_every_check(task):
    from skillbase.harness.runtime import Options, evaluate

    result = evaluate(task, options=Options(time_plan={"target_s": 0.2, "min_samples": 10, "max_samples": 60}))
    assert result.status == "ok", result.reason
    assert result.correct is True
    assert all(p.ok for p in result.probes), [p for p in result.probes if not p.ok]
    assert any(p.name == "launch-stream-order" and p.conclusive for p in result.probes)
    for t in result.timings:
        k = t.kernels["candidate"]
        assert k.suspicious is None and not k.reverify_failures, (t.size, k.suspicious, k.reverify_failures)
        assert k.stats.median_us > 0 and k.stats.n >= 10


@pytest.mark.gpu
def test_a_copy_of_the_baseline_is_not_a_win(tmp_path):
    """Noise mistaken for a win: the same kernel against itself must not come out 'faster'."""
    copy = tmp_path / "vector_add.cu"
    copy.write_text(VECTOR_ADD.read_text())
    result = _evaluate(VECTOR_ADD, copy, timed=True, static=True)
    assert result.status == "ok", result.reason
    assert all(t.verdict != "faster" for t in result.timings), [(t.size, t.speedup, t.spread) for t in result.timings]
