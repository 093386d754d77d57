"""The batch external mode, end to end on the CPU (issue 16): `bench optimize` starts one run per
operator as a batch, `pending` lists each run's prompt, a coder writes candidates, `resume --all`
judges the ones present (nvcc really builds them; --no-gpu: nothing is timed, so nothing is
accepted) and leaves the others waiting with their reason; a kill -9 mid-batch loses nothing;
the store travels in one file.

The runs use `--no-engine` (the ablation): on a machine without a GPU the engine has no profile
and proposes nothing for these operators, while the coder's free choice always gives a prompt.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from skillbase.agents.tokens import count_tokens
from skillbase.bench.suite import bench_dir
from skillbase.cli import cli
from skillbase.documents import schema_path
from skillbase.errors import EnvironmentProblem, InputError, SkillbaseError
from skillbase.harness.jobs import LocalExecutor
from skillbase.run.batch import read_candidate, resume_all, start_batch
from skillbase.run.pending import list_pending
from skillbase.run.store import RunStore
from skillbase.run.types import RunStatus, Settings

pytestmark = pytest.mark.nvcc

OPS = ("relu", "gelu", "elu", "sigmoid")


@pytest.fixture
def suite(tmp_path, monkeypatch):
    """A copy of four operators of the shipped suite (a test may move it, as a trip to another machine does)."""
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "suite_here"
    for op in OPS:
        shutil.copytree(bench_dir() / "ops" / op, root / "ops" / op)
    monkeypatch.setenv("SKILLBASE_BENCH_DIR", str(root))
    return root


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def valid(kind: str, document: dict) -> dict:
    """The document, checked against its published schema (skillbase/schemas/<kind>.schema.json)."""
    jsonschema.Draft202012Validator(json.loads(schema_path(kind).read_text())).validate(document)
    return document


def start(store: Path, *extra: str) -> dict:
    return valid("batch", json.loads(invoke(
        "bench", "optimize", "--agent", "external", "--no-engine", "--no-gpu", "--ops", ",".join(OPS), "--rounds", "2",
        "--repairs", "1", "--store", str(store), "--json", *extra)))


def refused(*args: str) -> str:
    """The one-line error (and hint) a command stops with (`skillbase.cli.main` prints it)."""
    result = CliRunner().invoke(cli, list(args))
    assert isinstance(result.exception, SkillbaseError), result.output
    return f"{result.exception.message} (hint: {result.exception.hint})"


def pending(store: Path) -> dict[str, dict]:
    document = valid("pending", json.loads(invoke("pending", "--store", str(store), "--json")))
    return {p["operator"]: p for p in document["prompts"]}


def a_candidate(op: str, note: str) -> str:
    """The operator's own baseline with a comment: a real kernel that builds and defines the launcher."""
    return f"// candidate: {note}\n" + (bench_dir() / "ops" / op / "fp32.cu").read_text()


