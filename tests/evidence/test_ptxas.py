"""ptxas -v parsing on real nvcc 13 output (checked-in logs) and on a fresh compile when nvcc exists."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from skillbase.cuda.names import base_name, itanium_base_name, without_params
from skillbase.cuda.ptxas import parse_ptxas

STATIC = Path(__file__).resolve().parents[1] / "fixtures" / "static"
PROFILES = Path(__file__).resolve().parents[1] / "fixtures" / "profiles"


def log(name: str) -> str:
    return (STATIC / "ptxas" / f"{name}.txt").read_text()


def test_spills_under_maxrregcount():
    got = parse_ptxas(log("spills_maxrreg16"))
    acc = got["many_accumulators"]
    assert acc["registers"] == 24 and acc["spill_store_bytes"] == 312 and acc["spill_load_bytes"] == 312
    assert acc["stack_frame_bytes"] == 168 and acc["arch"] == "sm_90" and acc["barriers"] == 0
    assert got["big_local"]["stack_frame_bytes"] == 2048 and got["big_local"]["spill_store_bytes"] == 0


def test_no_spills_without_cap_and_templates_keyed_apart():
    got = parse_ptxas(log("spills"))
    assert got["many_accumulators"]["spill_store_bytes"] == 0 and got["many_accumulators"]["registers"] == 62
    if shutil.which("c++filt") or shutil.which("cu++filt"):
        assert got["tmpl_kernel<float,128>"]["shared_bytes"] == 512
        assert got["tmpl_kernel<double,64>"]["barriers"] == 1
    # the namespace is dropped, as in the source's kernel name
    assert got["in_namespace"]["mangled"] == "_ZN3ops12in_namespaceEPf"


def test_launcher_and_wmma_logs():
    launcher = parse_ptxas(log("launcher"))
    assert launcher["rows_kernel"] == {"registers": 14, "shared_bytes": 0, "stack_frame_bytes": 0,
                                       "spill_store_bytes": 0, "spill_load_bytes": 0, "cmem_bytes": None,
                                       "barriers": 1, "arch": "sm_90", "mangled": "_Z11rows_kernelPKfPfi"}
    wmma = parse_ptxas(log("wmma_kernel"))
    assert set(wmma) == {"hgemm_wmma", "mma_ptx"} and wmma["hgemm_wmma"]["registers"] == 32


def test_older_format_with_cmem_and_no_barriers():
    text = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z6kernelPfi' for 'sm_80'
ptxas info    : Function properties for _Z6kernelPfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, 4096 bytes smem, 364 bytes cmem[0]
"""
    got = parse_ptxas(text)["kernel"]
    assert got["registers"] == 10 and got["shared_bytes"] == 4096 and got["cmem_bytes"] == 364
    assert got["barriers"] is None and got["arch"] == "sm_80"


def test_device_functions_and_noise_ignored():
    assert parse_ptxas("") == {}
    assert parse_ptxas("nvcc fatal : something\n") == {}
    text = """ptxas info    : Function properties for _Z6helperf
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'
ptxas info    : Function properties for _Z1kPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
"""
    assert list(parse_ptxas(text)) == ["k"]


@pytest.mark.skipif(not PROFILES.is_dir(), reason="no profiler fixtures")
def test_every_fixture_ptxas_log():
    logs = sorted(PROFILES.glob("*/ptxas.txt"))
    assert logs
    for path in logs:
        got = parse_ptxas(path.read_text())
        assert got, path
        assert all(entry["registers"] and entry["arch"] == "sm_90" for entry in got.values())
    spills = parse_ptxas((PROFILES / "register_spills" / "ptxas.txt").read_text())["moments_capped"]
    assert spills["spill_store_bytes"] > 0


@pytest.mark.parametrize("mangled, base", [
    ("_Z18reduce_interleavedPKfPfi", "reduce_interleaved"), ("_Z1kILi128EEvPf", "k"),
    ("_ZN2ns3fooIfLi3EEEvPT_", "foo"), ("_ZN6detail7kernel2EPfi", "kernel2"), ("_ZL6staticPf", "static"),
    ("_Z5tiledILi32ELi33EEvPKfS1_Pfiii", "tiled"), ("_Z3fooIN2ns3BarEEvv", "foo"), ("not_mangled", None)])
def test_itanium_base_names_without_demangler(mangled, base):
    assert itanium_base_name(mangled) == base


def test_demangled_name_forms():
    assert base_name("void ns::k<128, float>(float *, int)") == "k"
    assert base_name("reduce_interleaved(const float *, float *, int)") == "reduce_interleaved"
    assert without_params("void k<128>(float*)") == "k<128>"


@pytest.mark.nvcc
def test_fresh_compile_with_maxrregcount(tmp_path, monkeypatch):
    from skillbase.evidence import ptxas_for_source

    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path))
    text, note = ptxas_for_source(STATIC / "spills.cu", "sm_90", extra_flags=("-maxrregcount=16",))
    assert note is None
    got = parse_ptxas(text)
    assert got["many_accumulators"]["spill_store_bytes"] > 0
    assert len(list((tmp_path / "build").glob("*/build.log"))) == 1
    again, _ = ptxas_for_source(STATIC / "spills.cu", "sm_90", extra_flags=("-maxrregcount=16",))
    assert again == text  # served from the cache
