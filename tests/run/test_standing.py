"""The coder prompts' "Where the kernel stands" section (issue 16): the task's timed sizes, the run's measured
times and the roofline floor, the same in the engine-on and engine-off prompts, unknown where unmeasured,
and equal to a hand computation; the v1 templates still render the prompts a recorded run holds."""

from __future__ import annotations

import json
import math
import random
import re
import sqlite3
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from skillbase.agents.appliers import ExternalApplier, PromptBuilder, render_standing
from skillbase.agents.coder import FREE_CHOICE, UNKNOWN_STANDING, coder_prompt, free_coder_prompt
from skillbase.agents.prompts import load_prompt
from skillbase.run.session import start_run
from skillbase.run.standing import standing_of
from skillbase.run.types import ApplyRequest, Candidate, EvidenceRow, LoopState, Paused, Settings, Tried
from skillbase.task import load_task
from skillbase.task.expr import parse_expr

REPO = Path(__file__).resolve().parents[2]
RECORDED = Path(__file__).parent / "fixtures" / "prompts"
SOFTMAX = REPO / "bench" / "ops" / "softmax" / "fp32.cu"          # work: 5*R*C flops, 2*4*R*C bytes
MATMUL_FP32 = REPO / "bench" / "ops" / "matrix_mul" / "fp32.cu"   # work: 2*M*N*K flops, 4*(MK+KN+MN) bytes
MATMUL_BF16 = REPO / "bench" / "ops" / "matrix_mul" / "bf16.cu"   # work: 2*M*N*K flops, 2*(MK+KN+MN) bytes
# The H200's datasheet peaks, written out here so the test computes the floor by hand.
H200_DRAM, H200_FP32, H200_BF16_TENSOR = 4.8e12, 67e12, 989e12
KERNEL = ('__global__ void k() {}\n'
          'extern "C" void softmax(const float* x, float* y, int R, int C) { k<<<1, 1>>>(); }\n')
NUMBER = r"([0-9]+(?:\.[0-9]+)?)"
GAIN = rf"A kernel at {NUMBER} % of its floor, as the current best is, can gain at most {NUMBER}x\."


def _seed() -> int:
    return random.SystemRandom().randrange(2**32)


def _with_sizes(kernel: Path, presets: dict[str, dict[str, int]]):
    return replace(load_task(kernel), presets=presets, scored=tuple(presets))


def _section(prompt_text: str) -> str:
    match = re.search(r"## Where the kernel stands\n(.*?)\n\n## ", prompt_text, re.DOTALL)
    assert match, prompt_text
    return match.group(1)


def _figures_of(prompt_text: str) -> str:
    """The section's figures: what `render_standing` rendered, after the template's own two lines."""
    return _section(prompt_text).split("peaks):\n", 1)[1]


def _figure(pattern: str, text: str) -> tuple[float, ...]:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in\n{text}"
    return tuple(float(g) if re.fullmatch(NUMBER, g) else g for g in match.groups())


def _prompts(standing) -> PromptBuilder:
    return PromptBuilder("softmax", "fp32", lambda skill_id: None, lambda skill_id, source, candidate: "", standing)


def _engine_request() -> ApplyRequest:
    candidate = Candidate(skill="mem.vectorize", score=0.8, time_saved_fraction=0.3, rules=("mem.vectorize.fires",),
                          because="DRAM throughput at 41 %", focus=(EvidenceRow("dram_pct", 41, 60),))
    return ApplyRequest(skill="mem.vectorize", params={}, attempt=0, key="r1/v0/a0", candidate=candidate)


def _free_request() -> ApplyRequest:
    return ApplyRequest(skill=FREE_CHOICE, params={}, attempt=0, key="r1/v0/a0")


# -- one section, both prompts ----------------------------------------------------------------------

def test_the_engine_on_and_off_prompts_carry_byte_identical_standing():
    rng = random.Random(seed := _seed())
    sizes = {"R": rng.randint(1, 8192), "C": rng.randint(1, 65536)}
    standing = standing_of(_with_sizes(SOFTMAX, {"big": sizes}), "softmax", "big", "NVIDIA H200")
    state = LoopState(best_source=KERNEL, baseline_us=rng.uniform(50, 5000), tried=[Tried("mem.coalesce", "accepted")])
    state.best_us = state.baseline_us / rng.uniform(1, 30)
    builder = _prompts(standing)
    engine_on, engine_off = builder.build(_engine_request(), state), builder.build(_free_request(), state)

    assert (engine_on.template.name, engine_off.template.name) == ("coder.v3", "coder_free.v3")
    assert _section(engine_on.text) == _section(engine_off.text), f"seed {seed}"
    assert f"R = {sizes['R']}, C = {sizes['C']}" in _section(engine_on.text)
    # the engine's choice is in one prompt only, and never in the standing
    assert "mem.vectorize" in engine_on.text and "mem.vectorize" not in engine_off.text
    assert "mem.vectorize" not in _section(engine_on.text) and "41 %" not in _section(engine_on.text)