def test_a_batch_flows_from_prompts_to_candidates_to_the_next_prompts(suite, tmp_path):
    store_path = tmp_path / "store"
    started = start(store_path)
    assert started["batch"] == "batch_1" and started["counts"] == {"started": 4}
    waiting = pending(store_path)
    assert sorted(waiting) == sorted(OPS)
    for entry in waiting.values():
        assert (entry["kind"], entry["round"], entry["key"], entry["skill"]) == ("coder", 0, "r0/v0/a0", "free-choice")
        assert "Choose the single most valuable optimization yourself" in Path(entry["prompt"]).read_text()
        assert "## Where the kernel stands" in Path(entry["prompt"]).read_text()
        assert entry["candidate"].endswith(f"{entry['run']}.cu") and entry["waiting"] is None

    # One good candidate (with its meta file), one empty, one missing, one not CUDA.
    good = Path(waiting["relu"]["candidate"])     # a reply as a chat model writes it: the file in a fence
    good.write_text(f"Grid-stride loop:\n\n```cuda\n{a_candidate('relu', 'grid-stride')}```\nDone.\n")
    Path(waiting["relu"]["meta"]).write_text(json.dumps({"model": "claude helper of the lead", "wall_s": 12.5,
                                                         "reply_tokens": 321}))
    Path(waiting["gelu"]["candidate"]).write_text("\n  \n")
    Path(waiting["sigmoid"]["candidate"]).write_text("I would vectorise the loads with float4.\n")
    done = valid("batch", json.loads(invoke("resume", "--all", "--store", str(store_path), "--json")))
    assert done["counts"] == {"judged": 1, "waiting": 3}
    judged = next(m for m in done["members"] if m["action"] == "judged")
    assert judged["run"] == waiting["relu"]["run"] and "r0/v0/a0: unverified" in judged["reason"]

    after = pending(store_path)
    assert (after["relu"]["key"], after["relu"]["kind"]) == ("r1/v0/a0", "coder")
    # The judged file is still there: `pending` says so at once, as the next `resume --all` would (its fence
    # taken off first, as the judged source was).
    assert after["relu"]["waiting"] == f"for another prompt: {good.name} was already judged for r0/v0/a0; " \
                                       "r1/v0/a0 needs a new candidate"
    assert after["gelu"]["key"] == "r0/v0/a0" and after["gelu"]["waiting"].startswith("empty:")
    assert after["elu"]["waiting"].startswith("missing:")
    assert after["sigmoid"]["waiting"].startswith("not CUDA:")

    # The coder protocol: the prompt counted by us, the rest from the meta file.
    store = RunStore.open(store_path)
    run = store.get_run(waiting["relu"]["run"])
    [call] = store.llm_calls(run.id)
    shown = Path(waiting["relu"]["prompt"]).read_text()
    assert (call["role"], call["model"], call["endpoint_name"], call["prompt_version"]) == \
        ("coder", "claude helper of the lead", "external", "coder_free.v3")
    assert call["prompt_tokens"] == count_tokens(shown) > 100
    assert (call["completion_tokens"], call["duration_s"]) == (321, 12.5)
    assert store.artifacts.get_text(call["prompt"]) == shown
    assert [a["status"] for a in store.attempts(run.id)] == ["unverified"]

    # Next trip: relu's file is the one already judged (stale); gelu gets a kernel that does not
    # build, so its run waits for a debugger's repair prompt, which flows the same way.
    Path(waiting["gelu"]["candidate"]).write_text(a_candidate("gelu", "broken") + "\nint does_not_build = ;\n")
    again = json.loads(invoke("resume", "--all", "--store", str(store_path), "--json"))
    assert again["counts"] == {"judged": 1, "waiting": 3}
    last = pending(store_path)
    assert last["relu"]["waiting"].startswith("for another prompt:") and last["relu"]["key"] == "r1/v0/a0"
    assert (last["gelu"]["kind"], last["gelu"]["key"], last["gelu"]["round"]) == ("debugger", "r0/v0/a1", 0)
    repair = Path(last["gelu"]["prompt"]).read_text()
    assert "repairing a kernel that failed the harness" in repair and "build-failed" in repair
    Path(last["gelu"]["candidate"]).write_text(a_candidate("gelu", "repaired"))
    fixed = json.loads(invoke("resume", "--all", "--batch", "batch_1", "--store", str(store_path), "--json"))
    assert "r0/v0/a1: unverified" in next(m["reason"] for m in fixed["members"] if m["action"] == "judged")
    assert pending(store_path)["gelu"]["key"] == "r1/v0/a0"
    text = invoke("pending", "--store", str(store_path))
    assert "run_2 (gelu fp32, batch_1): coder round 1" in text and "4 waiting" in text


