"""GPU jobs on a Ray cluster: `RayExecutor`, the `--executor ray` of `bench run`, `bench optimize` and
`resume --all` (the `ray` extra; see docs/ray.md).

Each `skillbase.harness.jobs.Job` becomes one Ray task asking for one GPU (`num_gpus=1`: Ray sets the
task's CUDA_VISIBLE_DEVICES, so two jobs never share a GPU). The task carries the job's read-only
`folders` (a bench task's folder: spec, baseline, candidate source) packed as a tar, unpacks them into a
temporary folder on its node, rewrites the payload's paths there and runs the job in a process of its
own (`python -m skillbase.harness.jobs`), the same `run_job` as the local executor: a crash or a hang
of the job costs that job, the Ray worker stays healthy. A Ray worker that dies mid-job (a node lost,
a kill) has its job retried once by Ray, then the job is recorded as an error. Results come back to
the driver as the same JSON, and only the driver writes results: the executor is `remote`, so a batch
(`bench optimize`, `resume --all`) ships each run a private copy of its store and applies what the job
did to it on the driver (`skillbase.run.transfer`); nodes need no shared filesystem.

Before any work the cluster is checked, each failure one line: Ray not installed, nothing listening
at the address, no GPU in the cluster, a GPU node without nvcc or with another skillbase version, and
GPU models mixed (timings from two models are never pooled: such a cluster is refused).
"""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from skillbase import __version__
from skillbase.errors import EnvironmentProblem, InputError
from skillbase.harness.jobs import Job, JobResult, TimeBudget, interruption

__all__ = ["MAX_BUNDLE_BYTES", "NodeProbe", "RayExecutor", "check_nodes", "probe_node", "run_on_node"]

MAX_BUNDLE_BYTES = 32 * 1024 * 1024      # a job's shipped folders, packed: a task folder is a few kB
RAY_HINT = "pip install 'skillbase[ray]' here and on every node of the cluster (docs/ray.md)"


@dataclass(frozen=True)
class NodeProbe:
    """What one Ray node has, as its probe task saw it."""

    address: str                     # the node's IP as Ray knows it
    gpu_slots: float                 # the node's GPU resource (what Ray schedules by)
    host: str = ""
    nvcc: str | None = None
    ncu: str | None = None
    gpus: list[str] = field(default_factory=list)      # nvidia-smi's names (empty: none readable)
    skillbase: str = ""
    error: str | None = None                           # the probe itself failed (no skillbase there)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def probe_node() -> dict[str, Any]:
    """Runs on a node: its tools, GPU names and skillbase version."""
    from skillbase.harness import env

    return {"host": socket.gethostname(), "nvcc": env.cuda_tool("nvcc"), "ncu": env.cuda_tool("ncu"),
            "gpus": [gpu.name for gpu in env.gpus()], "skillbase": __version__}


def check_nodes(nodes: Sequence[NodeProbe], driver_version: str = __version__) -> str | None:
    """The GPU model the cluster's jobs run on (None when no node could name its GPUs), or a one-line
    EnvironmentProblem: no GPU node, a GPU node without skillbase, nvcc or the driver's skillbase
    version, GPU models mixed."""
    workers = [node for node in nodes if node.gpu_slots > 0]
    if not workers:
        raise EnvironmentProblem("the Ray cluster has no GPU (no node offers the GPU resource)",
                                 hint="start the GPU nodes with `ray start --address HEAD:6379` (Ray counts "
                                      "their GPUs; --num-gpus N overrides)")
    for node in workers:
        where = f"Ray node {node.address}" + (f" ({node.host})" if node.host else "")
        if node.error:
            raise EnvironmentProblem(f"{where} cannot run skillbase: {node.error}", hint=RAY_HINT)
        if not node.nvcc:
            raise EnvironmentProblem(f"{where} has no nvcc", hint="install the CUDA toolkit there and put its bin/ on "
                                     "the PATH the node was started with (or start it with --num-gpus 0)")
        if node.skillbase != driver_version:
            raise EnvironmentProblem(f"{where} runs skillbase {node.skillbase}, this machine {driver_version}",
                                     hint="install the same skillbase on every node")
    models: dict[str, list[str]] = {}
    for node in workers:
        for name in sorted(set(node.gpus)):
            models.setdefault(name, []).append(node.address)
    if len(models) > 1:
        listed = "; ".join(f"{name} on {', '.join(addresses)}" for name, addresses in sorted(models.items()))
        raise EnvironmentProblem(f"the Ray cluster mixes GPU models ({listed}): their timings cannot be pooled",
                                 hint="run one cluster per GPU model (or start the other nodes with --num-gpus 0)")
    return next(iter(models), None)


# -- what a Ray task runs on its node ---------------------------------------------------------------

