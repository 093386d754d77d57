"""`bench optimize-report`: per-run figures and the per-category / overall / engine on-off summaries,
computed from what the store recorded (runs written here through the store's own API, with random
timings) and from the bench's vendor results, checked against sums computed independently."""

from __future__ import annotations

import html
import json
import math
import random

import jsonschema
from click.testing import CliRunner

from skillbase.bench.report import save_results
from skillbase.bench.results import SizeResult, floor_us
from skillbase.bench.suite import bench_dir, discover
from skillbase.cli import cli
from skillbase.documents import schema_path
from skillbase.harness.phases import GPU_WAIT, MEMORY_WAIT
from skillbase.run import store as store_module
from skillbase.run.batch import judging_s, longest_judging_s
from skillbase.run.batch_report import batch_report
from skillbase.run.store import RunStore
from skillbase.run.types import RunStatus
from skillbase.task import load_task

OPS = {"relu": "elementwise", "gelu": "elementwise", "matrix_mul": "dense", "softmax": "llm"}   # op.yaml


def new_batch(store: RunStore, engine: bool, dtype: str = "fp32") -> int:
    return store.create_batch({"settings": {"agent": "external", "engine": engine}, "dtype": dtype,
                               "preset": "l", "members": []})


def record_run(store: RunStore, batch: int, op: str, dtype: str, baseline: float, tried: float, best: float,
               gpu: str = "NVIDIA H200") -> None:
    """A finished run as `bench optimize` leaves it: round 0's candidate (timed `tried`, a repair before it)
    accepted when faster than the baseline, rejected otherwise; the coder's tokens per attempt."""
    run_id = store.create_run(str(bench_dir() / "ops" / op / f"{dtype}.cu"), f"{op}-{dtype}",
                              {"gpu": gpu, "settings": {"rounds": 1}})
    store.add_batch_run(batch, run_id, op, dtype)
    accepted = tried < baseline
    with store.transaction() as tx:
        tx.start_round(run_id, 0, "k0")
        tx.add_decision(run_id, 0, "mem.vectorize", {}, [], "trace", "because")
        first = tx.add_attempt(run_id, 0, 0, "mem.vectorize", {}, "k0", "k1")
        tx.finish_attempt(first, "build-failed", reason="nvcc")
        tx.add_llm_call(run_id, first, "coder", "m", "external", "coder.v1", None, None, 1000, 200, 5.0, None)
        second = tx.add_attempt(run_id, 0, 1, "mem.vectorize", {}, "k0", "k2")
        tx.finish_attempt(second, "accepted" if accepted else "slower", runtime_us=tried, baseline_us=baseline,
                          speedup=baseline / tried)
        tx.add_llm_call(run_id, second, "debugger", "m", "external", "debugger.v1", None, None, 700, 100, 3.0,
                        None)
        tx.finish_round(run_id, 0, "accepted" if accepted else "rejected")
    store.update_run(run_id, status=RunStatus.FINISHED, baseline_us=baseline, best_us=best,
                     stop_reason="ran 1 rounds")


def record_batch(store: RunStore, engine: bool, speedups: dict[str, float], rng: random.Random,
                 dtype: str = "fp32") -> int:
    """A finished batch: one run per operator, its best kernel the candidate when faster, else the baseline."""
    batch = new_batch(store, engine, dtype)
    for op, speedup in speedups.items():
        baseline = rng.uniform(500, 5000)       # above any floor at l (matrix_mul fp32: 64 us) times 6x
        tried = baseline / speedup              # the round's candidate
        record_run(store, batch, op, dtype, baseline, tried, tried if speedup > 1.0 else baseline)
    return batch


