"""nvcc builds: compile-only works without a GPU, the cache hits and misses for the right reasons,
compile errors become one `K.cu:LINE: error:` line with the full log kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillbase.errors import EnvironmentProblem, InputError
from skillbase.harness import build as build_module
from skillbase.harness.build import BuildError, build, check_extra_flags, first_error, normalize_arch

REPO = Path(__file__).resolve().parents[2]
TINY = ('extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n'
        'extern "C" void run(float* x) { k<<<1, 32>>>(x); }\n')


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("build-cache")


@pytest.mark.nvcc
@pytest.mark.parametrize("name", ["vector_add", "naive_sgemm", "conv2d_direct"])
def test_examples_compile_for_sm90(name, cache):
    result = build(REPO / "examples" / name / f"{name}.cu", arch="sm_90", compile_only=True, cache_dir=cache)
    assert result.arch == "sm_90" and result.object is not None and result.object.is_file()
    assert result.library is None
    kernel, info = next(iter(result.ptxas.items()))
    assert info["registers"] > 0, f"ptxas -v parsed for {kernel}"
    assert "-lineinfo" in result.command and "-arch=sm_90" in result.command


@pytest.mark.nvcc
def test_shared_library_and_cache_hit_miss(tmp_path, cache):
    source = tmp_path / "tiny.cu"
    source.write_text(TINY)
    first = build(source, arch="sm_90", cache_dir=cache)
    assert not first.cached and first.library is not None and first.library.name == "libtiny.so"
    assert "-shared" in first.command
    again = build(source, arch="sm_90", cache_dir=cache)
    assert again.cached and again.library == first.library and again.ptxas == first.ptxas
    fast = build(source, arch="sm_90", cache_dir=cache, extra_flags=("--use_fast_math",))
    assert not fast.cached and fast.key != first.key, "a flag change rebuilds"
    source.write_text(TINY.replace("2.0f", "3.0f"))
    changed = build(source, arch="sm_90", cache_dir=cache)
    assert not changed.cached, "a source change rebuilds"


@pytest.mark.nvcc
def test_local_header_change_rebuilds(tmp_path, cache):
    (tmp_path / "scale.h").write_text("#define SCALE 2.0f\n")
    source = tmp_path / "hdr.cu"
    source.write_text('#include "scale.h"\n' + TINY.replace("2.0f", "SCALE"))
    assert not build(source, arch="sm_90", compile_only=True, cache_dir=cache).cached
    assert build(source, arch="sm_90", compile_only=True, cache_dir=cache).cached
    (tmp_path / "scale.h").write_text("#define SCALE 4.0f\n")
    assert not build(source, arch="sm_90", compile_only=True, cache_dir=cache).cached


@pytest.mark.nvcc
def test_compile_error_is_one_line_with_file_and_line(tmp_path, cache):
    source = tmp_path / "broken.cu"
    source.write_text('__global__ void k(float* x) {\n  x[0] = y;\n}\n'
                      'extern "C" void run(float* x) { k<<<1,1>>>(x); }\n')
    with pytest.raises(BuildError) as info:
        build(source, arch="sm_90", compile_only=True, cache_dir=cache)
    assert info.value.message == 'broken.cu:2: error: identifier "y" is undefined'
    assert "1 error detected" in info.value.log
    assert not any(p.name.startswith(".") for p in cache.iterdir()), "failed builds leave no scratch folders"


def test_first_error_formats():
    gcc = "x.cu:1:10: fatal error: nope.h: No such file or directory\ncompilation terminated."
    assert first_error(gcc, "x.cu") == "x.cu:1: error: nope.h: No such file or directory"
    ptxas = "ptxas error   : Entry function '_Z1kPf' uses too much shared data (0x61a80 bytes, 0xc000 max)"
    assert first_error(ptxas, "k.cu").startswith("k.cu: ptxas error : Entry function")
    nvcc = '/abs/path/k.cu(12): error: expected a ";"'
    assert first_error(nvcc, "k.cu") == 'k.cu:12: error: expected a ";"'


def test_missing_nvcc_is_an_environment_problem(monkeypatch, tmp_path):
    monkeypatch.setattr(build_module.shutil, "which", lambda name: None)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.setattr(build_module.Path, "is_file",
                        lambda self: False if self.name == "nvcc" else os.path.isfile(self))
    source = tmp_path / "k.cu"
    source.write_text(TINY)
    with pytest.raises(EnvironmentProblem) as info:
        build(source, compile_only=True, cache_dir=tmp_path)
    assert "nvcc not found" in info.value.message and "PATH" in info.value.hint


def test_arch_normalisation():
    assert normalize_arch("9.0") == "sm_90" and normalize_arch("90") == "sm_90"
    assert normalize_arch("sm_90a") == "sm_90a" and normalize_arch("compute_80") == "sm_80"
    with pytest.raises(InputError):
        normalize_arch("hopper")


@pytest.mark.parametrize("flags", [("-lcublas",), ("-include", "cheat.h"), ("-o", "/tmp/x"),
                                   ("-Xcompiler", "-fplugin=x"), ("-DSYNC=cudaDeviceSynchronize",), ("-DX=f()",),
                                   ("-Xptxas", "-o,/tmp/x"), ("-ccbin", "evil")])
def test_dangerous_extra_flags_are_refused(flags):
    with pytest.raises(InputError):
        check_extra_flags(flags)


def test_ordinary_tuning_flags_pass():
    flags = ("--use_fast_math", "-DBLOCK=128", "-DTYPE=float", "-maxrregcount", "64", "-Xptxas", "-dlcm=ca",
             "-ftz=true", "-prec-div=false", "-fmad=true", "-std=c++17")
    assert check_extra_flags(flags) == flags


def test_default_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path))
    assert build_module.default_cache_dir() == tmp_path / "build"
    monkeypatch.delenv("SKILLBASE_CACHE")
    assert build_module.default_cache_dir() == Path.home() / ".cache" / "skillbase" / "build"
