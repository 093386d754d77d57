"""`skillbase calibrate` (issue 8): Otsu / multi-Otsu from the definition, the population checks and
their messages, the thresholds file round-trip through Engine.load(thresholds=...), and the CLI.

CPU only and fast: populations are built from one real H200 evidence document
(rules/fixtures/naive_gemm.evidence.json) with the SOL metrics re-drawn per kernel.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from skillbase import calibrate as cal
from skillbase.errors import InputError

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "rules" / "fixtures" / "naive_gemm.evidence.json"
DEFAULTS = REPO / "rules" / "thresholds" / "ncu-defaults.yaml"
SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEM = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764460800")  # 2025-11-30: a fixed date in the provenance


# --------------------------------------------------------------------------------------- Otsu


def brute_force(sample, classes):
    """Between-class variance of every possible split of the sorted unique values, from the definition."""
    x = np.asarray(sample, float)
    values = np.unique(x)
    mu, best, best_cuts = x.mean(), -1.0, None
    for cuts in itertools.combinations(range(len(values) - 1), classes - 1):
        edges = [-np.inf] + [values[c] for c in cuts] + [np.inf]
        var = 0.0
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            cls = x[(x > lo) & (x <= hi)]
            var += len(cls) / len(x) * (cls.mean() - mu) ** 2
        if var > best + 1e-9 * best:
            best, best_cuts = var, cuts
    return best, [(values[c] + values[c + 1]) / 2 for c in best_cuts]


def test_otsu_bimodal_recovers_the_gap():
    rng = np.random.default_rng(8101)
    for _ in range(20):
        low = rng.uniform(5, 30, rng.integers(5, 60))
        high = rng.uniform(70, 95, rng.integers(5, 60))
        result = cal.otsu(np.concatenate([low, high]))
        (t,) = result.thresholds
        assert low.max() < t < high.min()
        assert result.class_sizes == [len(low), len(high)]
        assert result.separability > 0.8


def test_otsu_normal_modes_cut_near_the_middle():
    rng = np.random.default_rng(8102)
    sample = np.concatenate([rng.normal(0.2, 0.03, 300), rng.normal(0.7, 0.03, 300)])
    (t,) = cal.otsu(sample).thresholds
    assert 0.4 < t < 0.5


def test_multi_otsu_trimodal_recovers_both_gaps():
    rng = np.random.default_rng(8103)
    for _ in range(10):
        clusters = [rng.uniform(lo, lo + 15, rng.integers(4, 40)) for lo in (0, 40, 85)]
        result = cal.multi_otsu(np.concatenate(clusters), 3)
        t1, t2 = result.thresholds
        assert clusters[0].max() < t1 < clusters[1].min()
        assert clusters[1].max() < t2 < clusters[2].min()
        assert result.class_sizes == [len(c) for c in clusters]


def test_otsu_matches_the_definition_on_small_samples():
    rng = np.random.default_rng(8104)
    for _ in range(30):
        sample = rng.choice(np.round(rng.uniform(0, 100, 12), 1), size=rng.integers(3, 25))
        if len(np.unique(sample)) < 3:
            continue
        for classes in (2, 3):
            result = cal.multi_otsu(sample, classes)
            best, cuts = brute_force(sample, classes)
            assert result.between_variance == pytest.approx(best, rel=1e-9)
            assert result.thresholds == pytest.approx(cuts, abs=0.051)  # midpoints are rounded inside the gap


def test_result_does_not_depend_on_input_order():
    rng = np.random.default_rng(8105)
    sample = np.concatenate([rng.normal(20, 8, 50), rng.normal(55, 5, 30), rng.normal(90, 4, 40), [50.0] * 7])
    first2, first3 = cal.otsu(sample), cal.multi_otsu(sample, 3)
    for _ in range(5):
        shuffled = rng.permutation(sample)
        assert cal.otsu(shuffled).thresholds == first2.thresholds
        assert cal.multi_otsu(list(shuffled), 3).thresholds == first3.thresholds


def test_ties_and_tiny_samples():
    # many kernels at exactly 100% theoretical occupancy are one value with a large weight
    r = cal.otsu([100.0] * 40 + [50.0] * 3 + [25.0])
    assert r.thresholds == [75.0] and r.class_sizes == [4, 40] and r.distinct == 3
    assert cal.otsu([1, 2]).thresholds == [1.5]
    assert cal.multi_otsu([1, 2, 3], 3).thresholds == [1.5, 2.5]
    # a symmetric sample: equal maxima, the lowest cut wins, in any order
    assert cal.otsu([0, 0, 10, 10, 20, 20][::-1]).thresholds == cal.otsu([0, 0, 10, 10, 20, 20]).thresholds == [5.0]
    with pytest.raises(ValueError, match="at least 2 distinct"):
        cal.otsu([3.0] * 10)
    with pytest.raises(ValueError, match="at least 3 distinct"):
        cal.multi_otsu([1, 1, 2, 2], 3)
    with pytest.raises(ValueError, match="NaN"):
        cal.otsu([1.0, float("nan"), 2.0])


# ------------------------------------------------------------------------------- populations


def write_population(folder: Path, n: int, seed: int, sol_modes=(10.0, 35.0, 65.0), edit=None) -> list[Path]:
    """n evidence files: naive_gemm's H200 profile with SM%/memory% re-drawn around three modes."""
    rng = np.random.default_rng(seed)
    base = json.loads(FIXTURE.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        doc = json.loads(json.dumps(base))
        kernel = doc["kernels"][0]
        mem = float(np.clip(rng.normal(sol_modes[i % len(sol_modes)], 2.0), 0.5, 99.5))
        kernel["metrics"][MEM] = mem
        kernel["metrics"][SM] = float(mem * rng.uniform(0.2, 0.6))
        kernel["duration_ns"] = 1000.0 + i
        if edit:
            edit(i, doc)
        path = folder / f"k{i:02d}.evidence.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths


def engine():
    from skillbase.engine import Engine

    return Engine.load()


def population(paths, **kw):
    return cal.check_population(cal.load_population(paths, engine()), **kw)


def test_population_quantities_come_from_the_vocabulary(tmp_path):
    paths = write_population(tmp_path / "p", 30, 8201)
    pop = population(paths)
    member = pop.members[0]
    metrics = json.loads(paths[0].read_text())["kernels"][0]["metrics"]
    assert member.values["sol_max"] == pytest.approx(max(metrics[SM], metrics[MEM]))
    assert member.values["abs_sol_gap"] == pytest.approx(abs(metrics[SM] - metrics[MEM]))
    assert member.gpu == "NVIDIA H200" and member.label == "k00"
    assert pop.digest.startswith("sha256:") and len(pop.members) == 30


def test_refuses_a_small_population(tmp_path):
    paths = write_population(tmp_path / "p", 12, 8202)
    with pytest.raises(InputError) as error:
        population(paths)
    assert "12 kernel(s)" in error.value.message and "at least 30" in error.value.message
    assert "not meaningful" in error.value.hint and "--min" in error.value.hint
    pop = population(paths, min_kernels=10)  # lowered explicitly: allowed, with a note
    assert any("not meaningful" in note for note in pop.notes)


def test_refuses_mixed_gpus_unless_mixed(tmp_path):
    def edit(i, doc):
        if i % 5 == 0:
            doc["device"]["name"] = "NVIDIA A100-SXM4-80GB"

    paths = write_population(tmp_path / "p", 30, 8203, edit=edit)
    with pytest.raises(InputError) as error:
        population(paths)
    assert "mixes 2 GPU models" in error.value.message and "NVIDIA A100-SXM4-80GB: k00" in error.value.message
    assert "--mixed" in error.value.hint
    pop = population(paths, mixed=True)
    assert any("pooled 2 GPU models" in note for note in pop.notes)


def test_refuses_mixed_ncu_versions(tmp_path):
    def edit(i, doc):
        doc["producer"]["ncu_version"] = "2025.3.1.0" if i < 20 else "2024.1.0.0"

    paths = write_population(tmp_path / "p", 30, 8204, edit=edit)
    with pytest.raises(InputError, match="mixes 2 ncu versions"):
        population(paths)


def test_refuses_a_metric_missing_from_part_of_the_population(tmp_path):
    def edit(i, doc):
        if i in (3, 7):
            del doc["kernels"][0]["metrics"][SM]

    paths = write_population(tmp_path / "p", 34, 8205, edit=edit)
    with pytest.raises(InputError) as error:
        population(paths)
    message = error.value.message
    assert "missing for 2 of 34 kernels: k03, k07" in message and SM in message
    assert "--drop-incomplete" in error.value.hint
    pop = population(paths, drop_incomplete=True)
    assert len(pop.members) == 32 and pop.dropped == ["k03", "k07"]
    # dropping can take the population under the floor: refused, saying so
    paths = write_population(tmp_path / "q", 31, 8206, edit=edit)
    with pytest.raises(InputError, match="after dropping incomplete ones"):
        population(paths, drop_incomplete=True)


@pytest.mark.parametrize("path, label", [
    ("tests/fixtures/profiles/naive_gemm/report.ncu-rep", "naive_gemm"),
    ("rules/fixtures/naive_gemm.evidence.json", "naive_gemm"),
    ("pop/mem.vectorize/before/before.default.ncu-rep", "mem.vectorize/before"),
    ("skills/mem/mem.vectorize/examples/after.evidence.json", "mem.vectorize/after"),
    ("k07.evidence.json", "k07"),
])
def test_member_labels(path, label):
    assert cal.member_label(Path(path)) == label


def test_refuses_mixed_clock_control(tmp_path):
    def edit(i, doc):
        doc["producer"]["clock_control"] = "none" if i % 2 else "base"

    paths = write_population(tmp_path / "p", 30, 8208, edit=edit)
    with pytest.raises(InputError, match="mixes 2 clock-control settings"):
        population(paths)


def test_the_same_measurement_twice_counts_once(tmp_path):
    paths = write_population(tmp_path / "p", 30, 8207)
    copy = tmp_path / "copy" / "again.evidence.json"
    copy.parent.mkdir()
    copy.write_text(paths[0].read_text())
    pop = cal.load_population([tmp_path / "p", copy], engine())
    assert len(pop.members) == 30 and len(pop.duplicates) == 1


# ----------------------------------------------------------------------- the thresholds file


def test_thresholds_file_round_trips_and_changes_a_derivation(tmp_path):
    from skillbase.engine import Engine
    from skillbase.engine.vocabulary import Thresholds

    paths = write_population(tmp_path / "p", 36, 8301)
    eng = engine()
    pop = cal.check_population(cal.load_population(paths, eng))
    calibration = cal.calibrate(pop, eng.thresholds)
    out = cal.write_thresholds(calibration, tmp_path / "h200.yaml", DEFAULTS)
    loaded = Thresholds.load(out)
    default = Thresholds.load(DEFAULTS)
    assert set(loaded.values) == set(default.values)  # every threshold the rules read is there
    low, high = loaded.values["sol_low"], loaded.values["sol_high"]
    assert 12 < low < 33 and 37 < high < 63  # between the three modes 10 / 35 / 65
    assert loaded.values["bank_conflict_share"] == default.values["bank_conflict_share"]
    assert "multi-Otsu" in loaded.provenance["sol_high"] and pop.digest[:19] in loaded.provenance["sol_high"]
    raw = yaml.safe_load(out.read_text())
    block = raw["sol_high"]["calibration"]
    assert block["ncu_default"] == 80 and block["population"]["kernels"] == 36
    assert block["population"]["population_digest"] == pop.digest and block["population"]["date"] == "2025-11-30"
    assert block["population"]["ncu_version"] == "unknown"
    assert raw["fp32_low"]["calibration"]["method"].startswith("not calibrated")

    # a crafted kernel at 70% memory throughput: leaning under ncu's 60/80, bandwidth-bound once 70 >= sol_high
    doc = json.loads(FIXTURE.read_text())
    doc["kernels"][0]["metrics"].update({MEM: 70.0, SM: 20.0})
    evidence = tmp_path / "crafted.evidence.json"
    evidence.write_text(json.dumps(doc))
    from skillbase.evidence import load_evidence_json as load_evidence

    ev = load_evidence(evidence)
    before = Engine.load().evaluate(ev)
    after = Engine.load(thresholds=out).evaluate(ev)
    assert before.facts["bottleneck"] == "MEMORY_LEANING"
    assert after.facts["bottleneck"] == "MEMORY_BANDWIDTH"
    assert after.thresholds["path"] == str(out)


def test_compare_reports_class_changes_and_hit_rates(tmp_path):
    from skillbase.engine import Engine

    paths = write_population(tmp_path / "p", 30, 8302)
    eng = engine()
    pop = cal.check_population(cal.load_population(paths, eng))
    out = cal.write_thresholds(cal.calibrate(pop, eng.thresholds), tmp_path / "c.yaml", DEFAULTS)
    expectations = {"k00": ["mem.smem_tiling"], "k01": ["no.such_skill"], "nowhere": ["x.y"]}
    report = cal.compare(pop, eng, Engine.load(thresholds=out), expectations)
    assert report["kernels"] == 30
    assert report["changed_class"] == sum(1 for c in report["changed"]
                                          if {"bottleneck", "cudamaster_class"} & set(c["changes"]))
    assert report["changed_class"] > 0  # the 65% mode is leaning under ncu's values, throughput-bound calibrated
    assert report["advise"]["expected_kernels"] == 2 and report["advise"]["unmatched"] == ["nowhere"]
    assert report["keep"] in ("calibrated", "defaults")
    same = cal.compare(pop, eng, eng, expectations)
    assert same["changed"] == [] and same["keep"] == "defaults"  # no improvement: keep ncu's


def test_expectations_from_the_fixture_readme(tmp_path):
    table = cal.load_expectations(REPO / "tests" / "fixtures" / "profiles" / "README.md")
    assert table["naive_gemm"] == ["mem.smem_tiling"] and table["tiny_grid"] == ["launch.fill_gpu"]
    assert len(table) == 16
    mapping = tmp_path / "e.yaml"
    mapping.write_text("a: mem.coalesce\nb: [smem.pad, smem.swizzle]\n")
    assert cal.load_expectations(mapping) == {"a": ["mem.coalesce"], "b": ["smem.pad", "smem.swizzle"]}
    mapping.write_text("- not a mapping\n")
    with pytest.raises(InputError, match="expected a mapping"):
        cal.load_expectations(mapping)


# ------------------------------------------------------------------------------------- CLI


def run(*args):
    from skillbase.commands.calibrate import calibrate

    return CliRunner().invoke(calibrate, [str(a) for a in args])


def test_cli_writes_the_file_and_json(tmp_path):
    write_population(tmp_path / "p", 30, 8401)
    out = tmp_path / "t.yaml"
    result = run(tmp_path / "p", "--out", out)
    assert result.exit_code == 0, result.output
    assert "sol_high" in result.output and "wrote" in result.output and out.is_file()
    result = run(tmp_path / "p", "--json", "--compare")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["calibration"]["provenance"]["kernels"] == 30
    quantities = {q["quantity"] for q in data["calibration"]["quantities"]}
    assert quantities >= {"sol_max", "stall_group_top_share", "occupancy_gap"}
    assert "changed" in data["compare"]
    result = run(tmp_path / "p", "--out", "-")
    assert result.exit_code == 0 and result.output.startswith("# Thresholds calibrated")


def test_cli_compare_with_expectations_and_only(tmp_path):
    write_population(tmp_path / "p", 30, 8402)
    expect = tmp_path / "expect.yaml"
    expect.write_text("k00: mem.smem_tiling\nk01: mem.smem_tiling\n")
    result = run(tmp_path / "p", "--expect", expect, "--only", "sol_low,sol_high", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data["calibration"]["thresholds"]) == {"sol_low", "sol_high"}
    assert data["compare"]["advise"]["expected_kernels"] == 2
    assert data["compare"]["keep"] in ("calibrated", "defaults")
    assert [row["quantity"] for row in data["compare"]["ablation"]] == ["sol_max"]
    result = run(tmp_path / "p", "--expect", expect)
    assert result.exit_code == 0 and "verdict" in result.output and "top-3 hits" in result.output


def test_cli_errors(tmp_path):
    write_population(tmp_path / "p", 5, 8403)
    result = run(tmp_path / "p")
    assert isinstance(result.exception, InputError) and "at least 30" in result.exception.message
    result = run()
    assert isinstance(result.exception, InputError) and "give the profiles" in result.exception.message
    result = run(tmp_path / "nothing-here")
    assert isinstance(result.exception, InputError) and "no such file or folder" in result.exception.message
    result = run(tmp_path / "p", "--min", "3", "--only", "sol_hgih")
    assert isinstance(result.exception, InputError) and "unknown threshold" in result.exception.message
    (tmp_path / "empty").mkdir()
    result = run(tmp_path / "empty")
    assert isinstance(result.exception, InputError) and "no *.ncu-rep" in result.exception.message


def test_cli_on_the_real_h200_fixtures_with_a_lowered_floor():
    """16 real reports (17 kernels): refused by default, calibrated with --min; the verdict is reported."""
    profiles = REPO / "tests" / "fixtures" / "profiles"
    result = run(profiles)
    assert isinstance(result.exception, InputError) and "17 kernel(s)" in result.exception.message
    result = run(profiles, "--min", "10", "--expect", profiles / "README.md", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["calibration"]["provenance"]["gpu"] == "NVIDIA H200"
    adv = data["compare"]["advise"]
    assert adv["expected_kernels"] == 16
    better = adv["calibrated"]["top3"] > adv["default"]["top3"]
    assert data["compare"]["keep"] == ("calibrated" if better else "defaults")


def test_a_source_beside_the_report_brings_static_features(tmp_path):
    """`skills verify --keep-profiles` writes K.before.ncu-rep with K.before.cu beside it; the
    member then carries the kernel's static features, as advise saw them when ranking."""
    import shutil

    from skillbase.engine import Engine

    population = Path(__file__).resolve().parents[2] / "results" / "nvidia-h200" / "population"
    for name in ("mem.coalesce.before.ncu-rep.xz", "mem.coalesce.before.cu"):   # committed xz-compressed
        shutil.copyfile(population / name, tmp_path / name)
    with_source = cal.load_population([tmp_path], Engine.load(), focus_only=True)
    (tmp_path / "mem.coalesce.before.cu").unlink()
    without = cal.load_population([tmp_path], Engine.load(), focus_only=True)
    static = lambda member: member.evidence.static   # noqa: E731
    assert static(with_source[0] if isinstance(with_source, list) else with_source.members[0])
    assert not static(without[0] if isinstance(without, list) else without.members[0])


# -------------------------------------------------------------------------------- the pipeline


def test_the_pipeline_as_a_library_call(tmp_path):
    write_population(tmp_path / "p", 30, 8501)
    out = tmp_path / "t.yaml"
    run = cal.calibrate_and_compare([tmp_path / "p"], out=out, compare_files=True)
    assert run.written == str(out) and out.read_text() == run.thresholds_text
    assert len(run.population.members) == 30 and run.calibration.thresholds["sol_high"] > 0
    assert run.comparison["b"]["path"] == str(out) and "ablation" not in run.comparison   # no expectations
    assert list(run.to_json()) == ["schema_version", "calibration", "written", "compare"]
    existing = cal.calibrate_and_compare([tmp_path / "p"], thresholds=out, compare_files=True)
    assert existing.calibration is None and existing.comparison["changed"] == run.comparison["changed"]
    with pytest.raises(ValueError, match="nothing is calibrated"):
        cal.calibrate_and_compare([tmp_path / "p"], out=out, thresholds=out)


def test_cli_prints_the_file_and_refuses_thresholds_with_out(tmp_path):
    write_population(tmp_path / "p", 30, 8502)
    result = run(tmp_path / "p", "--out", "-", "--expect", tmp_path / "missing.yaml")
    assert isinstance(result.exception, InputError) and "no such expectations file" in result.exception.message
    result = run(tmp_path / "p", "--thresholds", DEFAULTS, "--out", "-")
    assert isinstance(result.exception, InputError) and "cannot be combined with --out" in result.exception.message
