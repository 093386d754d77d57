"""The build cache holds libraries the harness loads and runs, under keys anyone can compute from a
public kernel: it is created private (0700), and one others could write into is refused (issue 22),
so nobody can plant a library there for our worker to load."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from skillbase.errors import EnvironmentProblem

VECTOR_ADD = Path(__file__).resolve().parents[2] / "examples" / "vector_add" / "vector_add.cu"


@pytest.mark.nvcc
def test_the_default_build_cache_is_created_private(tmp_path, monkeypatch):
    from skillbase.harness.build import build

    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "fresh"))
    build(VECTOR_ADD, arch="sm_90", compile_only=True)
    for folder in (tmp_path / "fresh", tmp_path / "fresh" / "build"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700


@pytest.mark.nvcc
@pytest.mark.parametrize("open_one", ["root", "build"])
def test_a_build_cache_others_can_write_is_refused_before_anything_is_loaded(tmp_path, monkeypatch, open_one):
    from skillbase.harness.build import build

    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "build").mkdir(parents=True, mode=0o700)
    (tmp_path / "cache").chmod(0o700)
    target = tmp_path / "cache" if open_one == "root" else tmp_path / "cache" / "build"
    target.chmod(0o777)
    with pytest.raises(EnvironmentProblem, match="not private to you") as caught:
        build(VECTOR_ADD, arch="sm_90", compile_only=True)
    assert f"chmod 700 {target}" in caught.value.hint


@pytest.mark.nvcc
def test_a_cupti_cache_others_can_write_is_refused_and_events_take_over(tmp_path, monkeypatch):
    """The CUPTI helper is a library the harness loads too: its cache folder is held to the same rule."""
    from skillbase.harness import cupti
    from skillbase.harness.env import nvcc_path

    try:
        cupti.find_cupti(nvcc_path())
    except (cupti.CuptiUnavailable, EnvironmentProblem) as error:
        pytest.skip(f"no CUPTI beside nvcc here: {error}")
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "cupti").mkdir(parents=True, mode=0o700)
    (tmp_path / "cache").chmod(0o700)
    (tmp_path / "cache" / "cupti").chmod(0o777)
    with pytest.raises(cupti.CuptiUnavailable, match="not private to you"):
        cupti.build_timer()
    assert not any((tmp_path / "cache" / "cupti").iterdir())   # nothing was built into it