def _pack(folders: Sequence[str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for number, folder in enumerate(folders):
            tar.add(folder, arcname=str(number))
    return buffer.getvalue()


def _rewrite(value: Any, moves: dict[str, str]) -> Any:
    """The payload with every path under a shipped folder pointing at its copy."""
    if isinstance(value, dict):
        return {key: _rewrite(item, moves) for key, item in value.items()}
    if isinstance(value, list):
        return [_rewrite(item, moves) for item in value]
    if isinstance(value, str):
        for old, new in moves.items():
            if value == old or value.startswith(old + os.sep):
                return new + value[len(old):]
    return value


def run_on_node(job_json: dict[str, Any], bundle: bytes | None, timeout_s: float | None = None) -> dict[str, Any]:
    """The body of a Ray task: unpack the job's folders, run the job in a process of its own, return
    {"device", "value", "error", "wall_s"} (a job that ran: its own result; one killed by `timeout_s` or dead:
    the seconds its process ran). Never raises for the job's sake: only the worker's own death is Ray's."""
    import ray

    device = f"{ray.util.get_node_ip_address()}:{os.environ.get('CUDA_VISIBLE_DEVICES', '')}"
    job = Job.from_json(job_json)
    with tempfile.TemporaryDirectory(prefix="skillbase-job-") as tmp:
        if bundle:
            with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as tar:
                tar.extractall(tmp, filter="data")
            moves = {folder: os.path.join(tmp, str(number)) for number, folder in enumerate(job.folders)}
            job = Job(job.kind, job.function, _rewrite(job.payload, moves), job.label, job.folders)
        job_path, result_path = os.path.join(tmp, "job.json"), os.path.join(tmp, "result.json")
        with open(job_path, "w") as out:
            json.dump(job.to_json(), out)
        started = time.monotonic()
        try:
            done = subprocess.run([sys.executable, "-m", "skillbase.harness.jobs", job_path, result_path],
                                  capture_output=True, text=True, timeout=timeout_s, cwd=tmp)
        except subprocess.TimeoutExpired:
            # It ran (at least its timeout): the driver's TimeBudget must count it as the longest of its kind
            return {"device": device, "value": None, "error": f"the job did not finish within {timeout_s:g} s",
                    "wall_s": round(time.monotonic() - started, 3)}
        if done.returncode != 0 or not os.path.exists(result_path):
            how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit code {done.returncode}"
            last = (done.stderr.strip().splitlines() or [""])[-1][:300]
            return {"device": device, "value": None, "error": f"the job's process died ({how}) {last}".strip(),
                    "wall_s": round(time.monotonic() - started, 3)}
        with open(result_path) as result:
            return {"device": device, **json.load(result)}


# -- the driver's side ------------------------------------------------------------------------------

def _import_ray():
    try:
        import ray
    except ImportError:
        raise EnvironmentProblem("Ray is not installed (needed by --executor ray)", hint=RAY_HINT) from None
    return ray


def _check_listening(address: str) -> None:
    """Fail in seconds, not after Ray's minute of retries, when nothing listens at HOST:PORT."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"--address {address}: expected HOST:PORT (the head's `ray start --head --port`)",
                         hint="e.g. --address 10.0.0.1:6379, or --address auto on a node of the cluster")
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as error:
        raise EnvironmentProblem(f"no Ray cluster at {address} ({error.strerror or error})",
                                 hint="start one with `ray start --head --port 6379` on the head (docs/ray.md), "
                                      "or check --address") from None


class RayExecutor:
    """Jobs on the Ray cluster at `address` (HOST:PORT, or `auto`: the cluster this node belongs to);
    without an address, a Ray instance started on this host for the executor's lifetime (`init_options`
    go to `ray.init`: tests declare `num_gpus` there). The cluster is checked on construction;
    `gpu_model` is its one GPU model (None when no node could name it). With a `deadline` no job
    starts that its `TimeBudget` refuses (`not_started`). `close()` disconnects (and stops the instance it started)."""

    remote = True    # its jobs run on other machines: what they write there never reaches this host

    def __init__(self, address: str | None = None, deadline: float | None = None, *, retries: int = 1,
                 job_timeout_s: float | None = None, init_options: dict[str, Any] | None = None):
        self.ray = _import_ray()
        self.address = address
        self.deadline = deadline
        self.retries = retries
        self.job_timeout_s = job_timeout_s
        self.connected = False     # whether this executor called ray.init (and so shuts it down)
        if not self.ray.is_initialized():
            self._connect(address, init_options or {})
        try:
            self.nodes = self.probe()
            self.gpu_model = check_nodes(self.nodes)
        except BaseException:    # a cluster refused: stop the instance started for it, then say why
            self.close()
            raise

    def _connect(self, address: str | None, init_options: dict[str, Any]) -> None:
        options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
        if address is None:
            options.update(address="local", include_dashboard=False, **init_options)
        elif address != "auto":
            _check_listening(address)
            options["address"] = address
        else:
            options["address"] = "auto"
        try:
            self.ray.init(**options)
        except (ConnectionError, RuntimeError, ValueError) as error:
            first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
            raise EnvironmentProblem(f"cannot connect to the Ray cluster at {address or 'this host'}: {first}",
                                     hint="start one with `ray start --head` (docs/ray.md), or check --address") \
                from None
        self.connected = True

    def probe(self) -> list[NodeProbe]:
        """Probe every alive node (one small task pinned to each)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote = self.ray.remote(probe_node)
        alive = [node for node in self.ray.nodes() if node.get("Alive")]
        refs = [remote.options(num_cpus=0, max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(
            node["NodeID"], soft=False)).remote() for node in alive]
        probes = []
        for node, ref in zip(alive, refs, strict=True):
            base = {"address": node.get("NodeManagerAddress", "?"),
                    "gpu_slots": float(node.get("Resources", {}).get("GPU", 0))}
            try:
                probes.append(NodeProbe(**base, **self.ray.get(ref, timeout=120)))
            except Exception as error:  # a node that cannot import skillbase: its probe is the report, one line
                first = (str(error).strip().splitlines() or [type(error).__name__])[-1][:200]
                probes.append(NodeProbe(**base, error=first))
        return probes

    def run(self, jobs: Sequence[Job], on_result: Callable[[JobResult], None]) -> list[JobResult]:
        """Every job as a Ray task (one GPU each), at most as many in flight as the cluster has GPUs,
        so that a deadline leaves the rest unstarted; results in job order."""
        bundles: dict[tuple[str, ...], Any] = {}
        for job in jobs:
            if job.folders and job.folders not in bundles:
                absent = [folder for folder in job.folders if not os.path.isdir(folder)]
                if absent:
                    raise InputError(f"{job.label or job.kind}: no folder {absent[0]} to ship with the job")
                packed = _pack(job.folders)
                if len(packed) > MAX_BUNDLE_BYTES:
                    raise InputError(f"{job.label}: its folders pack to {len(packed) >> 20} MB, more than a job "
                                     f"carries ({MAX_BUNDLE_BYTES >> 20} MB): {', '.join(job.folders)}")
                bundles[job.folders] = self.ray.put(packed)
        task = self.ray.remote(run_on_node)
        slots = max(1, int(self.ray.cluster_resources().get("GPU", 1)))
        pending: dict[Any, int] = {}
        results: dict[int, JobResult] = {}
        upcoming = iter(range(len(jobs)))

        budget = TimeBudget(self.deadline)

        def finish(result: JobResult) -> None:
            budget.ran(result)
            results[result.index] = result
            on_result(result)

        for index in upcoming:
            refusal = budget.refusal(jobs[index])
            if refusal is not None:
                finish(JobResult(index, jobs[index], None, error=refusal))
                continue
            job = jobs[index]
            ref = task.options(num_gpus=1, max_retries=self.retries, retry_exceptions=False).remote(
                job.to_json(), bundles.get(job.folders), self.job_timeout_s)
            pending[ref] = index
            while len(pending) >= slots:
                self._finish_one(jobs, pending, finish)
        while pending:
            self._finish_one(jobs, pending, finish)
        return [results[i] for i in sorted(results)]

    def _finish_one(self, jobs: Sequence[Job], pending: dict[Any, int], finish: Callable[[JobResult], None]) -> None:
        ready, _ = self.ray.wait(list(pending), num_returns=1)
        finish(self._result(jobs, pending.pop(ready[0]), ready[0]))

    def _result(self, jobs: Sequence[Job], index: int, ref) -> JobResult:
        try:
            data = self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as error:   # run_on_node itself failed (its folder, its disk)
            last = (str(error).strip().splitlines() or [type(error).__name__])[-1][:300]
            return JobResult(index, jobs[index], None,
                             error=interruption(f"the job's Ray task failed on its node: {last}"))
        except self.ray.exceptions.RayError as error:   # the worker died on every attempt
            first = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
            return JobResult(index, jobs[index], None, error=interruption(f"the Ray worker died running this job "
                                                                          f"({self.retries + 1} attempts): {first}"))
        return JobResult(index, jobs[index], data["device"], data["value"], data["error"], data.get("wall_s"),
                         data.get("phases_s") or {})

    def close(self) -> None:
        """Disconnect (stopping the instance this executor started); a session opened by the caller stays."""
        if self.connected and self.ray.is_initialized():
            self.ray.shutdown()
        self.connected = False

    def describe(self) -> dict[str, Any]:
        return {"address": self.address or "local", "gpu_model": self.gpu_model,
                "nodes": [node.to_json() for node in self.nodes]}