def test_the_pending_prompt_of_an_external_run_holds_the_standing_and_its_answer_records_the_template(tmp_path):
    standing = standing_of(_with_sizes(SOFTMAX, {"l": {"R": 1024, "C": 4096}}), "softmax", "l", "NVIDIA H200")
    applier = ExternalApplier(_prompts(standing), tmp_path / "run_1")
    state = LoopState(best_source=KERNEL, baseline_us=120.0, best_us=40.0)
    with pytest.raises(Paused) as paused:
        applier.produce(_free_request(), state)
    written = paused.value.prompt.read_text()
    assert _figures_of(written) == render_standing(standing(state))
    assert json.loads((tmp_path / "run_1" / "waiting.json").read_text())["template"] == "coder_free.v3"
    answered = applier.produce(replace(_free_request(), external_source=KERNEL), state)
    assert answered.llm_call.prompt_version == "coder_free.v3" and answered.llm_call.prompt == written

    # A prompt a run wrote before the waiting file named its template was v1: its answer says so.
    waiting = tmp_path / "run_1" / "waiting.json"
    waiting.write_text(json.dumps({k: v for k, v in json.loads(waiting.read_text()).items() if k != "template"}))
    answered = applier.produce(replace(_free_request(), external_source=KERNEL), state)
    assert answered.llm_call.prompt_version == "coder_free.v1"


def test_a_run_started_here_writes_the_standing_into_its_first_prompt(tmp_path):
    """The session's wiring: a compile-only external run of a bench task, engine off."""
    summary = start_run(SOFTMAX, Settings(rounds=1, agent="external", engine=False), store_path=tmp_path / "store",
                        preset="l", gpu=False, progress=lambda message: None)
    assert summary["status"] == "paused", summary
    prompt = next((tmp_path / "store" / "runs").glob("run_*/r0-v0-a0.prompt.md")).read_text()
    section = _section(prompt)
    assert "Timed at preset l: R = 1024, C = 4096." in section
    assert "33.6 MB moved, 21.0 MFLOP" in section
    assert "Time at that size: unknown (this run has not timed a kernel)." in section
    assert "Roofline floor at that size: unknown (no GPU: this run is compile-only)." in section


# -- v1 still renders what recorded runs hold -------------------------------------------------------

def _fields(template_text: str, rendered: str) -> dict[str, str]:
    """The values a template was rendered with, read back from the rendered text."""
    pattern, seen, last = "", set(), 0
    for match in re.finditer(r"\{([a-z_]+)\}", template_text):
        name = match.group(1)
        pattern += re.escape(template_text[last:match.start()]) + (f"(?P={name})" if name in seen
                                                                   else f"(?P<{name}>.*?)")
        seen.add(name)
        last = match.end()
    found = re.fullmatch(pattern + re.escape(template_text[last:]), rendered, re.DOTALL)
    assert found, "the recorded prompt no longer matches its v1 template"
    return found.groupdict()


@pytest.mark.parametrize("role, recorded", [("coder", "coder.v1.gelu.r1.prompt.md"),
                                            ("coder_free", "coder_free.v1.gelu.r1.prompt.md")])
def test_v1_renders_a_recorded_prompt_byte_for_byte(role, recorded):
    text = (RECORDED / recorded).read_text()
    system, user = text.split("\n\n", 1)
    values = _fields(load_prompt(role, 1).text, user)
    render = coder_prompt if role == "coder" else free_coder_prompt
    prompt = render(**values, standing="- the figures v1 has no place for", version=1)
    assert prompt.template.name == f"{role}.v1" and prompt.text == text
    assert "Where the kernel stands" not in prompt.text


# -- unknown is unknown -----------------------------------------------------------------------------

