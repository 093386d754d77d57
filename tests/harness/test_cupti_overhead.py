"""tools/measure/cupti_overhead.py (issue 16: why CUPTI reads ~3 % above CUDA events): its arguments, the budget
that shares the time among the kernels and stops cleanly, the fallback to process pairs, the verdict from given
figures, and its blocks driven through the harness's real `timing.Sampler` on the host stand-in of the device
(test_timing_slots.py) with a stand-in CUPTI timer. GPU (`gpu` mark): a short run on vector_add."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
import time
from pathlib import Path

import pytest

from skillbase.harness.cupti import KIND_CONCURRENT_KERNEL, CuptiUnavailable, Record, Window
from skillbase.harness.timing import Sampler, slot_sets

REPO = Path(__file__).resolve().parents[2]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module     # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


tool = _load("cupti_overhead", REPO / "tools" / "measure" / "cupti_overhead.py")
# The host stand-in of the device that test_timing_slots.py drives the real time_size with (imported by path).
slots_test = _load("cupti_overhead_slots_stand_in", Path(__file__).with_name("test_timing_slots.py"))
N, TimingDevice, TimingSession, VectorAdd = slots_test.N, slots_test.TimingDevice, slots_test.TimingSession, \
    slots_test.VectorAdd


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def block(mode: str, events_us: float, cupti_us: float | None = None, index: int = 0) -> dict:
    stats = {"median_us": events_us, "q1_us": events_us - 0.1, "q3_us": events_us + 0.1, "iqr_us": 0.2,
             "min_us": events_us - 0.3, "n": 60}
    return {"index": index, "mode": mode, "batch": 1, "at_s": float(index), "events": stats,
            "cupti": None if cupti_us is None else {**stats, "median_us": cupti_us}}


def blocks(before, pairs) -> list[dict]:
    """Blocks as the tool runs them: the 'before' medians, then (on, off) medians, with CUPTI 0.1 us under the
    on-blocks' events."""
    out = [block("before", m) for m in before]
    for on, off in pairs:
        out += [block("on", on, on - 0.1), block("off", off)]
    return [dict(b, index=i, at_s=float(i)) for i, b in enumerate(out)]


# -- arguments -------------------------------------------------------------------------------------------

def test_the_default_kernels_exist_with_their_presets(tmp_path):
    args = tool.parse_args(["--out", str(tmp_path)])
    assert [k.name for k in args.kernel_list] == list(tool.DEFAULT_KERNELS)
    by_name = {k.name: k for k in args.kernel_list}
    assert by_name["vector_add:default"].source == REPO / "examples" / "vector_add" / "vector_add.cu"
    copy = by_name["copy:s24"]
    fidelity = tool._sibling("fidelity")
    assert copy.source.read_text() == fidelity.COPY_CU and copy.preset == "s24", "fidelity.py's ~33 us copy"
    assert (args.cycles, args.samples, args.warmup, args.batch, args.pairs, args.budget_s, args.ncu) == \
        (4, 60, 3, None, 2, 240.0, True)


