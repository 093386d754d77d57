"""`--executor ray` refuses bad input in one line, before any work and without starting Ray: Ray not
installed, nothing listening at --address, an address that is not HOST:PORT, --address or --gpus
with the wrong executor, a cluster without a GPU. Each through the real entry point (`skillbase.cli.main`);
the one that starts Ray in a process of its own."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def error_of(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if line.startswith(("error:", "hint:"))]
    assert "Traceback" not in done.stderr and lines, done.stderr
    return "\n".join(lines)


def test_without_ray_the_line_names_the_extra(skillbase, suite, tmp_path, monkeypatch):
    # None in sys.modules is how Python marks a module as absent: `import ray` raises ImportError.
    monkeypatch.setitem(sys.modules, "ray", None)
    for command in (["bench", "run", "--dir", str(suite), "--dtype", "fp32"],
                    ["bench", "optimize", "--agent", "external", "--no-gpu", "--dir", str(suite),
                     "--store", str(tmp_path / "store")]):
        done = skillbase(*command, "--executor", "ray")
        assert done.returncode == 3
        assert error_of(done) == ("error: Ray is not installed (needed by --executor ray)\n"
                                  "hint: pip install 'skillbase[ray]' here and on every node of the cluster "
                                  "(docs/ray.md)")
    assert not (tmp_path / "store").exists() or not list((tmp_path / "store").glob("batches/*"))


def test_nothing_at_the_address_is_one_line_within_seconds(skillbase, suite, tmp_path):
    port = closed_port()
    done = skillbase("bench", "run", "--dir", str(suite), "--dtype", "fp32", "--executor", "ray",
                     "--address", f"127.0.0.1:{port}")
    assert done.returncode == 3
    assert error_of(done).startswith(f"error: no Ray cluster at 127.0.0.1:{port} (Connection refused)\nhint: ")
    store = tmp_path / "store"
    done = skillbase("bench", "optimize", "--agent", "external", "--no-gpu", "--dir", str(suite), "--store",
                     str(store), "--executor", "ray", "--address", f"127.0.0.1:{port}", "--json")
    assert done.returncode == 3 and json.loads(done.stdout)["error"]["message"].startswith("no Ray cluster at")
    assert not list(store.glob("batches/*"))          # refused before a batch was recorded


@pytest.mark.parametrize(("args", "line"), [
    (["--executor", "ray", "--address", "headnode"], "error: --address headnode: expected HOST:PORT"),
    (["--address", "10.0.0.1:6379"], "error: --address names a Ray cluster\nhint: add --executor ray"),
    (["--executor", "ray", "--gpus", "0,1"], "error: --gpus picks this machine's GPUs; with --executor ray"),
])
def test_options_that_do_not_go_together_are_refused(skillbase, suite, args, line):
    done = skillbase("bench", "run", "--dir", str(suite), "--dtype", "fp32", *args)
    assert done.returncode == 2 and error_of(done).startswith(line)


def test_resume_of_one_run_takes_no_executor(skillbase, tmp_path):
    done = skillbase("resume", "run_1", "--executor", "ray", "--store", str(tmp_path / "store"))
    assert done.returncode == 2 and "--executor and --address go with --all" in error_of(done)


def _ray_processes() -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            name = stat.read_text().split(") ")[0].split(" (", 1)[1]
        except (OSError, IndexError):
            continue
        if name in ("raylet", "gcs_server"):
            found.add(int(stat.parent.name))
    return found


def test_a_cluster_without_a_gpu_is_refused_and_its_instance_stopped(suite, tmp_path):
    pytest.importorskip("ray")
    before = _ray_processes()
    # Ray counts the GPUs CUDA_VISIBLE_DEVICES shows: none, even on a GPU machine.
    code = "import sys\nfrom skillbase.cli import main\nmain(sys.argv[1:])\n"
    done = subprocess.run([sys.executable, "-c", code, "bench", "run", "--dir", str(suite), "--dtype", "fp32",
                           "--executor", "ray", "--results", str(tmp_path / "results")], capture_output=True,
                          text=True, timeout=120, cwd=REPO, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 3
    assert error_of(done).startswith("error: the Ray cluster has no GPU (no node offers the GPU resource)")
    assert _ray_processes() <= before        # the instance started for the command is gone with it
