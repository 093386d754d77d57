"""`build_fixtures.py --static-only` (issue 15, round 4): a fixture's static features are re-derived from the
source at the recorded commit, and nothing else of the evidence moves.

The sources here are small files written for the test in a throw-away git repository, laid out as the
dev-set repository would be; the evidence is a committed dev-set fixture (a real H200 profile).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

ADVICE = Path(__file__).resolve().parents[2] / "tools" / "measure" / "advice"
sys.path.insert(0, str(ADVICE))
import build_fixtures  # noqa: E402
import devset  # noqa: E402

from skillbase.evidence import Evidence  # noqa: E402

SOURCE = """#include "tile.cuh"
__global__ void transposeNaive(float* odata, const float* idata) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = idata[y * 1024 + x];
    __syncthreads();
    odata[x * 1024 + y] = tile[threadIdx.x][threadIdx.y];
}
"""


def _step() -> devset.Step:
    return next(s for s in devset.steps("tune") if s.key == "transpose-nvblog/transposeNaive")


def test_static_features_come_from_the_source_and_the_profile_stays(tmp_path):
    step = _step()
    root = tmp_path / "tree"
    (root / Path(step.path).parent).mkdir(parents=True)
    (root / step.path).write_text(SOURCE)
    (root / Path(step.path).parent / "tile.cuh").write_text("#define TILE 32\n")
    before = Evidence.from_json(devset.read_fixture(step))
    after = build_fixtures.with_static(Evidence.from_json(devset.read_fixture(step)), step, root)
    kernel = after.focus_static()
    # the file written here, not the committed fixture's: one kernel, its padded tile sized by the header
    assert list(after.static["kernels"]) == ["transposeNaive"]
    assert kernel["shared"]["static_bytes"] == 32 * 33 * 4 and after.static["file"]["headers"] == ["tile.cuh"]
    assert after.static["file"]["path"] == f"{step.repo}@{step.commit[:12]}:{step.path}"
    # the profile part is the committed one, value for value
    assert [k.to_dict() for k in after.kernels] == [k.to_dict() for k in before.kernels]
    assert (after.ptxas, after.focus_kernel, after.device) == (before.ptxas, before.focus_kernel, before.device)
    text = build_fixtures.checked_json(after, step, root)
    assert str(tmp_path) not in text and json.loads(text)["static"]["kernels"]["transposeNaive"]


def test_sources_are_exported_from_a_clone_at_the_recorded_commit(tmp_path, monkeypatch):
    step = _step()
    owner, name = step.repo.split("/")
    clone = tmp_path / "git" / f"{owner}+{name}"
    (clone / Path(step.path).parent).mkdir(parents=True)
    (clone / step.path).write_text(SOURCE)
    (clone / "README.md").write_text("not a source\n")

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(clone), *args], capture_output=True, text=True, check=True,
                              env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                                   "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(tmp_path)}).stdout.strip()

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "v1")
    commit = git("rev-parse", "HEAD")
    (clone / step.path).write_text("// a later version that must not be exported\n")
    git("commit", "-q", "-am", "v2")
    only = dataclasses.replace(step, commit=commit)
    monkeypatch.setattr(devset, "steps", lambda half=None: [only])
    sources = tmp_path / "sources"
    assert build_fixtures.export_sources(tmp_path / "git", sources) == []
    tree = build_fixtures.source_tree(only, sources)
    assert (tree / step.path).read_text() == SOURCE           # the recorded commit, not the newest
    assert not (tree / "README.md").exists()                  # source files only
    missing = dataclasses.replace(step, repo="nobody/nothing")
    monkeypatch.setattr(devset, "steps", lambda half=None: [missing])
    assert build_fixtures.export_sources(tmp_path / "git", sources)[0].startswith("nobody/nothing (no clone")


@pytest.mark.parametrize("layout", ["owner+name/repo", "owner+name", "owner/name"])
def test_a_clone_is_found_in_each_layout(tmp_path, layout):
    where = tmp_path / layout.replace("owner", "o").replace("name", "n")
    where.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare" if layout.endswith("repo") else "-q", str(where)], check=True)
    command = build_fixtures.git_command(tmp_path, "o/n")
    assert command is not None and str(where) in " ".join(command)
    assert build_fixtures.git_command(tmp_path, "o/other") is None