def test_unknown_figures_render_as_unknown_never_zero():
    spec = _with_sizes(SOFTMAX, {"l": {"R": 1024, "C": 4096}})
    untimed = LoopState(best_source=KERNEL)
    for gpu, why, shown in ((None, "no GPU: this run is compile-only", "- GPU: none (a compile-only run)."),
                            ("NVIDIA A100-SXM4-80GB", "no datasheet peaks known", "- GPU: NVIDIA A100-SXM4-80GB.")):
        text = render_standing(standing_of(spec, "softmax", "l", gpu)(untimed))
        assert shown in text
        assert "Time at that size: unknown (this run has not timed a kernel)." in text
        assert f"Roofline floor at that size: unknown ({why}" in text
        assert "Share of the floor and the gain left: unknown" in text
        assert not re.search(r"(?<![0-9.])0(\.0+)? ?(µs|%|x)", text), text

    no_work = replace(spec, work_flops=parse_expr(0), work_bytes=parse_expr(0))
    text = render_standing(standing_of(no_work, "softmax", "l", "NVIDIA H200")(LoopState(KERNEL, (), 10.0, 20.0)))
    assert "no bytes in the work model, no FLOPs in the work model" in text
    assert "Roofline floor at that size: unknown (the task's work model gives no bytes or FLOPs at l)" in text
    assert "the baseline 20.0 µs, the current best 10.0 µs: 2.00x so far" in text

    bytes_only = replace(spec, work_flops=parse_expr(0))
    text = render_standing(standing_of(bytes_only, "softmax", "l", "NVIDIA H200")(LoopState(KERNEL, (), 10.0, 20.0)))
    assert "33.6 MB moved, no FLOPs in the work model" in text
    assert "6.99 µs, bound by memory (memory 6.99 µs, compute: none in the work model; " in text

    prompt = _prompts(None).build(_free_request(), untimed)
    assert _figures_of(prompt.text) == UNKNOWN_STANDING


# -- the figures, by hand ---------------------------------------------------------------------------

def _check_single(text: str, *, nbytes: float, flops: float, floor_by: dict[str, float], base: float, best: float,
                  seed: int) -> None:
    side = max(floor_by, key=floor_by.get)
    floor = floor_by[side]
    close = {"rel": 6e-3}
    moved, byte_prefix, work, flop_prefix = _figure(rf"{NUMBER} ([kMGT]?)B moved, {NUMBER} ([kMGT]?)FLOP", text)
    scale = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    assert moved * scale[byte_prefix] == pytest.approx(nbytes, **close), f"seed {seed}"
    assert work * scale[flop_prefix] == pytest.approx(flops, **close), f"seed {seed}"
    shown_base, shown_best, shown_speedup = _figure(
        rf"the baseline {NUMBER} µs, the current best {NUMBER} µs: {NUMBER}x so far", text)
    assert (shown_base, shown_best) == (pytest.approx(base, **close), pytest.approx(best, **close)), f"seed {seed}"
    assert shown_speedup == pytest.approx(base / best, abs=0.006), f"seed {seed}"
    shown_floor, shown_side, memory, compute = _figure(
        rf"Roofline floor at that size: {NUMBER} µs, bound by (\w+) \(memory {NUMBER} µs, compute {NUMBER} µs", text)
    assert shown_side == side, f"seed {seed}"
    assert shown_floor == pytest.approx(floor, **close), f"seed {seed}"
    assert memory == pytest.approx(floor_by["memory"], **close), f"seed {seed}"
    assert compute == pytest.approx(floor_by["compute"], **close), f"seed {seed}"
    pct, gain = _figure(GAIN, text)
    assert pct == pytest.approx(100 * floor / best, **close), f"seed {seed}"
    assert gain == pytest.approx(best / floor, **close), f"seed {seed}"


def test_a_memory_bound_size_matches_a_hand_computation():
    rng = random.Random(seed := _seed())
    R, C = rng.randint(1, 8192), rng.randint(1, 65536)
    nbytes, flops = 8.0 * R * C, 5.0 * R * C
    floor_by = {"memory": nbytes / H200_DRAM * 1e6, "compute": flops / H200_FP32 * 1e6}
    best = floor_by["memory"] * rng.uniform(1.05, 80)
    base = best * rng.uniform(1, 40)
    spec = _with_sizes(SOFTMAX, {"r": {"R": R, "C": C}})
    text = render_standing(standing_of(spec, "softmax", "r", "NVIDIA H200")(LoopState(KERNEL, (), best, base)))
    assert f"Timed at preset r: R = {R}, C = {C}." in text and "Data type: f32." in text
    assert "- GPU: NVIDIA H200 (132 SMs)." in text
    _check_single(text, nbytes=nbytes, flops=flops, floor_by=floor_by, base=base, best=best, seed=seed)


