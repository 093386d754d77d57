"""The device-memory figures of a judgement (its reservation, its allocators' peaks: `CheckResult.memory`) kept in
its verdict, and tools/measure/memory_estimates.py reading them back from a store: how much of the reservation a
judgement used (session 24: two KernelBench activation judgements waited 40-94 s for each other's memory)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from skillbase.harness.result import CheckResult
from skillbase.run.judges import verdict_of
from skillbase.run.store import RunStore

TOOL = Path(__file__).resolve().parents[2] / "tools" / "measure" / "memory_estimates.py"
GIB = 2**30


def test_a_verdict_keeps_the_judgements_memory_figures():
    result = CheckResult()
    memory = {"reserved_bytes": random.randrange(GIB, 80 * GIB), "cupy_pool_peak_bytes": random.randrange(GIB)}
    result.memory.update(memory)
    result.fail("incorrect", f"wrong output at seed {random.randrange(100)}")
    verdict = verdict_of(result)
    assert verdict.memory == memory and asdict(verdict)["memory"] == memory   # the loop stores asdict(verdict)


def test_the_tool_reads_each_verdicts_reservation_beside_its_peak(tmp_path):
    store = RunStore.open(tmp_path / "store")
    figures = {}
    for n in range(3):
        run = store.create_run(str(tmp_path / f"t{n}.cu"), f"op{n}", {})
        reserved = random.randrange(GIB, 80 * GIB)
        cupy, torch = random.randrange(reserved // 2), random.randrange(reserved)
        memory = {"reserved_bytes": reserved, "cupy_pool_peak_bytes": cupy, "torch_peak_reserved_bytes": torch}
        with store.transaction() as tx:
            tx.finish_step(run, "r0/v0/a0/candidate", {"source": f"digest{n}"})
            tx.finish_step(run, "r0/v0/a0/verdict", {"status": "slower", "reason": "", "memory": memory})
            tx.finish_step(run, "r1/v0/a0/candidate", {"source": f"old{n}"})     # stored before the figures
            tx.finish_step(run, "r1/v0/a0/verdict", {"status": "accepted", "reason": ""})
        figures[f"run_{run}"] = (reserved, max(cupy, torch))
    store.close()
    done = subprocess.run([sys.executable, str(TOOL), str(tmp_path / "store"), "--json"], capture_output=True,
                          text=True, check=True)
    found = {r["run"]: r for r in json.loads(done.stdout)["verdicts"]}
    assert sorted(found) == sorted(figures) and {r["key"] for r in found.values()} == {"r0/v0/a0"}
    for run, (reserved, peak) in figures.items():
        assert (found[run]["reserved_bytes"], found[run]["peak_bytes"]) == (reserved, peak)
        assert found[run]["used"] == peak / reserved
    text = subprocess.run([sys.executable, str(TOOL), str(tmp_path / "store")], capture_output=True, text=True,
                          check=True).stdout
    assert text.splitlines()[-1] == "3 verdict(s) with a reservation"
    nothing = subprocess.run([sys.executable, str(TOOL), str(tmp_path / "none")], capture_output=True, text=True)
    assert nothing.returncode == 2 and nothing.stderr.startswith("error: ") and len(nothing.stderr.splitlines()) == 1