def test_the_report_summarises_what_the_store_recorded(tmp_path, monkeypatch):
    rng = random.Random()
    on = {op: rng.choice([rng.uniform(1.05, 6.0), rng.uniform(0.5, 0.99)]) for op in OPS}
    on["gelu"] = 1.0    # nothing accepted: the baseline stays the best kernel
    off = {op: rng.uniform(1.01, 3.0) for op in ("relu", "matrix_mul")}
    store = RunStore.open(tmp_path / "store")
    record_batch(store, True, on, rng)
    record_batch(store, False, off, rng)
    vendor = rng.uniform(1.5, 4.0)
    save_results("NVIDIA H200", [SizeResult("matrix_mul", "fp32", "vendor_fp32", "l", "verified", 1e9, 1e7,
                                            runtime_us=100.0, baseline_us=100.0 * vendor)],
                 {"git": "abc"}, tmp_path / "results")

    report = batch_report(tmp_path / "store", ["batch_1", "batch_2"], tmp_path / "results")
    data = report.to_json()
    jsonschema.Draft202012Validator(json.loads(schema_path("bench-optimize-report").read_text())).validate(data)
    runs = {(r["operator"], r["engine"]): r for r in data["runs"]}
    for op, speedup in on.items():
        got = runs[(op, True)]
        expected = speedup if speedup > 1.0 else 1.0
        assert math.isclose(got["speedup"], expected, rel_tol=1e-9)
        assert got["category"] == OPS[op] and got["rounds"] == 1 and got["repairs"] == 1
        assert got["rejected"] == ({"build-failed": 1} if speedup > 1.0 else {"build-failed": 1, "slower": 1})
        assert got["accepted_skills"] == (["mem.vectorize"] if speedup > 1.0 else [])
        assert (got["prompt_tokens"], got["reply_tokens"]) == (1700, 300)
        assert (got["verified_attempts"], got["judged_attempts"]) == (1, 2)
        assert got["ended"] == {"category": "rounds", "reason": "ran 1 rounds"}
    mm = runs[("matrix_mul", True)]
    assert math.isclose(mm["vendor_speedup"], vendor) and math.isclose(mm["vs_vendor"], mm["speedup"] / vendor)
    assert 0 < mm["roofline_pct"] < 100 or mm["roofline_pct"] is None
    for got in data["runs"]:          # at the floor, the kernel would run floor = best * pct / 100
        if got["roofline_pct"] is not None:
            floor = got["best_us"] * got["roofline_pct"] / 100
            assert math.isclose(got["floor_speedup"], got["baseline_us"] / floor, rel_tol=1e-9)
            assert got["floor_speedup"] > got["speedup"]
        else:
            assert got["floor_speedup"] is None

    finals = [max(s, 1.0) for s in on.values()]
    overall_on = report.summary([r for r in report.runs if r.engine])
    assert math.isclose(overall_on["geomean_speedup"], math.prod(finals) ** (1 / len(finals)))
    assert overall_on["fast_1"] == sum(s > 1.0 for s in finals) / len(finals)
    assert overall_on["fast_1_5"] == sum(s > 1.5 for s in finals) / len(finals)
    assert overall_on["verified_attempt_rate"] == 0.5
    assert overall_on["at_or_above_vendor"] == (1.0 if mm["speedup"] >= vendor else 0.0)
    # the vendor's own speedup over the naive baseline, beside ours on the same (one) operator
    assert math.isclose(overall_on["geomean_vendor_speedup"], vendor)
    assert math.isclose(overall_on["geomean_speedup_vendor_covered"], mm["speedup"])
    bounded = [r for r in report.runs if r.engine and r.floor_speedup is not None]
    assert overall_on["with_floor"] == len(bounded) > 0
    assert math.isclose(overall_on["geomean_floor_speedup"],
                        math.prod(r.floor_speedup for r in bounded) ** (1 / len(bounded)))
    assert math.isclose(overall_on["geomean_speedup_with_floor"],
                        math.prod(r.speedup for r in bounded) ** (1 / len(bounded)))
    elementwise = data["by_category"]["elementwise"]
    assert elementwise["runs"] == 3 and elementwise["prompt_tokens"] == 3 * 1700   # relu on and off, gelu
    assert elementwise["ended"] == {"rounds": 3} and data["overall"]["ended"] == {"rounds": len(on) + len(off)}

    engine = data["engine"]
    assert engine["operators"] == 2
    assert math.isclose(engine["engine_off"]["geomean_speedup"], math.sqrt(off["relu"] * off["matrix_mul"]))
    assert {row["operator"] for row in engine["per_operator"]} == {"relu", "matrix_mul"}

    markdown = report.to_markdown()
    assert "## Engine on vs off (2 operators measured both ways)" in markdown
    assert f"{on['gelu']:.2f}x" in markdown and "| CUDAMaster | MSKernelBench dot | 46.80x |" in markdown
    assert "<h2>Per category</h2>" in report.to_html()

    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["bench", "optimize-report", "batch_1", "--store", str(tmp_path / "store"),
                                      "--results", str(tmp_path / "results"), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["overall"]["runs"] == len(on)
    assert json.loads((out / "report.json").read_text()) == json.loads(result.output)
    assert (out / "report.md").read_text().startswith("# bench optimize: batch_1 (engine on, fp32, external)")


def _geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _groups(markdown: str) -> list[str]:
    """The first column of the Markdown's "Per category" table, in order."""
    section = markdown.split("## Per category\n")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [row.split(" | ")[0].removeprefix("| ") for row in rows[1:]]      # rows[0]: the header


def test_two_dtypes_are_summarised_apart(tmp_path):
    rng = random.Random()
    ops = [*OPS, "dot_product"]
    speedups = {(dtype, engine): {op: rng.choice([rng.uniform(1.05, 6.0), rng.uniform(0.5, 0.99)]) for op in ops}
                for dtype, engine in (("fp32", True), ("fp32", False), ("bf16", True))}
    store = RunStore.open(tmp_path / "store")
    for (dtype, engine), drawn in speedups.items():
        record_batch(store, engine, drawn, rng, dtype)
    report = batch_report(tmp_path / "store", results_root=tmp_path / "no-results")
    data = report.to_json()
    jsonschema.Draft202012Validator(json.loads(schema_path("bench-optimize-report").read_text())).validate(data)

    final = {dtype: [max(s, 1.0) for (d, _), drawn in speedups.items() if d == dtype for s in drawn.values()]
             for dtype in ("fp32", "bf16")}
    assert list(data["by_dtype"]) == ["fp32", "bf16"]
    for dtype, values in final.items():
        got = data["by_dtype"][dtype]
        assert got["runs"] == got["timed"] == len(values)
        assert math.isclose(got["geomean_speedup"], _geomean(values))
        assert got["fast_1"] == sum(v > 1.0 for v in values) / len(values)
        for category in set(OPS.values()) | {"reduction"}:
            mine = [max(s, 1.0) for (d, _), drawn in speedups.items() if d == dtype
                    for op, s in drawn.items() if (OPS.get(op) or "reduction") == category]
            assert math.isclose(data["by_dtype_category"][dtype][category]["geomean_speedup"], _geomean(mine))
    # the keys that were there keep their meaning: every dtype pooled
    assert math.isclose(data["overall"]["geomean_speedup"], _geomean(final["fp32"] + final["bf16"]))
    assert data["by_category"]["elementwise"]["runs"] == 2 * 3          # relu and gelu in three batches
    assert data["engine"]["operators"] == len(ops)                      # fp32 on and off only

    markdown = report.to_markdown()
    assert _groups(markdown) == [f"{c} {d}" for c in ("dense", "elementwise", "llm", "reduction")
                                 for d in ("fp32", "bf16")] + ["overall fp32", "overall bf16", "overall"]
    for dtype, values in final.items():
        assert f"| overall {dtype} | {len(values)} ({len(values)}) | {_geomean(values):.2f}x |" in markdown


def test_the_published_figures_stand_beside_the_best_fp32_engine_on_run(tmp_path):
    rng = random.Random()
    # the best FP32 engine-on run, another below it, and runs the table must not take: BF16 (later, faster)
    # and engine off (faster still)
    best, other = rng.uniform(2.1, 3.0), rng.uniform(1.2, 2.0)
    store = RunStore.open(tmp_path / "store")
    for dtype, engine, speedup in rng.sample([("fp32", True, best), ("fp32", True, other)], 2) + [
            ("fp32", False, rng.uniform(4.1, 5.0)), ("bf16", True, rng.uniform(3.1, 4.0))]:
        record_batch(store, engine, {"dot_product": speedup, "relu": rng.uniform(1.05, 2.0)}, rng, dtype)
    report = batch_report(tmp_path / "store", results_root=tmp_path / "no-results")
    assert report.runs[-1].dtype == "bf16" and report.runs[-1].operator == "relu"
    markdown = report.to_markdown()
    assert f"| CUDAMaster | MSKernelBench dot | 46.80x | — | {best:.2f}x |" in markdown
    assert "| CUDAMaster | MSKernelBench SpMV (cuSPARSE 2.23x) | 2.96x | 2.23x | — |" in markdown

    # no FP32 engine-on run of the operator: nothing beside the figure
    store = RunStore.open(tmp_path / "bf16")
    record_batch(store, True, {"dot_product": rng.uniform(1.05, 2.0)}, rng, "bf16")
    assert "| CUDAMaster | MSKernelBench dot | 46.80x | — | — |" in \
        batch_report(tmp_path / "bf16", results_root=tmp_path / "no-results").to_markdown()


def test_a_single_dtype_report_keeps_its_tables(tmp_path):
    rng = random.Random()
    dtype = rng.choice(["fp32", "bf16"])
    store = RunStore.open(tmp_path / "store")
    record_batch(store, True, {op: rng.uniform(1.05, 3.0) for op in OPS}, rng, dtype)
    report = batch_report(tmp_path / "store", results_root=tmp_path / "no-results")
    data = report.to_json()
    assert _groups(report.to_markdown()) == ["dense", "elementwise", "llm", "overall"]
    assert data["by_dtype"] == {dtype: data["overall"]}
    assert data["by_dtype_category"] == {dtype: data["by_category"]}


# What each way of ending leaves in the store, as the loop (`Loop.run`, `decision_of`) and the session write
# it: the rounds finished (their last outcome), the last round's decision step, the status and stop reason.
NEAR = ("the engine has no proposal left and the kernel runs at 91 % of its roofline floor (at most 1.10x left; "
        "--stop-at-floor 0.75): stopped")
ENDINGS = {
    # operator: (--rounds, rounds finished, the last outcome, the last decision's stop, status, stop reason)
    "relu": (3, 3, "rejected", None, RunStatus.FINISHED, "ran 3 rounds"),
    "gelu": (12, 4, "no-candidate", NEAR, RunStatus.FINISHED, NEAR),
    "softmax": (12, 2, "no-candidate", None, RunStatus.FINISHED,
                "no candidate left (every proposed skill was tried or cannot be applied in this mode)"),
    "matrix_mul": (12, 5, "accepted", None, RunStatus.FINISHED, "time budget of 600 s spent"),
    "swiglu": (3, 1, "accepted", None, RunStatus.PAUSED, "waiting for a candidate for mem.vectorize"),
    "layer_norm": (3, 0, None, None, RunStatus.FAILED, "stopped by an error; `skillbase resume` retries"),
    "sigmoid": (3, 1, "rejected", None, RunStatus.INTERRUPTED, "interrupted (Ctrl-C); `skillbase resume` continues"),
}
EXPECTED = {"relu": "rounds", "gelu": "near-floor", "softmax": "no-candidate", "matrix_mul": "budget",
            "swiglu": "waiting", "layer_norm": "error", "sigmoid": "interrupted"}


def test_the_report_says_why_each_run_ended(tmp_path):
    store = RunStore.open(tmp_path / "store")
    batch = store.create_batch({"settings": {"agent": "external", "engine": True}, "dtype": "fp32", "members": []})
    for op, (planned, done, last, stop, status, reason) in ENDINGS.items():
        run_id = store.create_run(str(bench_dir() / "ops" / op / "fp32.cu"), f"{op}-fp32",
                                  {"settings": {"rounds": planned, "agent": "external"}})
        store.add_batch_run(batch, run_id, op, "fp32")
        with store.transaction() as tx:
            for idx in range(done):
                tx.start_round(run_id, idx, f"k{idx}")
                tx.finish_step(run_id, f"r{idx}/decision", {"skill": None, "stop": stop if idx == done - 1 else None})
                tx.finish_round(run_id, idx, last if idx == done - 1 else "rejected")
        store.update_run(run_id, status=status, stop_reason=reason, baseline_us=100.0, best_us=100.0)

    report = batch_report(tmp_path / "store", results_root=tmp_path / "results")
    data = report.to_json()
    jsonschema.Draft202012Validator(json.loads(schema_path("bench-optimize-report").read_text())).validate(data)
    assert {r["operator"]: r["ended"] for r in data["runs"]} == {
        op: {"category": EXPECTED[op], "reason": ENDINGS[op][5]} for op in ENDINGS}
    # one of each, in the order the categories are declared, on every report of these runs
    assert list(data["overall"]["ended"].items()) == [(c, 1) for c in
                                                      ("rounds", "near-floor", "no-candidate", "budget", "waiting",
                                                       "error", "interrupted")]
    assert data["by_category"]["llm"]["ended"] == {"no-candidate": 1, "error": 1}     # softmax, layer_norm
    assert report.to_json() == data

    markdown = report.to_markdown()
    assert "| judge min | ended |" in markdown
    assert "| gelu | fp32 | scored | on |" in markdown and "| 0.0 | near-floor |" in markdown
    assert NEAR not in markdown        # the Markdown's table says the category; the reason is in the JSON and HTML
    assert ("rounds 1, near-floor 1, no-candidate 1, budget 1, waiting 1, error 1, interrupted 1" in markdown)
    page = report.to_html()
    assert "<h2>Why each run ended</h2>" in page and html.escape(NEAR) in page


class _Clock:
    """The store's `time` module, moved on by hand: attempts whose wall spans the test chose."""

    def __init__(self):
        self.now = 1.8e9

    def time(self) -> float:
        return self.now


def test_judge_minutes_leave_out_the_waits_for_the_gpu(tmp_path, monkeypatch):
    """Two runs of two judged attempts each (and a try with no code, never judged): one run's judgements
    recorded their phases, waits for the GPU's lock and for its memory among them, the other's recorded none
    (as attempts stored before phases were): judge min is each span less its waits, or the whole span."""
    rng = random.Random()
    clock = _Clock()
    monkeypatch.setattr(store_module, "time", clock)
    store = RunStore.open(tmp_path / "store")
    batch = store.create_batch({"settings": {"agent": "external", "engine": True}, "dtype": "fp32", "members": []})
    expected, spans = {}, {}
    for op, recorded in (("relu", True), ("gelu", False)):
        run_id = store.create_run(str(bench_dir() / "ops" / op / "fp32.cu"), f"{op}-fp32",
                                  {"settings": {"rounds": 1}})
        store.add_batch_run(batch, run_id, op, "fp32")
        with store.transaction() as tx:
            tx.start_round(run_id, 0, "k0")
        expected[op], spans[op] = 0.0, 0.0
        for idx, status in enumerate(("incorrect", "slower", "no-code")):
            span = rng.uniform(20.0, 900.0)
            waited = rng.uniform(0.1, 0.9) * span
            rest = span - waited          # the rest of the span, spread over the phases a judgement records
            cut = sorted(rng.uniform(0, rest) for _ in range(3))
            locked = rng.uniform(0, waited)     # for the GPU's lock; the rest for room in its memory
            phases = {"compile": cut[0], GPU_WAIT: locked, MEMORY_WAIT: waited - locked, "inputs": cut[1] - cut[0],
                      "verify": cut[2] - cut[1], "timing": rest - cut[2]}
            with store.transaction() as tx:
                attempt = tx.add_attempt(run_id, 0, idx, "mem.vectorize", {}, "k0", f"k{idx + 1}")
            clock.now += span
            with store.transaction() as tx:
                tx.finish_attempt(attempt, status, reason="r", phases=phases if recorded else None)
            if status != "no-code":
                expected[op] += (span - waited) if recorded else span
                spans[op] += span
        with store.transaction() as tx:
            tx.finish_round(run_id, 0, "rejected")
        store.update_run(run_id, status=RunStatus.FINISHED, baseline_us=100.0, best_us=100.0,
                         stop_reason="ran 1 rounds")
    recorded = {a["status"]: store.attempt_phases(a) for a in store.attempts(1)}
    assert recorded["slower"][GPU_WAIT] > 0 and all(store.attempt_phases(a) is None for a in store.attempts(2))

    report = batch_report(tmp_path / "store", results_root=tmp_path / "no-results")
    data = report.to_json()
    jsonschema.Draft202012Validator(json.loads(schema_path("bench-optimize-report").read_text())).validate(data)
    got = {r["operator"]: r["judge_minutes"] for r in data["runs"]}
    assert math.isclose(got["relu"], expected["relu"] / 60, abs_tol=1e-3) and got["relu"] < spans["relu"] / 60
    assert math.isclose(got["gelu"], spans["gelu"] / 60, abs_tol=1e-3)       # no phases: the whole span
    assert math.isclose(data["overall"]["judge_minutes"], (expected["relu"] + spans["gelu"]) / 60, abs_tol=0.01)
    assert f"| {expected['relu'] / 60:.1f} | rounds |" in report.to_markdown()
    # The same judging times bound a run's next judgement under a time limit (TimeBudget): its longest one.
    store = RunStore.open(tmp_path / "store")
    longest = max(judging_s(store, a) for a in store.attempts(1) if a["status"] != "no-code")
    assert longest_judging_s(store, 1) == round(longest, 1)
    store.close()


# -- the share of the possible gain and the headroom bins ---------------------------------------------

def floor_at_l(op: str, dtype: str = "fp32") -> float:
    """The bench's roofline floor of `op` at preset l on the H200: what a drawn headroom scales."""
    flops, nbytes = load_task(bench_dir() / "ops" / op / f"{dtype}.cu", check_launcher=False).work("l")
    return floor_us(SizeResult(op, dtype, "optimized", "l", "verified", float(flops), float(nbytes)), "nvidia-h200")


def expected_bin(floor_speedup: float) -> str:
    return "< 2x" if floor_speedup < 2 else ("2-4x" if floor_speedup < 4 else ">= 4x")


def draw_run(rng: random.Random, kind: str) -> tuple[float | None, float]:
    """(speedup at the floor, None: no floor; the run's speedup) of one kind of run."""
    floor_speedup = rng.choice([rng.uniform(1.05, 1.95), rng.uniform(2.05, 3.95), rng.uniform(4.05, 30.0),
                                rng.uniform(1.9, 2.1), rng.uniform(3.9, 4.1)])     # and near the bins' edges
    if kind == "slower":
        return floor_speedup, rng.uniform(0.3, 0.95)
    if kind == "past the floor":         # verified a little past the bench's floor (not quarantined): capped
        return floor_speedup, floor_speedup * rng.uniform(1.01, 1.15)
    if kind == "no floor":
        return None, rng.uniform(1.05, 3.0)
    if kind == "baseline past the floor":
        return rng.uniform(0.6, 0.98), rng.choice([1.0, rng.uniform(1.05, 1.5)])
    return floor_speedup, rng.choice([1.0, rng.uniform(1.01, floor_speedup * 0.99), rng.uniform(0.5, 0.99)])


def test_the_share_of_possible_gain_and_the_runs_by_headroom(tmp_path):
    rng = random.Random()
    categories = {op.name: op.category for op in discover()}
    kinds = ["slower", "past the floor", "no floor", "baseline past the floor"]
    store = RunStore.open(tmp_path / "store")
    drawn = {}                                  # (operator, engine) -> (floor_speedup, speedup)
    for engine in (True, False):
        batch = new_batch(store, engine)
        ops = rng.sample(sorted(categories), 14)
        for op, kind in zip(ops, rng.sample(kinds, len(kinds)) + ["random"] * (len(ops) - len(kinds)), strict=True):
            floor_speedup, speedup = drawn[op, engine] = draw_run(rng, kind)
            baseline = (floor_speedup or rng.uniform(1.0, 10.0)) * floor_at_l(op)
            record_run(store, batch, op, "fp32", baseline, baseline / speedup, baseline / speedup,
                       gpu="NVIDIA H200" if floor_speedup else "NVIDIA Unknown GPU")   # no peaks: no floor
    report = batch_report(tmp_path / "store", results_root=tmp_path / "no-results")
    data = report.to_json()
    jsonschema.Draft202012Validator(json.loads(schema_path("bench-optimize-report").read_text())).validate(data)

    # each run's share: the x with floor_speedup ** x == speedup, 1 past the floor, None without headroom
    shares = {}
    for got in data["runs"]:
        floor_speedup, speedup = drawn[got["operator"], got["engine"]]
        assert math.isclose(got["speedup"], speedup, rel_tol=1e-9)
        share = shares[got["operator"], got["engine"]] = got["gain_share"]
        if floor_speedup is None:
            assert got["floor_speedup"] is None and share is None
            continue
        assert math.isclose(got["floor_speedup"], floor_speedup, rel_tol=1e-9)
        if floor_speedup <= 1:
            assert share is None
        elif speedup >= floor_speedup:
            assert share == 1.0
        else:
            assert math.isclose(floor_speedup ** share, speedup, rel_tol=1e-9)
            assert (share < 0) == (speedup < 1) and (share == 0) == (speedup == 1.0) and share < 1
    assert any(s is not None and s < 0 for s in shares.values())                      # the slower runs

    def expect(keys) -> tuple[int, float | None]:
        mine = [shares[k] for k in keys if shares[k] is not None]
        return len(mine), (sum(mine) / len(mine) if mine else None)

    def check(summary: dict, keys) -> None:
        count, mean = expect(keys)
        assert summary["with_gain_share"] == count
        assert summary["mean_gain_share"] is None if mean is None else math.isclose(summary["mean_gain_share"], mean)

    assert data["overall"]["runs"] == len(drawn) and data["overall"]["with_gain_share"] < len(drawn)
    check(data["overall"], drawn)
    check(data["by_dtype"]["fp32"], drawn)
    for category, summary in data["by_category"].items():
        check(summary, [k for k in drawn if categories[k[0]] == category])
    common = [op for op, engine in drawn if engine and (op, False) in drawn]
    if common:
        check(data["engine"]["engine_on"], [(op, True) for op in common])
        check(data["engine"]["engine_off"], [(op, False) for op in common])

    # the bins: every one, per engine setting, the runs with a floor only
    assert list(data["by_headroom"]) == ["< 2x", "2-4x", ">= 4x"]
    markdown = report.to_markdown()
    for label, settings in data["by_headroom"].items():
        assert list(settings) == ["engine_on", "engine_off"]
        for key, engine in (("engine_on", True), ("engine_off", False)):
            keys = [k for k, (floor_speedup, _) in drawn.items()
                    if k[1] == engine and floor_speedup is not None and expected_bin(floor_speedup) == label]
            got = settings[key]
            assert got["runs"] == len(keys)
            check(got, keys)
            speedups = [drawn[k][1] for k in keys]
            if keys:
                assert math.isclose(got["geomean_speedup"], _geomean(speedups))
            count, mean = expect(keys)
            share = f"{100 * mean:.0f} %" if mean is not None else "—"
            geomean = f"{_geomean(speedups):.2f}x" if keys else "—"
            assert f"| {label} engine {'on' if engine else 'off'} | {len(keys)} | {geomean} | {share} ({count}) |" \
                in markdown

    # one engine setting: a row per bin, no engine in its name
    alone = batch_report(tmp_path / "store", ["batch_1"], results_root=tmp_path / "no-results")
    assert all(list(settings) == ["engine_on"] for settings in alone.to_json()["by_headroom"].values())
    section = alone.to_markdown().split("## By headroom")[1].split("\n## ")[0]
    assert [line.split(" | ")[0] for line in section.splitlines() if line.startswith("| ")][1:] == \
        ["| < 2x", "| 2-4x", "| >= 4x"]
    slower = next(k for k, s in shares.items() if k[1] and s is not None and s < 0)
    row = next(line for line in alone.to_markdown().splitlines() if line.startswith(f"| {slower[0]} | fp32 |"))
    assert f"| {100 * shares[slower]:.0f} % |" in row and shares[slower] < 0
