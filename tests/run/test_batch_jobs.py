"""The GPU job executor every batch and bench job runs through (skillbase.harness.jobs): a job is
JSON in, JSON out, named by the function that runs it; results come back in job order, a failing
job is its own result, and nothing starts after the deadline."""

from __future__ import annotations

import json
import random
import time

from skillbase.harness.jobs import NOT_STARTED, Job, LocalExecutor, run_job


def dumps_jobs(count: int) -> list[Job]:
    rng = random.Random()
    return [Job("echo", "json:dumps", {"n": rng.randrange(10**6), "i": i}, label=f"job {i}") for i in range(count)]


def test_a_job_is_json_and_runs_where_it_lands():
    job = dumps_jobs(1)[0]
    assert Job.from_json(json.loads(json.dumps(job.to_json()))) == job
    assert json.loads(run_job(job)) == job.payload


def test_in_process_jobs_come_back_in_order_and_a_failure_is_its_result():
    jobs = dumps_jobs(3)
    jobs.insert(1, Job("broken", "json:no_such_function", {}))
    seen = []
    results = LocalExecutor([]).run(jobs, seen.append)
    assert [r.index for r in results] == [0, 1, 2, 3] and seen == results
    assert results[1].error.startswith("AttributeError") and results[1].value is None
    assert [json.loads(r.value) for r in results if r.error is None] == [j.payload for j in jobs if j.kind == "echo"]
    assert all(r.device is None for r in results)


def test_worker_processes_take_the_queue_one_per_gpu_and_label_the_device():
    jobs = dumps_jobs(5)
    results = LocalExecutor(["0", "1"]).run(jobs, lambda result: None)
    assert [json.loads(r.value) for r in results] == [j.payload for j in jobs]
    assert {r.device for r in results} <= {"0", "1"}


def test_nothing_starts_after_the_deadline():
    jobs = dumps_jobs(3)
    for gpus in ([], ["0", "1"]):
        results = LocalExecutor(gpus, deadline=time.time() - 1).run(jobs, lambda result: None)
        assert [r.error for r in results] == [NOT_STARTED] * 3
    later = LocalExecutor([], deadline=time.time() + 60).run(jobs, lambda result: None)
    assert all(r.error is None for r in later)
