"""The Ray executor on a local Ray cluster started by this module on this host (Ray turns 127.0.0.1
into the host's own address): two CPUs and two declared (fake) GPUs, compile-only jobs with the real
nvcc. One job per GPU at a time, the task's folder shipped with the job, a Ray worker killed mid-job
retried once then recorded as an error, a crashing job costing only itself, and the same results as
the local executor. No Ray process outlives the module."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from skillbase.errors import EnvironmentProblem
from skillbase.harness import env
from skillbase.harness.jobs import NOT_STARTED, Job, LocalExecutor, folders_of
from skillbase.run.batch import resume_all, start_batch
from skillbase.run.store import RunStore
from skillbase.run.types import Settings

ray = pytest.importorskip("ray")
ray_executor = pytest.importorskip("skillbase.harness.ray_executor")

REPO = Path(__file__).resolve().parents[2]
KIT = Path(__file__).resolve().parent          # ray_kit.py: the job functions the workers import
pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="the compile-only jobs need nvcc")


def _descendants(pid: int) -> list[tuple[int, str]]:
    """Every process below `pid` (from /proc), with its name."""
    parents: dict[int, list[tuple[int, str]]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        ppid = int(text[text.rindex(")") + 2:].split()[1])
        parents.setdefault(ppid, []).append((int(stat.parent.name), name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child[0])
    return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    saved = {key: os.environ.get(key) for key in ("PYTHONPATH", "SKILLBASE_CACHE")}
    # The cluster's processes inherit this environment: the kit importable, builds in a cache of our own.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(KIT), saved["PYTHONPATH"]) if p)
    os.environ["SKILLBASE_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    sys.path.insert(0, str(KIT))                 # and here, for the local executor's in-process jobs
    # Children that were here before the cluster (in a full suite: multiprocessing's resource tracker,
    # started by earlier tests, lives as long as pytest) are not the cluster's.
    before = {pid for pid, _ in _descendants(os.getpid())}
    executor = ray_executor.RayExecutor(init_options={"num_cpus": 2, "num_gpus": 2})
    yield executor
    assert "raylet" in {name for _, name in _descendants(os.getpid())}   # what the check below must not find
    executor.close()
    sys.path.remove(str(KIT))
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    assert not ray.is_initialized()
    deadline = time.time() + 20
    while (left := [name for pid, name in _descendants(os.getpid()) if name != "pytest" and pid not in before]) \
            and time.time() < deadline:
        time.sleep(0.5)
    assert not left, f"Ray processes outlived the module: {left}"


def _compile_job(kernel: Path) -> Job:
    return Job("compile", "ray_kit:compile_payload", {"kernel": str(kernel)}, label=kernel.parent.name,
               folders=folders_of(kernel))


def test_the_cluster_is_probed_before_any_job(cluster):
    (node,) = cluster.nodes
    assert node.address == ray.util.get_node_ip_address() and node.gpu_slots == 2
    assert node.nvcc == shutil.which("nvcc") and node.error is None
    assert cluster.gpu_model == env.gpu_name()  # here: declared GPUs, none for nvidia-smi to name (None)


def test_compile_jobs_give_the_local_executors_results(cluster):
    kernels = [REPO / "bench" / "ops" / op / "fp32.cu" for op in ("relu", "softmax")]
    jobs = [_compile_job(k) for k in kernels]
    local = LocalExecutor([]).run(jobs, lambda result: None)
    arrived = []
    remote = cluster.run(jobs, arrived.append)
    assert [r.error for r in local + remote] == [None] * 4
    assert [r.value for r in remote] == [r.value for r in local]
    assert all(r.value["ptxas"] for r in remote)          # ptxas reported at least one kernel each
    assert sorted(r.index for r in arrived) == [0, 1]
    here = ray.util.get_node_ip_address()
    assert {r.device for r in remote} <= {f"{here}:0", f"{here}:1"}


def test_the_task_folder_travels_with_the_job(cluster):
    kernel = REPO / "bench" / "ops" / "relu" / "fp32.cu"
    job = Job("where", "ray_kit:where_payload", {"kernel": str(kernel)}, folders=folders_of(kernel))
    (result,) = cluster.run([job], lambda result: None)
    assert result.error is None
    shipped = Path(result.value["path"])
    assert shipped.name == "fp32.cu" and shipped.parent != kernel.parent   # a copy, not the driver's file
    assert result.value["text"] == kernel.read_text()
    assert not shipped.exists()                                            # removed when the job ended


def test_one_job_per_gpu_at_a_time(cluster):
    jobs = [Job("hold", "ray_kit:hold_gpu_payload", {"seconds": 1.5}, label=str(i)) for i in range(4)]
    results = cluster.run(jobs, lambda result: None)
    assert [r.error for r in results] == [None] * 4
    spans = sorted((r.value["gpu"], r.value["start"], r.value["end"]) for r in results)
    assert {gpu for gpu, _, _ in spans} == {"0", "1"}
    for (gpu_a, _, end_a), (gpu_b, start_b, _) in zip(spans, spans[1:], strict=False):
        if gpu_a == gpu_b:
            assert start_b >= end_a, "two jobs held one GPU at once"
    first = {gpu: min(s for g, s, _ in spans if g == gpu) for gpu in ("0", "1")}
    last = {gpu: max(e for g, _, e in spans if g == gpu) for gpu in ("0", "1")}
    assert first["1"] < last["0"] and first["0"] < last["1"], "the two GPUs never worked at the same time"


def test_a_killed_worker_is_retried_once_then_its_job_is_an_error(cluster, tmp_path):
    once, always = tmp_path / "once", tmp_path / "always"
    once.mkdir()
    always.mkdir()
    jobs = [Job("kill", "ray_kit:kill_worker_payload", {"marks": str(once), "kills": 1}, label="once"),
            Job("kill", "ray_kit:kill_worker_payload", {"marks": str(always), "kills": 5}, label="always")]
    survived, lost = cluster.run(jobs, lambda result: None)
    assert survived.error is None and survived.value == "survived attempt 2"
    assert lost.value is None
    assert lost.error.startswith("interrupted: the Ray worker died running this job (2 attempts)")
    assert len(list(always.iterdir())) == 2                  # retried once, not more
    kernel = REPO / "bench" / "ops" / "relu" / "fp32.cu"
    (after,) = cluster.run([_compile_job(kernel)], lambda result: None)
    assert after.error is None                               # the cluster still works


def test_a_crashing_job_costs_only_itself(cluster):
    kernel = REPO / "bench" / "ops" / "relu" / "fp32.cu"
    crash, fine = cluster.run([Job("crash", "ray_kit:crash_payload"), _compile_job(kernel)], lambda result: None)
    assert crash.error.startswith("the job's process died (signal 11)")
    assert fine.error is None and fine.value["kernel"] == "fp32.cu"


def test_no_job_starts_after_the_deadline(cluster):
    cluster.deadline = time.time() - 1
    try:
        results = cluster.run([Job("hold", "ray_kit:hold_gpu_payload", {"seconds": 0})] * 2, lambda result: None)
    finally:
        cluster.deadline = None
    assert [r.error for r in results] == [NOT_STARTED] * 2


def test_a_batch_runs_on_the_cluster_and_resumes_with_either_executor(cluster, tmp_path):
    """`bench optimize --executor ray` then `resume --all` locally, then on the cluster again: the jobs
    on the cluster work on private copies and the driver writes the one store, so either executor takes
    up where the other left (tests/run/test_batch_ray.py: the nodes never open it)."""
    suite, store = tmp_path / "suite", tmp_path / "store"
    for op in ("relu", "gelu"):
        shutil.copytree(REPO / "bench" / "ops" / op, suite / "ops" / op)
    settings = Settings(rounds=2, repairs=1, agent="external", engine=False)
    started = start_batch(settings, ["relu", "gelu"], "fp32", gpu=False, store_path=store, suite=suite,
                          executor=cluster)
    assert started.to_json()["counts"] == {"started": 2}
    prompts = {p.operator: p for p in started.pending}
    assert sorted(prompts) == ["gelu", "relu"] and {p.key for p in prompts.values()} == {"r0/v0/a0"}

    def candidate(op: str, note: str) -> str:
        return f"// {note}\n" + (suite / "ops" / op / "fp32.cu").read_text()

    prompts["relu"].candidate_path.write_text(candidate("relu", "judged here"))
    local = resume_all(store, executor=LocalExecutor([]))
    if local.to_json()["counts"] != {"judged": 1, "waiting": 1}:   # say everything the store knows
        runs = RunStore.open(store).list_runs()
        pytest.fail(f"{local.to_json()}\n{started.to_json()}\n{[(r.id, r.status, r.stop_reason) for r in runs]}")
    after = {p.operator: p for p in local.pending}
    assert after["relu"].key == "r1/v0/a0" and after["gelu"].key == "r0/v0/a0"

    after["relu"].candidate_path.write_text(candidate("relu", "judged on the cluster, round 1"))
    after["gelu"].candidate_path.write_text(candidate("gelu", "judged on the cluster"))
    remote = resume_all(store, executor=cluster)
    assert remote.to_json()["counts"] == {"judged": 2}
    judged = {m.run: m.reason for m in remote.members}
    assert judged[after["relu"].run].startswith("r1/v0/a0: unverified")   # --no-gpu: built, never timed
    assert judged[after["gelu"].run].startswith("r0/v0/a0: unverified")


# -- the cluster's checks, on probes as nodes report them (no cluster needed) ---------------------

def _node(address="10.0.0.1", gpus=("NVIDIA H200",), **fields):
    base = {"gpu_slots": float(len(gpus)), "host": "n1", "nvcc": "/usr/local/cuda/bin/nvcc", "gpus": list(gpus),
            "skillbase": "1.0"}
    return ray_executor.NodeProbe(address=address, **{**base, **fields})


def test_one_gpu_model_is_the_clusters():
    nodes = [_node(), _node("10.0.0.2", gpus=("NVIDIA H200", "NVIDIA H200")), _node("10.0.0.3", gpus=(), gpu_slots=0,
                                                                                   nvcc=None)]
    assert ray_executor.check_nodes(nodes, "1.0") == "NVIDIA H200"


@pytest.mark.parametrize(("nodes", "message"), [
    ([_node(gpus=(), gpu_slots=0)], "the Ray cluster has no GPU"),
    ([_node(), _node("10.0.0.2", nvcc=None)], "Ray node 10.0.0.2 (n1) has no nvcc"),
    ([_node(), _node("10.0.0.2", skillbase="0.9")], "Ray node 10.0.0.2 (n1) runs skillbase 0.9, this machine 1.0"),
    ([_node(), _node("10.0.0.2", error="ModuleNotFoundError: No module named 'skillbase'")],
     "Ray node 10.0.0.2 (n1) cannot run skillbase: ModuleNotFoundError"),
    ([_node(), _node("10.0.0.2", gpus=("NVIDIA A100-SXM4-80GB",))],
     "the Ray cluster mixes GPU models (NVIDIA A100-SXM4-80GB on 10.0.0.2; NVIDIA H200 on 10.0.0.1)"),
])
def test_a_cluster_that_cannot_run_the_bench_is_refused_in_one_line(nodes, message):
    with pytest.raises(EnvironmentProblem) as caught:
        ray_executor.check_nodes(nodes, "1.0")
    assert caught.value.message.startswith(message) and "\n" not in caught.value.message