@pytest.mark.parametrize("argv, message", [
    (["--kernels", "vector_add:huge"], "no size preset 'huge'"),
    (["--kernels", "copy:s99"], "no size preset 's99' (presets: s24, s26)"),
    (["--kernels", "vector_add"], "is not SOURCE:PRESET"),
    (["--kernels", " , "], "--kernels: none given"),
    (["--cycles", "0"], "--cycles must be at least 1"),
    (["--samples", "0"], "--samples must be at least 1"),
    (["--warmup", "-1"], "--warmup must be 0 or more"),
    (["--batch", "0"], "--batch must be at least 1"),
    (["--budget-s", "0"], "--budget-s must be above 0"),
])
def test_bad_arguments_are_one_line_and_exit_2(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exited:
        tool.main(["--out", str(tmp_path), *argv])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err.strip().splitlines()[-1]


def test_the_blocks_alternate_cupti_on_and_off_after_two_without_it():
    assert tool.block_plan(3) == ["before", "before", "on", "off", "on", "off", "on", "off"]
    assert [tool.pair_order(p) for p in range(3)] == [("before", "on"), ("on", "before"), ("before", "on")]


# -- the budget --------------------------------------------------------------------------------------------

def test_the_budget_shares_what_is_left_and_puts_the_experiment_before_ncu():
    clock = Clock()
    budget = tool.Budget(240.0, clock=clock)
    assert budget.worker_s(3, ncu=True) == pytest.approx(80.0 - tool.NCU_S)
    assert budget.worker_s(3, ncu=False) == pytest.approx(80.0)
    assert budget.ncu_fits(kernels_after=2)
    clock.now += 150.0                            # 90 s left for 2 kernels: 45 s each
    assert budget.worker_s(2, ncu=True) == pytest.approx(45.0), "no room for ncu beside the worker: the worker"
    assert not budget.ncu_fits(kernels_after=3)
    clock.now += 60.0                             # 30 s left
    assert budget.worker_s(1, ncu=True) == pytest.approx(30.0) and budget.worker_s(2, ncu=False) is None
    assert budget.ncu_fits(kernels_after=0) and budget.left_s() == pytest.approx(30.0)


def _row(kernel, method="one process", mode="one process", pairs=((61.2, 59.3), (61.1, 59.4))):
    return {"kernel": kernel.name, "method": method, "note": None,
            "runs": [{"mode": mode, "status": "ok", "batch": 1, "stopped": None, "restart_failed": None,
                      "blocks": blocks([59.2, 59.5], pairs)}]}


def test_a_run_stops_cleanly_at_the_budget_and_writes_what_it_measured(tmp_path):
    clock = Clock()
    args = tool.parse_args(["--out", str(tmp_path), "--kernels", "vector_add:default,vector_add:small,copy:s24",
                            "--budget-s", "150"])
    seen = []

    def measure(kernel, args_, seconds, restart_broken):
        seen.append((kernel.name, seconds, restart_broken))
        clock.now += seconds + 10.0           # a worker may overrun its share (nvcc, teardown)
        return _row(kernel)

    def ncu(kernel):
        clock.now += 25.0
        return 59.9

    record = tool.run(args, budget=tool.Budget(150.0, clock=clock), gpu="NVIDIA H200", measure_one=measure,
                      ncu_one=ncu)
    # 150 s for three: 50 s a share, too little to set ncu's 30 s aside, so the worker gets all 50 (and takes 60);
    # ncu still fits after it (65 s left), then 32.5 s for the second (taking 42.5), and no ncu (22.5 s left
    # would starve the third), and 22.5 s cannot hold the third's worker: stopped, saying so.
    assert [(name, broken) for name, _, broken in seen] == [("vector_add:default", False),
                                                            ("vector_add:small", False)]
    assert [s for _, s, _ in seen] == pytest.approx([50.0, 32.5])
    assert not record["complete"]
    assert record["stopped"] == "budget: 22 s left, 1 kernel(s) not measured (from copy:s24)"
    first, second = record["kernels"]
    assert first["ncu_us"] == 59.9 and "ncu_us" not in second and second["ncu_error"].startswith("not run")
    written = json.loads((tmp_path / tool.JSON_NAME).read_text())
    assert written["gpu"] == "NVIDIA H200" and len(written["kernels"]) == 2
    summary = written["kernels"][0]["summary"]
    assert summary["verdict"] == "changes" and summary["ncu_us"] == 59.9
    assert summary["events_off_vs_ncu_pct"] == pytest.approx(100 * (59.35 - 59.9) / 59.9)
    text = (tmp_path / tool.MD_NAME).read_text()
    assert "## vector_add:default (one process)" in text and "Stopped early: budget" in text
    assert "| one process | 3 | on | 60 x 1 | 2.0 | 61.200 | 0.200 | 61.100 | 0.200 |" in text
    assert "ncu gpu__time_duration: 59.900 us" in text and "CUPTI-free events vs ncu -0.92 %" in text


def test_a_kernels_blocks_are_written_before_ncu_runs(tmp_path):
    """ncu runs in a worker of its own that the budget does not bound: a run killed meanwhile (the session
    script's step limit) keeps the kernel's blocks."""
    args = tool.parse_args(["--out", str(tmp_path), "--kernels", "vector_add:small"])
    on_disk = []

    def ncu(kernel):
        path = tmp_path / tool.JSON_NAME
        written = json.loads(path.read_text()) if path.exists() else {"kernels": []}
        on_disk.append([(row["kernel"], len(tool.kernel_blocks(row))) for row in written["kernels"]])
        raise KeyboardInterrupt   # as a kill would end it: nothing after this line runs

    with pytest.raises(KeyboardInterrupt):
        tool.run(args, measure_one=lambda kernel, *rest: _row(kernel), ncu_one=ncu)
    assert on_disk == [[("vector_add:small", 6)]]


def test_once_cupti_does_not_restart_the_later_kernels_go_straight_to_process_pairs(tmp_path):
    args = tool.parse_args(["--out", str(tmp_path), "--kernels", "vector_add:small,copy:s24", "--no-ncu"])
    told = []

    def measure(kernel, args_, seconds, restart_broken):
        told.append(restart_broken)
        return _row(kernel, method="process pairs", mode="pair 1 on")

    record = tool.run(args, measure_one=measure)
    assert told == [False, True] and record["complete"]


def test_a_kernel_whose_cupti_restarts_runs_in_one_process_else_in_pairs_with_the_same_batch(tmp_path):
    args = tool.parse_args(["--out", str(tmp_path), "--kernels", "vector_add:small", "--pairs", "2", "--cycles", "3"])
    [kernel] = args.kernel_list
    jobs = []

    def build(kernel):
        return Path("/lib/libvector_add.so"), {}

    def worker(restart_fails):
        def run_one(job, timeout_s):
            jobs.append(job)
            assert job["deadline_s"] < timeout_s and job["task"].endswith("vector_add.task.yaml")
            failed = "CuptiTimer.start: CUPTI_ERROR_INVALID_OPERATION" if restart_fails and not job["fixed"] else None
            return {"status": "ok", "batch": 4 if job["batch"] is None else job["batch"], "restart_failed": failed,
                    "blocks": [block(m, 5.0) for m in job["blocks"][:3]]}
        return run_one

    row = tool.measure_kernel(kernel, args, 100.0, False, run_one=worker(False), build_one=build)
    assert row["method"] == "one process" and len(jobs) == 1
    assert jobs[0]["blocks"] == tool.block_plan(3) and jobs[0]["samples"] == 60 and not jobs[0]["fixed"]

    jobs.clear()
    row = tool.measure_kernel(kernel, args, 100.0, False, run_one=worker(True), build_one=build)
    assert row["method"] == "process pairs" and "does not restart within a process" in row["note"]
    assert [r["mode"] for r in row["runs"]] == ["one process", "pair 1 before", "pair 1 on", "pair 2 on",
                                                "pair 2 before"]
    assert all(j["fixed"] and j["batch"] == 4 for j in jobs[1:]), "the pairs time the first run's batch"
    assert [set(j["blocks"]) for j in jobs[1:]] == [{"before"}, {"on"}, {"on"}, {"before"}]

    jobs.clear()
    row = tool.measure_kernel(kernel, args, 100.0, True, run_one=worker(True), build_one=build)
    assert [r["mode"] for r in row["runs"]][0] == "pair 1 before" and jobs[0]["batch"] is None


def test_the_exit_status_says_whether_anything_was_measured(tmp_path, monkeypatch):
    monkeypatch.setattr("skillbase.harness.env.gpu_name", lambda: None)
    monkeypatch.setattr(tool, "run", lambda args, gpu=None: {"kernels": [], "complete": False, "stopped": "x",
                                                            "gpu": None, "started": "", "command": "",
                                                            "wall_s": 0.0, "budget_s": 1.0})
    assert tool.main(["--out", str(tmp_path), "--kernels", "vector_add:small"]) == 1
    monkeypatch.setattr(tool, "run", lambda args, gpu=None: {"kernels": [_row(args.kernel_list[0])],
                                                            "complete": True, "stopped": None, "gpu": None,
                                                            "started": "", "command": "", "wall_s": 0.0,
                                                            "budget_s": 1.0})
    assert tool.main(["--out", str(tmp_path), "--kernels", "vector_add:small"]) == 0


# -- the verdict from given figures ------------------------------------------------------------------------

def test_cupti_on_reading_3_percent_above_beyond_the_spread_changes_the_figure():
    # Session 16's figures, in one process: CUPTI on ~61.2 us, without it ~59.3 us.
    v = tool.verdict(blocks([59.2, 59.5], [(61.2, 59.3), (61.0, 59.4), (61.3, 59.2)]))
    assert v["verdict"] == "changes" and v["separated"]
    assert v["effect_us"] == pytest.approx(61.2 - 59.3) and v["effect_pct"] == pytest.approx(100 * 1.9 / 59.3)
    assert v["spread_us"] == pytest.approx(0.3)
    assert v["off_vs_before_us"] == pytest.approx(59.3 - 59.35)
    assert v["cupti_us"] == pytest.approx(61.1) and v["cupti_vs_off_pct"] == pytest.approx(100 * 1.8 / 59.3)
    assert v["line"].startswith("changes: turning CUPTI on changes the events' figure: +1.90 us (+3.20 %)")


def test_cupti_on_within_half_a_percent_is_no_change():
    rng = random.Random(16)
    figures = blocks([59.3 + rng.uniform(-0.1, 0.1) for _ in range(2)],
                     [(59.3 + rng.uniform(-0.1, 0.1), 59.3 + rng.uniform(-0.1, 0.1)) for _ in range(4)])
    v = tool.verdict(figures)
    assert v["verdict"] == "no change" and abs(v["effect_pct"]) < tool.MIN_EFFECT_PCT


def test_an_effect_inside_the_block_to_block_spread_is_unclear():
    v = tool.verdict(blocks([59.0, 60.6], [(61.5, 59.2), (60.0, 61.0)]))   # on 60.0..61.5, off 59.0..61.0
    assert v["verdict"] == "unclear" and not v["separated"] and v["spread_us"] == pytest.approx(2.0)


def test_one_block_a_side_decides_nothing():
    v = tool.verdict(blocks([59.3, 59.4], [(61.2, 59.3)])[:3])              # before, before, on
    assert v["verdict"] == "undecided" and "1 block(s) with CUPTI on" in v["line"]
    assert tool.verdict([])["verdict"] == "undecided"


# -- the blocks through the harness's Sampler on the host stand-in ------------------------------------------

class StandInTimer:
    """A CUPTI timer for the stand-in device: while started, each launch of `SlowedVectorAdd` takes `extra_us`
    longer (the effect in question) and its record carries the launch's length; window 0 owns the hold."""

    def __init__(self, extra_us: float, refuse_restart: bool = False):
        self.extra_us, self.refuse_restart = extra_us, refuse_restart
        self.started, self.starts = False, 0
        self.windows: list[Window] = []
        self.lengths_us: list[float] = []

    def start(self):
        if self.starts and self.refuse_restart:
            raise CuptiUnavailable("cuptiActivityRegisterCallbacks: CUPTI_ERROR_INVALID_OPERATION")
        self.started, self.starts = True, self.starts + 1

    def stop(self):
        self.started = False

    def discard(self):
        self.windows, self.lengths_us = [], []

    def open(self):
        first = 10 * (len(self.windows) + 1)
        self.windows.append(Window(first, first, 1))
        return len(self.windows) - 1

    def close(self):
        pass

    def collect(self):
        records, t = [Record(KIND_CONCURRENT_KERNEL, 7, self.windows[0].first_correlation, 0, 1000, "spin")], 1000
        for w, us in zip(self.windows[1:], self.lengths_us, strict=True):
            records.append(Record(KIND_CONCURRENT_KERNEL, 7, w.first_correlation, t, t + int(us * 1000), "k"))
            t += int(us * 1000)
        found = (records, list(self.windows), 0)
        self.discard()
        return found


class SlowedVectorAdd(VectorAdd):
    def __init__(self, session, log, timer: StandInTimer, us: float = 60.0):
        super().__init__("kernel", session, log, us=us)
        self.timer = timer

    def __call__(self, arguments):
        super().__call__(arguments)
        if self.timer.started:
            self.session.device.clock_us += self.timer.extra_us
            self.timer.lengths_us.append(self.us + self.timer.extra_us)


def stand_in_blocks(timer: StandInTimer, plan: list[str], fixed: bool = False, deadline_s: float = 600.0,
                    saved: Path | None = None):
    device = TimingDevice()
    session = TimingSession(device)
    log = []
    launcher = SlowedVectorAdd(session, log, timer)
    value_sets = session.value_sets("tiny", {"n": N}, 3, 0)
    resolved = session.spec.resolve({"n": N})
    slots = slot_sets(session, value_sets[0], tool.MODES, 2, shared=True)
    sampler = Sampler(session, "tiny", resolved, value_sets, slots)
    out = {"blocks": [], "stopped": None, "restart_failed": None, "cupti_unavailable": None}
    job = {"blocks": plan, "samples": 8, "warmup": 1, "deadline_s": deadline_s, "fixed": fixed,
           "result_path": str(saved) if saved else None}
    tool._blocks(job, sampler, launcher, 1, lambda: timer, out, time.monotonic(), lambda message: None,
                 save=lambda: tool._save(job, {"status": "partial", **out}))
    return out, log


def test_blocks_on_one_set_of_buffers_see_a_kernel_slowed_by_cupti():
    timer = StandInTimer(extra_us=1.8)
    out, log = stand_in_blocks(timer, tool.block_plan(3))
    assert [b["mode"] for b in out["blocks"]] == tool.block_plan(3) and out["stopped"] is None
    assert timer.starts == 3 and not timer.started, "CUPTI started for each 'on' block and stopped after it"
    assert len({launch.pointers for launch in log}) == 1, "every block on the same buffers"
    on = [b for b in out["blocks"] if b["mode"] == "on"]
    assert all(b["events"]["median_us"] == pytest.approx(61.8) and b["cupti"]["median_us"] == pytest.approx(61.8)
               for b in on)
    assert all(b["cupti"] is None and b["events"]["median_us"] == pytest.approx(60.0)
               for b in out["blocks"] if b["mode"] != "on")
    assert all(b["events"]["n"] == 8 and not b["reverify_failures"] for b in out["blocks"])
    v = tool.verdict(out["blocks"])
    assert v["verdict"] == "changes" and v["effect_us"] == pytest.approx(1.8)


def test_blocks_with_a_cupti_that_costs_nothing_read_no_change():
    out, _ = stand_in_blocks(StandInTimer(extra_us=0.0), tool.block_plan(2))
    assert tool.verdict(out["blocks"])["verdict"] == "no change"


def test_a_cupti_that_does_not_start_again_is_said_and_stops_the_blocks():
    out, _ = stand_in_blocks(StandInTimer(extra_us=1.8, refuse_restart=True), tool.block_plan(3))
    assert [b["mode"] for b in out["blocks"]] == ["before", "before", "on", "off"]
    assert out["restart_failed"] == out["stopped"] == \
        "CuptiTimer.start: cuptiActivityRegisterCallbacks: CUPTI_ERROR_INVALID_OPERATION"


def test_in_a_fixed_pair_worker_cupti_stays_on_through_its_blocks():
    timer = StandInTimer(extra_us=1.8)
    out, _ = stand_in_blocks(timer, ["on"] * 3, fixed=True)
    assert timer.starts == 1 and len(out["blocks"]) == 3 and not timer.started


def test_past_its_deadline_a_worker_runs_only_what_a_verdict_needs_and_keeps_it(tmp_path):
    saved = tmp_path / "result.json"
    out, _ = stand_in_blocks(StandInTimer(extra_us=1.8), tool.block_plan(3), deadline_s=-1.0, saved=saved)
    assert [b["mode"] for b in out["blocks"]] == ["before", "before", "on", "off", "on"]
    assert out["stopped"] == "deadline: 3 of 8 blocks not run"
    # Saved after every block: a worker killed at its timeout still hands its blocks back.
    kept = json.loads(saved.read_text())
    assert kept["status"] == "partial" and len(kept["blocks"]) == 5 and tool._read({"result_path": str(saved)}) == kept
    assert tool._read({"result_path": str(tmp_path / "none.json")}) == {"blocks": []}


def test_a_worker_past_its_timeout_is_killed_and_said(tmp_path, monkeypatch):
    # The worker hangs at its interpreter's start (a sitecustomize on its PYTHONPATH), so the timeout always comes
    # first: a worker that failed its job within the timeout once made this test read "error" (CI, session 24).
    (tmp_path / "sitecustomize.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    began = time.monotonic()
    result = tool.run_worker({"blocks": ["before"]}, timeout_s=1.0)
    assert result["status"] == "timeout" and result["blocks"] == [] and time.monotonic() - began < 30


class StandInSession(TimingSession):
    """What `measure` uses of a worker's Session, on the host stand-in: the device's facts, the candidate, close."""

    def __init__(self, timer: StandInTimer, us: float):
        device = TimingDevice()
        device.index, device.uuid, device.info = 0, None, lambda: {"name": "stand-in"}
        super().__init__(device)
        self.log: list = []
        self.candidate = SlowedVectorAdd(self, self.log, timer, us=us)
        self.closed = None

    def close(self, teardown: bool = True) -> None:
        self.closed = teardown


def test_measure_sizes_the_batch_before_cupti_starts_and_times_every_block_on_one_set_of_slots(monkeypatch):
    import contextlib

    timer = StandInTimer(extra_us=0.5)
    made = {}

    def session(job, progress):
        made["session"] = StandInSession(timer, us=5.0)
        return made["session"]

    monkeypatch.setattr("skillbase.harness.session.Session", session)
    monkeypatch.setattr("skillbase.harness.gpu_lock.gpu_lock", lambda *a, **k: contextlib.nullcontext())
    monkeypatch.setattr("skillbase.harness.cupti.build_timer", lambda: Path("/cache/libskillbase_cupti.so"))
    monkeypatch.setattr("skillbase.harness.cupti.CuptiTimer", lambda library: timer)
    job = {"size": "tiny", "sizes": {"n": N}, "blocks": tool.block_plan(2), "samples": 6, "warmup": 1,
           "batch": None, "fixed": False, "deadline_s": 600.0}
    out = tool.measure(job, lambda message: None)
    # 5 us launches: batched to 20 us as the harness batches with CUPTI (4 launches), from events before CUPTI.
    assert out["batch"] == 4 and out["stopped"] is None and out["device"] == {"name": "stand-in"}
    assert [b["mode"] for b in out["blocks"]] == tool.block_plan(2)
    on = [b for b in out["blocks"] if b["mode"] == "on"]
    assert all(b["events"]["median_us"] == pytest.approx(5.5) and b["cupti"]["median_us"] == pytest.approx(5.5)
               for b in on)
    session = made["session"]
    timed = session.log[3:]            # after the three single launches that sized the batch
    assert len({launch.pointers for launch in timed}) == 4, "four slots, the same for every block"
    assert session.closed is True and all(launch.output_poisoned for launch in session.log)


# -- on the GPU -------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.timeout(300)
def test_a_short_run_on_vector_add_measures_every_block_in_one_process(tmp_path):
    code = tool.main(["--out", str(tmp_path), "--kernels", "vector_add:small", "--cycles", "2", "--samples", "15",
                      "--budget-s", "150"])
    record = json.loads((tmp_path / tool.JSON_NAME).read_text())
    [row] = record["kernels"]
    assert code == 0, row
    run = row["runs"][0]
    assert run["status"] == "ok" and run["cupti_unavailable"] is None, run
    modes = [b["mode"] for b in tool.kernel_blocks(row)]
    assert modes[:4] == ["before", "before", "on", "off"], (modes, run.get("stopped"), row.get("note"))
    assert all(b["cupti"] for b in tool.kernel_blocks(row) if b["mode"] == "on")
    assert row["summary"]["verdict"] in ("changes", "no change", "unclear")
    assert row.get("ncu_us") or row.get("ncu_error")
