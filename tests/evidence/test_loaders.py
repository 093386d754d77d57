"""Loaders on the real H200 profiles (report and raw CSV agree) and on every kind of bad input."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from profile_kit import names, plain_report

from skillbase.errors import InputError, SkillbaseError
from skillbase.evidence import load_any, load_evidence_json, load_ncu_csv, load_ncu_report
from skillbase.evidence.units import parse_number, to_base

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROFILES = FIXTURES / "profiles"
BAD = FIXTURES / "bad"
NAMES = names()
KERNELS = {"streaming_copy": "copy_scalar", "uncoalesced_access": "strided_gather",
           "smem_bank_conflicts": "transpose_smem_unpadded", "naive_gemm": "sgemm_naive",
           "tiled_gemm": "sgemm_tiled", "divergent_reduction": "reduce_interleaved",
           "global_atomics": "sum_atomic_every_thread", "tiny_grid": "saxpy_few_blocks",
           "register_spills": "moments_capped", "fp64_math": "poly_iterate_fp64",
           "tensor_core_gemm": "hgemm_wmma_global", "smem_occupancy": "window_sum_big_smem",
           "naive_transpose": "transpose_naive", "transcendental_heavy": "activation_chain",
           "odd_block_size": "bias_relu", "row_softmax_thread": "softmax_row_per_thread"}


@pytest.fixture(scope="module")
def loaded():
    return {name: (load_ncu_report(plain_report(name)),
                   load_ncu_csv(PROFILES / name / "raw.csv", details=PROFILES / name / "details.csv"))
            for name in NAMES}


@pytest.mark.skipif(not NAMES, reason="no profiler fixtures")
def test_every_real_profile_loads_with_known_facts(loaded):
    assert len(NAMES) >= 16
    for name, (rep, csv) in loaded.items():
        for ev in (rep, csv):
            assert ev.device["name"] == "NVIDIA H200"
            assert ev.device["sm_count"] == 132
            assert ev.device["compute_capability"] == "9.0"
            assert ev.device["l2_bytes"] == 62914560
            assert ev.focus_kernel == KERNELS[name], name
            focus = ev.focus()
            assert focus.duration_ns == focus.metrics["gpu__time_duration.sum"] > 0
            assert len(focus.metrics) > 1000
            assert focus.ncu_rules, name
            ev.to_json()  # schema-valid
        assert rep.producer["source_kind"] == "ncu-rep" and csv.producer["source_kind"] == "ncu-csv"
        assert rep.focus().mangled.startswith("_Z")


@pytest.mark.skipif(not NAMES, reason="no profiler fixtures")
def test_report_and_csv_agree_on_shared_metrics(loaded):
    for name, (rep, csv) in loaded.items():
        pairs = zip(sorted(rep.kernels, key=lambda k: k.name), sorted(csv.kernels, key=lambda k: k.name),
                    strict=False)
        for a, b in pairs:
            assert a.name == b.name and a.launch == b.launch and a.launches == b.launches
            shared = set(a.metrics) & set(b.metrics)
            assert len(shared) > 1000
            for metric in shared:
                x, y = a.metrics[metric], b.metrics[metric]
                # the CSV prints at most 2 decimals
                assert abs(x - y) <= 0.006 + 1e-6 * abs(x), (name, metric, x, y)
        assert rep.device["sm_count"] == csv.device["sm_count"]


@pytest.mark.skipif(not NAMES, reason="no profiler fixtures")
def test_known_values_and_base_units(loaded):
    rep, csv = loaded["streaming_copy"]
    focus = rep.focus()
    assert focus.launch == {"grid": [262144, 1, 1], "block": [256, 1, 1]}
    assert focus.metrics["gpu__time_duration.sum"] == pytest.approx(197792.0)   # ns, not us
    assert 0 < focus.metrics["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] <= 100
    # the roofline: a copy does no FLOPs and moves 2 x 256 MiB
    assert rep.roofline["fp32_flops"] == 0
    assert rep.roofline["dram_bytes"] == pytest.approx(2 * 4 * 2**26, rel=0.05)
    assert rep.device["peak_dram_bytes_per_s"] == pytest.approx(4.8e12, rel=0.02)
    assert rep.device["peak_fp32_flops_per_s"] == pytest.approx(6.7e13, rel=0.05)
    rules = {r["rule"] for r in focus.ncu_rules}
    assert {"SOLBottleneck", "CPIStall"} <= rules
    assert all(r["type"] in ("OPT", "INF", "WRN", "ERR") for r in focus.ncu_rules)


@pytest.mark.skipif(not NAMES, reason="no profiler fixtures")
def test_two_kernels_dominant_chosen_with_reason(loaded):
    rep, csv = loaded["divergent_reduction"]
    for ev in (rep, csv):
        assert [k.name for k in sorted(ev.kernels, key=lambda k: k.name)] == ["reduce_final", "reduce_interleaved"]
        assert ev.focus_kernel == "reduce_interleaved"
        assert ev.focus_reason == "88% of GPU time (1 of 2 kernels)"
    ev = load_ncu_report(plain_report("divergent_reduction"), kernel="final")
    assert ev.focus_kernel == "reduce_final" and ev.focus().launch["grid"] == [1, 1, 1]
    with pytest.raises(InputError, match="kernels present: reduce_interleaved, reduce_final"):
        load_ncu_csv(PROFILES / "divergent_reduction" / "raw.csv", kernel="nothing_like_it")


@pytest.mark.skipif(not NAMES, reason="no profiler fixtures")
def test_fp64_roofline(loaded):
    rep, _ = loaded["fp64_math"]
    roof = rep.roofline
    # 2^22 threads x 256 iterations x ~11 FP64 FLOPs each
    assert roof["fp64_flops"] == pytest.approx(2**22 * 256 * 11, rel=0.1)
    assert roof["fp32_flops"] == 0
    assert roof["arithmetic_intensity_flop_per_byte"] > roof["ridge_flop_per_byte"]
    assert 0 < roof["achieved_flops_per_s"] < roof["peak_fp64_flops_per_s"]


def test_synthetic_csv_traps():
    ev = load_ncu_csv(BAD / "synthetic_raw.csv")
    hot = ev.focus()
    assert hot.name == "k_hot" and hot.launches == 2
    assert hot.duration_ns == pytest.approx(3000e3)                  # usecond -> ns, summed, "1,500.5"
    assert hot.metrics["dram__bytes_read.sum"] == pytest.approx(300000e3)   # Kbyte -> byte, mean
    assert hot.metrics["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(60.0)
    assert hot.metrics["dram__bytes.sum.per_second"] == pytest.approx(2000e9)  # Gbyte/s -> byte/s
    assert hot.metrics["sm__warps_active.avg.pct_of_peak_sustained_active"] == 70  # n/a skipped, not averaged in
    assert hot.launch == {"grid": [4096, 1, 1], "block": [256, 1, 1]}
    assert ev.device["name"] == "NVIDIA H200" and ev.device["compute_capability"] == "9.0"
    assert ev.focus_reason.endswith("(1 of 2 kernels)")
    ev.to_json()


@pytest.mark.parametrize("text, expected", [("298,208", 298208.0), ("1,978,360,039.82", 1978360039.82),
                                            ("n/a", None), ("12.5%", 12.5), ("no data", None), ("abc", None)])
def test_parse_number(text, expected):
    assert parse_number(text) == expected


@pytest.mark.parametrize("value, unit, expected", [
    (1.5, "usecond", (1500.0, "ns")), (2, "msecond", (2e6, "ns")), (3, "Kbyte", (3000.0, "byte")),
    (1, "MiB", (1048576.0, "byte")), (2, "Gbyte/s", (2e9, "byte/s")), (1.98, "cycle/nsecond", (1.98e9, "hz")),
    (1.5, "Ghz", (1.5e9, "hz")), (61.2, "%", (61.2, "%")), (7, "sector", (7, "sector")), (4, "inst", (4, "inst"))])
def test_units_to_base(value, unit, expected):
    got = to_base(value, unit)
    assert got[0] == pytest.approx(expected[0]) and got[1] == expected[1]


def one_line(error: SkillbaseError) -> str:
    assert "\n" not in error.message and "Traceback" not in error.message
    return error.message


@pytest.mark.parametrize("name, fragment", [("empty.ncu-rep", "empty file"), ("text.ncu-rep", "no NVR header")])
def test_bad_reports(name, fragment):
    with pytest.raises(InputError) as err:
        load_ncu_report(BAD / name)
    assert fragment in one_line(err.value)


@pytest.mark.skipif(not NAMES, reason="no profiler fixtures")
def test_truncated_and_corrupted_reports_never_crash(tmp_path):
    data = plain_report("divergent_reduction").read_bytes()
    rng = random.Random(3)
    variants = [data[:cut] for cut in (4, 100, 5000, 50000, 150000, 300000, len(data) // 2)]
    for _ in range(6):
        damaged = bytearray(data)
        for _ in range(40):
            damaged[rng.randrange(16, len(damaged))] = rng.randrange(256)
        variants.append(bytes(damaged))
    for index, blob in enumerate(variants):
        path = tmp_path / f"v{index}.ncu-rep"
        path.write_bytes(blob)
        try:
            ev = load_ncu_report(path)
        except InputError as error:
            one_line(error)
        else:  # damage that spared everything we read still gives a valid document
            ev.to_json()


@pytest.mark.parametrize("name, fragment", [
    ("other_tool.csv", "no ncu CSV header"),
    ("no_kernel_name.csv", "'Kernel Name'"),
])
def test_wrong_csvs_say_what_to_run(name, fragment):
    with pytest.raises(InputError) as err:
        load_ncu_csv(BAD / name)
    assert fragment in one_line(err.value)
    assert "--page raw --csv --print-units base" in err.value.hint


@pytest.mark.skipif(not NAMES, reason="no profiler fixtures")
def test_details_page_and_truncated_csv(tmp_path):
    with pytest.raises(InputError, match="details export"):
        load_ncu_csv(PROFILES / "streaming_copy" / "details.csv")
    lines = (PROFILES / "streaming_copy" / "raw.csv").read_text().splitlines()
    cut = tmp_path / "cut.csv"
    cut.write_text("\n".join(lines[:2] + [lines[2][: len(lines[2]) // 2]]) + "\n")
    with pytest.raises(InputError, match="row has .* cells"):
        load_ncu_csv(cut)
    header_only = tmp_path / "header.csv"
    header_only.write_text("\n".join(lines[:2]) + "\n")
    with pytest.raises(InputError, match="no kernel rows"):
        load_ncu_csv(header_only)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InputError, match="empty"):
        load_ncu_csv(empty)


def test_bad_json():
    with pytest.raises(InputError, match="not valid JSON"):
        load_evidence_json(BAD / "truncated.json")
    with pytest.raises(InputError, match="invalid evidence at kernels/0"):
        load_evidence_json(BAD / "invalid_evidence.json")
    with pytest.raises(InputError, match="no such file"):
        load_evidence_json(BAD / "missing.json")


@pytest.mark.skipif(not NAMES, reason="no profiler fixtures")
def test_load_any_dispatch(tmp_path):
    d = PROFILES / "tiny_grid"
    assert load_any(d / "report.ncu-rep.xz").producer["source_kind"] == "ncu-rep"
    assert load_any(d / "raw.csv").producer["source_kind"] == "ncu-csv"
    doc = tmp_path / "ev.json"
    doc.write_text(load_any(d / "report.ncu-rep.xz").to_json())
    assert load_any(doc).focus_kernel == "saxpy_few_blocks"
    # by content when the suffix says nothing
    odd = tmp_path / "profile.bin"
    odd.write_bytes(plain_report("tiny_grid").read_bytes())
    assert load_any(odd).producer["source_kind"] == "ncu-rep"
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    with pytest.raises(InputError, match="not a .ncu-rep"):
        load_any(other)
    with pytest.raises(InputError, match="is a folder"):
        load_any(tmp_path)