def test_a_batch_killed_mid_resume_loses_nothing_and_judges_nothing_twice(suite, tmp_path):
    store_path = tmp_path / "store"
    start(store_path)
    waiting = pending(store_path)
    for op in OPS:
        Path(waiting[op]["candidate"]).write_text(a_candidate(op, "for the kill test"))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    process = subprocess.Popen([sys.executable, "-m", "skillbase", "resume", "--all", "--store", str(store_path)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = store_path / "runs.sqlite3"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:   # kill once the first candidate is recorded, before its verdict
            with sqlite3.connect(db) as con:
                keys = {k for (k,) in con.execute("SELECT key FROM steps WHERE key LIKE 'r0/v0/a0/%'")}
            if "r0/v0/a0/candidate" in keys:
                break
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()
    with sqlite3.connect(db) as con:
        verdicts = con.execute("SELECT count(*) FROM steps WHERE key = 'r0/v0/a0/verdict'").fetchone()[0]
    assert verdicts < len(OPS), "the kill came after the whole batch was judged"

    # As if the store had been packed there and unpacked on another machine: the runs the killed
    # process held belong to a host that is not this one; they are taken over all the same.
    with sqlite3.connect(db) as con:
        con.execute("UPDATE events SET payload_json = replace(payload_json, ?, ?) WHERE kind = 'owner'",
                    (f'"host": {json.dumps(socket.gethostname())}', '"host": "the-gpu-machine"'))
        moved = con.execute("SELECT count(*) FROM events WHERE payload_json LIKE '%the-gpu-machine%'").fetchone()[0]
    assert moved > 0
    outcome = resume_all(store_path)
    assert {m.action for m in outcome.members} <= {"judged", "continued"}
    store = RunStore.open(store_path)
    for entry in waiting.values():
        run = store.get_run(entry["run"])
        attempts = store.attempts(run.id, 0)
        assert [a["status"] for a in attempts] == ["unverified"], entry["operator"]   # judged exactly once
        assert len(store.llm_calls(run.id)) == 1
    assert {p.key for p in list_pending(store_path)} == {"r1/v0/a0"}


def test_bench_optimize_killed_before_every_run_started_is_completed_by_resume_all(suite, tmp_path):
    store_path = tmp_path / "store"
    start_batch(Settings(rounds=1, repairs=0, agent="external", engine=False), ops=OPS[:2], gpu=False,
                store_path=store_path)
    store = RunStore.open(store_path)
    batch = store.get_batch("batch_1")
    # As if the process died after the first member: the batch names three, one was never started.
    store.set_batch_settings(batch.id, dict(batch.settings, members=batch.settings["members"] + [
        {"operator": "elu", "dtype": "fp32", "kernel": str(suite / "ops" / "elu" / "fp32.cu")}]))
    # Out of time before it starts: deferred, and taken up by the next call.
    late = resume_all(store_path, executor=LocalExecutor([], deadline=time.time() - 1))
    assert [(m.label, m.action) for m in late.members if m.action != "waiting"] == [("elu fp32", "deferred")]
    outcome = resume_all(store_path)
    assert [(m.action, m.status) for m in outcome.members if m.action != "waiting"] == [("started", "paused")]
    assert sorted(p.operator for p in list_pending(store_path, batch="batch_1")) == ["elu", "gelu", "relu"]


def test_a_rerun_of_operators_still_in_progress_is_refused_unless_again(suite, tmp_path):
    """Running the same `bench optimize` again (after a kill, say) must not start a duplicate run of each
    operator an earlier batch with the same settings still has in progress: paused, or never started."""
    store_path = tmp_path / "store"
    settings = Settings(rounds=1, repairs=0, agent="external", engine=False)

    def batches() -> int:
        store = RunStore.open(store_path, read_only=True)
        try:
            return len(store.list_batches())
        finally:
            store.close()

    def recorded_unstarted(ops, settings=settings, **extra) -> str:
        """A start out of time at once: its members recorded, none started (as a killed start leaves them)."""
        before = batches()
        outcome = start_batch(settings, ops=ops, gpu=False, store_path=store_path,
                              executor=LocalExecutor([], deadline=time.time() - 1), **extra)
        assert {m.action for m in outcome.members} == {"deferred"} and batches() == before + 1
        return outcome.batch

    def rerun(*extra: str) -> list[str]:
        return ["bench", "optimize", "--agent", "external", "--no-engine", "--no-gpu", "--ops", ",".join(OPS),
                "--rounds", "1", "--repairs", "0", "--store", str(store_path), *extra]

    started = start_batch(settings, ops=["relu"], gpu=False, store_path=store_path)       # batch_1: relu paused
    assert [m.status for m in started.members] == ["paused"]
    never = sorted(random.sample(OPS[1:], random.randint(1, 3)), key=OPS.index)
    assert recorded_unstarted(never) == "batch_2"
    busy = [f"{op} fp32" for op in ["relu", *never]]
    expected = ", ".join(busy[:3]) + (" and 1 more are" if len(busy) == 4 else " are")
    assert refused(*rerun()) == (f"{expected} still in progress in batch_1, batch_2 (same settings) (hint: continue "
                                 "them with skillbase resume --all, or pass --again to start new runs anyway)")
    with pytest.raises(InputError, match=r"^relu fp32 is still in progress in batch_1 \(same settings\)"):
        start_batch(settings, ops=["relu"], gpu=False, store_path=store_path)
    assert batches() == 2       # refused before anything was recorded

    # Other settings are another experiment: a dtype, a preset, the engine, the rounds.
    recorded_unstarted(OPS, dtype="bf16")
    recorded_unstarted(OPS, preset="l")
    recorded_unstarted(OPS, Settings(rounds=1, repairs=0, agent="external", engine=True))
    recorded_unstarted(OPS, Settings(rounds=2, repairs=0, agent="external", engine=False))
    # A run that ended is not in progress: starting it again is a new measurement.
    store = RunStore.open(store_path)
    store.update_run(store.get_run(started.members[0].run).id,
                     status=random.choice([RunStatus.FINISHED, RunStatus.FAILED]))
    store.close()
    rest = [op for op in OPS if op not in never]
    recorded_unstarted(rest)
    # --again starts new runs of operators still in progress.
    assert "still in progress" in refused(*rerun())
    document = valid("batch", json.loads(invoke(*rerun("--again", "--time-limit", "1", "--json"))))
    assert document["counts"] == {"deferred": 4} and batches() == 8


def test_the_store_travels_in_one_file_and_works_where_it_lands(suite, tmp_path, monkeypatch):
    here = tmp_path / "here"
    start(here)
    trip = tmp_path / "trip.tar.gz"
    packed = valid("store-pack", json.loads(invoke("store", "pack", str(trip), "--store", str(here), "--json")))
    assert packed["runs"] == 4 and packed["bytes"] == trip.stat().st_size
    assert "exists" in refused("store", "pack", str(trip), "--store", str(here))

    # The GPU machine: another store folder, the suite in another folder, the original gone.
    there_suite = tmp_path / "suite_there"
    shutil.move(suite, there_suite)
    monkeypatch.setenv("SKILLBASE_BENCH_DIR", str(there_suite))
    there = tmp_path / "there"
    assert "unpacked 4 runs" in invoke("store", "unpack", str(trip), "--store", str(there))
    waiting = pending(there)
    assert all(Path(p["prompt"]).is_file() and p["prompt"].startswith(str(there)) for p in waiting.values())
    assert all(p["candidate"].startswith(str(there)) for p in waiting.values())
    Path(waiting["relu"]["candidate"]).write_text(a_candidate("relu", "judged there"))
    outcome = resume_all(there)
    assert [m.action for m in outcome.members if m.run == waiting["relu"]["run"]] == ["judged"]
    store = RunStore.open(there)
    assert store.get_run(waiting["relu"]["run"]).task_path.startswith(str(there_suite))

    # Back home: unpacking over the existing store needs --force, and brings the judged round back.
    back = tmp_path / "back.tar.gz"
    invoke("store", "pack", str(back), "--store", str(there))
    error = refused("store", "unpack", str(back), "--store", str(here))
    assert "already exists" in error and "--force" in error
    invoke("store", "unpack", str(back), "--store", str(here), "--force")
    assert pending(here)["relu"]["key"] == "r1/v0/a0"
    assert Path(pending(here)["relu"]["prompt"]).is_file()


def test_a_candidate_is_judged_only_when_it_is_this_prompts_cuda(tmp_path):
    from skillbase.run.pending import PendingPrompt

    prompt = PendingPrompt(run="run_3", run_id=3, task="relu-fp32", operator="relu", dtype="fp32", batch="batch_1",
                           kind="coder", round=1, attempt=0, key="r1/v0/a0", skill="free-choice", prompt_path=None,
                           candidate_path=tmp_path / "run_3.cu", meta_path=tmp_path / "run_3.meta.json")
    cu, meta = prompt.candidate_path, prompt.meta_path
    kernel = '__global__ void k(float* x) {}\nextern "C" void relu(float* x, int n) { k<<<1, 1>>>(x); }\n'

    def read(judged=None):
        return read_candidate(cu, meta, prompt, "relu", judged or {})

    cu.write_bytes(b"\x7fELF\x02\x01\x00\x00")
    assert read().startswith("binary:")
    cu.write_text(kernel + "// padding\n" * 500_000)
    assert read().startswith("too large: run_3.cu is over 4 MiB")
    cu.write_text(kernel.replace("relu(", "gelu("))
    assert read().startswith("for another task:") and "relu()" in read()
    cu.write_text(f"Here it is.\n```cuda\n{kernel}```\nVectorised.")      # a chat reply: the fenced file is used
    source, reply = read()
    assert source == kernel and reply is None
    from skillbase.run.artifacts import digest_bytes
    assert read({"r0/v0/a0": digest_bytes(kernel.encode())}).startswith("for another prompt: run_3.cu was already")
    meta.write_text("{not json")
    assert read().startswith("meta: run_3.meta.json is not JSON")
    meta.write_text(json.dumps({"wall_s": 3}))
    assert "names no model" in read()
    meta.write_text(json.dumps({"model": "m", "run": "run_4"}))
    assert read().startswith("for another run: run_3.meta.json names run_4")
    meta.write_text(json.dumps({"model": "m", "reply_tokens": "many"}))
    assert "reply_tokens must be a whole number" in read()
    meta.write_text(json.dumps({"model": " m ", "wall_s": 2, "reply_tokens": 7, "key": "r1/v0/a0"}))
    assert read()[1].model == "m" and read()[1].reply_tokens == 7


def test_bad_batch_requests_are_one_line_errors(suite, tmp_path, monkeypatch):
    with pytest.raises(InputError, match="--no-engine leaves the choice to a coder"):
        start_batch(Settings(agent="none", engine=False), ops=["relu"], gpu=False, store_path=tmp_path / "s")
    with pytest.raises(InputError, match="no preset huge"):
        start_batch(Settings(agent="external"), ops=["relu"], preset="huge", gpu=False, store_path=tmp_path / "s")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EnvironmentProblem, match="OPENAI_API_KEY"):
        start_batch(Settings(agent="openai"), ops=["relu"], gpu=False, store_path=tmp_path / "s")
    assert RunStore.open(tmp_path / "s").list_batches() == []      # refused before anything was recorded
    with pytest.raises(InputError, match="unknown operator"):
        start_batch(Settings(agent="external"), ops=["relux"], gpu=False, store_path=tmp_path / "s")
    assert "takes no RUN_REF" in refused("resume", "--all", "run_1", "--store", str(tmp_path / "s"))
    assert "no batch batch_9" in refused("pending", "--batch", "batch_9", "--store", str(tmp_path / "s"))


def test_a_batchs_runs_spread_over_one_worker_process_per_gpu(suite, tmp_path):
    """The worker-process path of the executor with real batch jobs (compile-only runs need no GPU, so
    two "GPUs" are two worker processes here): every run starts, judges and pauses in a worker, and
    the store gets every run's steps from both processes."""
    store_path = tmp_path / "store"
    started = start_batch(Settings(rounds=2, repairs=0, agent="external", engine=False), ops=OPS, gpu=False,
                          store_path=store_path, executor=LocalExecutor(["0", "1"]))
    assert sorted(m.action for m in started.members) == ["started"] * 4
    for prompt in list_pending(store_path):
        prompt.candidate_path.write_text(a_candidate(prompt.operator, "from a worker"))
    judged = resume_all(store_path, executor=LocalExecutor(["0", "1"]))
    assert sorted(m.action for m in judged.members) == ["judged"] * 4
    assert {p.key for p in judged.pending} == {"r1/v0/a0"} and len(judged.pending) == 4
    owners = set()
    store = RunStore.open(store_path)
    for prompt in judged.pending:
        owners |= {json.loads(e["payload_json"])["pid"] for e in store.events(prompt.run_id) if e["kind"] == "owner"}
    assert os.getpid() not in owners and len(owners) >= 2      # driven by the workers, not this process


def test_a_trip_pack_without_reports_leaves_only_the_ncu_reports_behind_and_unpacking_keeps_them(suite, tmp_path):
    here = tmp_path / "here"
    start(here)
    store = RunStore.open(here)
    try:
        run = store.list_runs()[0]
        report = store.artifacts.put_bytes(os.urandom(4096))          # stands in for a run's .ncu-rep
        kept = store.artifacts.put_text("a kernel's source, needed to judge the next round")
        with store.transaction() as tx:
            tx.add_evidence(run.id, 0, kept, "{}", report)
    finally:
        store.close()

    def objects(archive: Path) -> set[str]:
        import tarfile
        with tarfile.open(archive) as tar:
            return {Path(m.name).name for m in tar.getmembers() if "/artifacts/objects/" in m.name and m.isfile()}

    full, lean = tmp_path / "full.tar.gz", tmp_path / "lean.tar.gz"
    invoke("store", "pack", str(full), "--store", str(here))
    invoke("store", "pack", str(lean), "--store", str(here), "--without-reports")
    assert report in objects(full) and kept in objects(full)
    assert objects(lean) == objects(full) - {report}
    # The lean archive unpacked over the store that has the report keeps it (nothing is deleted).
    invoke("store", "unpack", str(lean), "--store", str(here), "--force")
    store = RunStore.open(here)
    try:
        assert store.artifacts.path_for(report).is_file() and len(store.list_runs()) == 4
    finally:
        store.close()


def test_pending_drops_a_note_once_the_answer_was_written_after_it_and_keeps_one_that_still_holds(suite, tmp_path):
    """A note says why the last `resume --all` did not judge a prompt's candidate: "missing" stops holding once the
    file is there (a store brought from the GPU machine, answered here), any note once the answer was written after
    it; an answer that was there before a "not started: time limit" note is still unjudged, and the note holds."""
    store_path = tmp_path / "store"
    start(store_path)
    resume_all(store_path)                              # nothing answered: every run notes its candidate missing
    before = pending(store_path)
    assert all(p["waiting"].startswith("missing: no ") for p in before.values()), before
    answered, kept, rewritten, unanswered = random.sample(OPS, 4)
    for op in (answered, kept, rewritten):
        Path(before[op]["candidate"]).write_text(a_candidate(op, f"note test {random.random()}"))
    store = RunStore.open(store_path)
    for op in (kept, rewritten):                        # a later resume stopped by its time limit before these
        store.note_waiting(int(before[op]["run"].removeprefix("run_")), "r0/v0/a0",
                           f"not started: time limit ({random.randrange(10**6)})")
    store.close()
    later = time.time() + 5
    os.utime(before[rewritten]["candidate"], (later, later))   # the coder wrote it again after that note
    after = pending(store_path)
    assert after[answered]["waiting"] is None and after[rewritten]["waiting"] is None
    assert after[kept]["waiting"].startswith("not started: time limit (")
    assert after[unanswered]["waiting"] == before[unanswered]["waiting"]   # still missing: still said


def test_a_missing_note_written_on_another_machine_names_the_file_where_this_store_expects_it(suite, tmp_path):
    """A store packed on the GPU machine carries its "missing" notes with that machine's folder (/tmp/kbstore/...);
    while the file is still missing, `pending` says where it is expected here."""
    store_path = tmp_path / "store"
    start(store_path)
    before = pending(store_path)
    op = random.choice(OPS)
    run = int(before[op]["run"].removeprefix("run_"))
    elsewhere = f"/tmp/device-{random.randrange(10**6)}/batches/batch_1/candidates"
    store = RunStore.open(store_path)
    store.note_waiting(run, "r0/v0/a0", f"missing: no run_{run}.cu in {elsewhere}")
    store.close()
    candidate = Path(before[op]["candidate"])
    assert pending(store_path)[op]["waiting"] == f"missing: no {candidate.name} in {candidate.parent}"


@pytest.mark.parametrize("error, action", [(EnvironmentProblem, "interrupted"), (RuntimeError, "failed")])
def test_pending_gives_this_batchs_reason_for_a_candidate_the_machine_stopped_before_its_judgement(
        suite, tmp_path, monkeypatch, error, action):
    """An EnvironmentProblem before the run itself moves (KernelBench's PyTorch timings ran the device out of memory
    on the H200) leaves the run paused at its prompt, `interrupted` (a job's own error: `failed`): `pending` names
    that reason, not the note an earlier batch left (there: "not started: time limit"), and the next `resume --all`
    judges the candidate."""
    from skillbase.run import batch

    store_path = tmp_path / "store"
    start(store_path)
    waiting = pending(store_path)
    unlucky = random.choice(OPS)
    run = waiting[unlucky]["run"]
    Path(waiting[unlucky]["candidate"]).write_text(a_candidate(unlucky, "for the stale-note test"))
    store = RunStore.open(store_path)
    store.note_waiting(int(run.removeprefix("run_")), "r0/v0/a0", "not started: time limit (an earlier batch)")
    store.close()
    reason = f"the device ran out of memory, the candidate was not judged ({random.randrange(10**6)})"
    real = batch.resume_run

    def full_device(run_id, *args, **kwargs):
        if run_id == int(run.removeprefix("run_")):
            raise error(reason)
        return real(run_id, *args, **kwargs)

    monkeypatch.setattr(batch, "resume_run", full_device)
    outcome = resume_all(store_path)
    assert {m.label: m.action for m in outcome.members}[run] == action
    still = [p for p in list_pending(store_path) if p.run == run]
    assert len(still) == 1 and reason in (still[0].waiting or ""), still
    monkeypatch.setattr(batch, "resume_run", real)
    again = resume_all(store_path)
    assert {m.label: m.action for m in again.members}[run] == "judged"


def test_a_judgement_the_machine_could_not_give_leaves_its_run_interrupted_and_the_next_resume_judges_it(
        suite, tmp_path, monkeypatch):
    """The device's memory taken by a neighbour (an EnvironmentProblem from the harness) is no verdict: that run is
    interrupted with the reason, the batch goes on, and the next `resume --all` judges the same candidate once."""
    from skillbase.run.judges import CompileOnlyJudge

    store_path = tmp_path / "store"
    start(store_path)
    waiting = pending(store_path)
    for op in OPS:
        Path(waiting[op]["candidate"]).write_text(a_candidate(op, "for the environment test"))
    unlucky = random.choice(OPS)
    judge = CompileOnlyJudge.judge
    reason = f"the device ran out of memory, the candidate was not judged ({random.randrange(10**6)})"

    def full_device(self, source, *args):
        if f"ops/{unlucky}/" in str(self.task_path) or f"/{unlucky}." in str(self.task_path):
            raise EnvironmentProblem(reason)
        return judge(self, source, *args)

    monkeypatch.setattr(CompileOnlyJudge, "judge", full_device)
    outcome = resume_all(store_path)
    actions = {m.label: m.action for m in outcome.members}
    run = waiting[unlucky]["run"]
    assert actions[run] == "interrupted" and reason in next(m.reason for m in outcome.members if m.label == run)
    assert sorted(a for label, a in actions.items() if label != run) == ["judged"] * (len(OPS) - 1)
    store = RunStore.open(store_path)
    row = store.get_run(run)
    assert row.status == RunStatus.INTERRUPTED and reason in row.stop_reason
    assert store.attempts(row.id, 0) == [] or all(a["status"] != "crashed" for a in store.attempts(row.id, 0))
    store.close()

    monkeypatch.setattr(CompileOnlyJudge, "judge", judge)
    again = resume_all(store_path)
    assert {m.label: m.action for m in again.members}[run] in ("judged", "continued")
    store = RunStore.open(store_path)
    assert [a["status"] for a in store.attempts(store.get_run(run).id, 0)] == ["unverified"]   # judged once
    store.close()
    assert {p.key for p in list_pending(store_path)} == {"r1/v0/a0"}