@pytest.mark.parametrize("kernel, itemsize, peak", [(MATMUL_FP32, 4, H200_FP32), (MATMUL_BF16, 2, H200_BF16_TENSOR)])
def test_a_gemm_matches_a_hand_computation(kernel, itemsize, peak):
    rng = random.Random(seed := _seed())
    M, N, K = (rng.randint(16, 8192) for _ in range(3))
    nbytes, flops = float(itemsize * (M * K + K * N + M * N)), 2.0 * M * N * K
    floor_by = {"memory": nbytes / H200_DRAM * 1e6, "compute": flops / peak * 1e6}
    best = max(floor_by.values()) * rng.uniform(1.05, 80)
    base = best * rng.uniform(1, 40)
    spec = _with_sizes(kernel, {"r": {"M": M, "N": N, "K": K}})
    text = render_standing(standing_of(spec, "matrix_mul", "r", "NVIDIA H200")(LoopState(KERNEL, (), best, base)))
    _check_single(text, nbytes=nbytes, flops=flops, floor_by=floor_by, base=base, best=best, seed=seed)


def test_several_timed_sizes_hold_their_geometric_mean_against_the_geometric_mean_of_the_floors():
    rng = random.Random(seed := _seed())
    presets = {f"p{i}": {"R": rng.randint(1, 8192), "C": rng.randint(1, 65536)} for i in range(rng.randint(2, 5))}
    floors = [8.0 * s["R"] * s["C"] / H200_DRAM * 1e6 for s in presets.values()]
    floor = math.exp(sum(math.log(f) for f in floors) / len(floors))
    best = floor * rng.uniform(1.05, 80)
    spec = _with_sizes(SOFTMAX, presets)
    text = render_standing(standing_of(spec, "softmax", None, "NVIDIA H200")(LoopState(KERNEL, (), best, best * 2)))
    assert f"Timed at {len(presets)} presets; each time below is the geometric mean over them:" in text
    for (name, sizes), size_floor in zip(presets.items(), floors, strict=True):
        shown, side = _figure(rf"  - {name}: R = {sizes['R']}, C = {sizes['C']}: .*; floor {NUMBER} µs, bound by (\w+)",
                              text)
        assert (shown, side) == (pytest.approx(size_floor, rel=6e-3), "memory"), f"seed {seed}"
    (shown_floor,) = _figure(rf"geometric mean of their floors; .*\): {NUMBER} µs", text)
    assert shown_floor == pytest.approx(floor, rel=6e-3), f"seed {seed}"
    pct, gain = _figure(GAIN, text)
    assert (pct, gain) == (pytest.approx(100 * floor / best, rel=6e-3), pytest.approx(best / floor, rel=6e-3))


def test_a_kernel_past_its_floor_is_promised_no_gain():
    spec = _with_sizes(SOFTMAX, {"l": {"R": 1024, "C": 4096}})          # floor 6.99 µs on the H200
    text = render_standing(standing_of(spec, "softmax", "l", "NVIDIA H200")(LoopState(KERNEL, (), 5.0, 50.0)))
    assert "The current best is at 140 % of its floor: at or past it" in text
    assert "can gain at most" not in text


# -- the same floor as bench optimize-report --------------------------------------------------------

LLM_RUN = REPO / "results" / "nvidia-h200" / "optimize" / "llm-run-2026-12-02"


def test_the_share_of_the_floor_is_bench_optimize_reports_for_every_recorded_run(tmp_path):
    """The LLM bench run of 2026-12-02: its report's % roofline per run, from its store's own times."""
    with tarfile.open(LLM_RUN / "store.tar.gz") as archive:
        database = archive.extractfile("skillbase-store/runs.sqlite3").read()
    (tmp_path / "runs.sqlite3").write_bytes(database)
    runs = sqlite3.connect(tmp_path / "runs.sqlite3")
    report = json.loads((LLM_RUN / "report.json").read_text())
    compared = 0
    for entry in (r for r in report["runs"] if r["roofline_pct"] is not None):
        task_path, manifest, best_us, baseline_us = runs.execute(
            "SELECT task_path, manifest_json, best_us, baseline_us FROM runs WHERE id = ?",
            (int(entry["run"].removeprefix("run_")),)).fetchone()
        kernel = REPO / task_path[task_path.index("bench/ops/"):]      # the store names its machine's checkout
        manifest = json.loads(manifest)
        standing = standing_of(load_task(kernel, check_launcher=False), kernel.parent.name, manifest["preset"],
                               manifest["gpu"])(LoopState(KERNEL, (), best_us, baseline_us))
        assert standing.pct_of_floor == pytest.approx(entry["roofline_pct"], rel=1e-9), entry["run"]
        compared += 1
    assert compared >= 20
