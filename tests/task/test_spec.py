"""Task spec loading: the bundled examples load, and every kind of mistake is one line naming file and field."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path

import pytest
import yaml

from skillbase.errors import InputError
from skillbase.task import load_task
from skillbase.task.spec import DEFAULT_TOLERANCES

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = ["vector_add", "naive_sgemm", "conv2d_direct"]

SGEMM_CU = textwrap.dedent("""\
    __global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {}
    extern "C" void sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
        k<<<1, 1>>>(A, B, C, M, N, K);
    }
    """)

BASE = {
    "launcher": "sgemm",
    "args": [
        {"name": "A", "dtype": "f32", "shape": ["M", "K"], "role": "in"},
        {"name": "B", "dtype": "f32", "shape": ["K", "N"], "role": "in"},
        {"name": "C", "dtype": "f32", "shape": ["M", "N"], "role": "out"},
        {"name": "M", "dtype": "i32", "value": "M"},
        {"name": "N", "dtype": "i32", "value": "N"},
        {"name": "K", "dtype": "i32", "value": "K"},
    ],
    "sizes": {"presets": {"small": {"M": 64, "N": 64, "K": 64}, "default": {"M": 256, "N": 256, "K": 256}},
              "irregular": {"M": 100, "N": 103, "K": 97}},
    "work": {"flops": "2*M*N*K", "bytes": "4*(M*K + K*N + M*N)"},
}


def write_task(tmp_path: Path, spec: dict | str, source: str = SGEMM_CU, name: str = "k") -> Path:
    cu = tmp_path / f"{name}.cu"
    cu.write_text(source)
    text = spec if isinstance(spec, str) else yaml.safe_dump(spec, sort_keys=False)
    (tmp_path / f"{name}.task.yaml").write_text(text)
    return cu


def error_of(tmp_path: Path, mutate=None, source: str = SGEMM_CU) -> str:
    spec = copy.deepcopy(BASE)
    if mutate:
        mutate(spec)
    cu = write_task(tmp_path, spec, source)
    with pytest.raises(InputError) as info:
        load_task(cu)
    message = info.value.message
    assert "\n" not in message, "errors are one line"
    assert "k.task.yaml" in message, "errors name the spec file"
    return message + " | " + (info.value.hint or "")


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_load_and_resolve_every_preset(name):
    spec = load_task(REPO / "examples" / name / f"{name}.cu")
    assert spec.irregular, "every task verifies an irregular size"
    for preset in list(spec.presets) + ["irregular"]:
        resolved = spec.resolve(preset)
        assert resolved.flops > 0 and resolved.bytes > 0
        assert all(a.numel > 0 for a in resolved.args)


def test_memory_bound_example_has_a_size_beyond_l2():
    spec = load_task(REPO / "examples/vector_add/vector_add.cu")
    l2 = 60 * 1024 * 1024
    assert any(spec.resolve(p).data_bytes > 2 * l2 for p in spec.scored)


def test_resolve_sgemm_shapes_scalars_and_work(tmp_path):
    spec = load_task(write_task(tmp_path, BASE))
    r = spec.resolve({"M": 10, "N": 20, "K": 30})
    assert r.arg("A").shape == (10, 30) and r.arg("C").shape == (10, 20)
    assert r.arg("C").nbytes == 10 * 20 * 4
    assert r.scalars == {"M": 10, "N": 20, "K": 30}
    assert r.flops == 2 * 10 * 20 * 30 and r.bytes == 4 * (300 + 600 + 200)
    assert spec.scored == ("default",)
    assert [name for name, _ in spec.verify_sizes()] == ["default", "irregular"]


def test_spec_can_be_found_from_the_yaml_path(tmp_path):
    cu = write_task(tmp_path, BASE)
    assert load_task(cu.with_name("k.task.yaml")).launcher == "sgemm"


def test_missing_spec_points_at_init(tmp_path):
    cu = tmp_path / "lonely.cu"
    cu.write_text(SGEMM_CU)
    with pytest.raises(InputError) as info:
        load_task(cu)
    assert "lonely.task.yaml" in info.value.message and "skillbase init" in info.value.hint


def test_scientific_floats_without_a_dot_are_numbers(tmp_path):
    text = yaml.safe_dump(BASE, sort_keys=False) + "tolerance: {rtol: 1e-3, atol_scale: 2e-6}\n"
    spec = load_task(write_task(tmp_path, text))
    assert spec.tolerance_for("C") == (1e-3, 2e-6)


def test_unknown_size_symbol_with_did_you_mean(tmp_path):
    def bad(s):
        s["args"][0]["shape"] = ["M", "Kk"]
    message = error_of(tmp_path, bad)
    assert "args[0].shape[1]" in message and "unknown size symbol 'Kk'" in message and "did you mean 'K'" in message


def test_arg_count_mismatch_shows_the_signature(tmp_path):
    message = error_of(tmp_path, lambda s: s["args"].pop())
    assert "5 given" in message and "takes 6" in message and "sgemm(const float* A" in message


def test_arg_order_mismatch(tmp_path):
    def swap(s):
        s["args"][0], s["args"][1] = s["args"][1], s["args"][0]
    assert "order differs" in error_of(tmp_path, swap)


def test_pointer_given_a_value(tmp_path):
    def bad(s):
        s["args"][0] = {"name": "A", "dtype": "f32", "value": "M"}
    message = error_of(tmp_path, bad)
    assert "args[0]" in message and "pointer" in message


def test_scalar_given_a_shape(tmp_path):
    def bad(s):
        s["args"][3] = {"name": "M", "dtype": "i32", "shape": ["M"], "role": "in"}
    assert "by value" in error_of(tmp_path, bad)


def test_const_pointer_cannot_be_an_output(tmp_path):
    def bad(s):
        s["args"][0]["role"] = "out"
    message = error_of(tmp_path, bad)
    assert "args[0].role" in message and "const" in message


def test_dtype_must_match_the_c_type(tmp_path):
    def bad(s):
        s["args"][2]["dtype"] = "f64"
    message = error_of(tmp_path, bad)
    assert "args[2].dtype" in message and "f32" in message


def test_bad_dtype_is_a_schema_error_with_suggestion(tmp_path):
    def bad(s):
        s["args"][2]["dtype"] = "f23"
    message = error_of(tmp_path, bad)
    assert "args[2].dtype" in message and "did you mean 'f32'" in message


def test_missing_launcher_lists_what_exists(tmp_path):
    def bad(s):
        s["launcher"] = "sgem"
    message = error_of(tmp_path, bad)
    assert "'sgem'" in message and "found: sgemm" in message and "did you mean 'sgemm'" in message


def test_file_without_any_launcher(tmp_path):
    message = error_of(tmp_path, source="__global__ void k(float* x) {}\n")
    assert "defines no extern" in message


def test_preset_missing_a_symbol(tmp_path):
    def bad(s):
        del s["sizes"]["presets"]["default"]["K"]
    message = error_of(tmp_path, bad)
    assert "sizes.presets.default" in message and "missing size symbol K" in message


def test_irregular_size_is_required_and_must_be_irregular(tmp_path):
    def missing(s):
        del s["sizes"]["irregular"]
    assert "irregular" in error_of(tmp_path, missing)

    def regular(s):
        s["sizes"]["irregular"] = {"M": 128, "N": 256, "K": 64}
    assert "multiple of 32" in error_of(tmp_path, regular)


def test_no_output_argument(tmp_path):
    source = SGEMM_CU.replace("float* C", "const float* C")

    def bad(s):
        s["args"][2]["role"] = "in"
    assert "no argument has role out or inout" in error_of(tmp_path, bad, source)


def test_out_argument_cannot_have_init(tmp_path):
    def bad(s):
        s["args"][2]["init"] = {"dist": "ones"}
    message = error_of(tmp_path, bad)
    assert "args[2].init" in message and "poisons" in message


def test_array_without_role(tmp_path):
    def bad(s):
        del s["args"][0]["role"]
    assert "args[0].role" in error_of(tmp_path, bad)


def test_unknown_field_suggests_the_right_one(tmp_path):
    def bad(s):
        s["args"][0]["shap"] = s["args"][0].pop("shape")
    message = error_of(tmp_path, bad)
    assert "unknown field 'shap'" in message and "did you mean 'shape'" in message


def test_a_key_yaml_reads_as_a_number_is_named_not_a_crash(tmp_path):
    # `1e3:` is a float to the spec reader (exponent floats on), and the schema check sorts key names
    text = yaml.safe_dump(BASE, sort_keys=False).replace("    small:", "    1e3:", 1)
    assert "1e3:" in text
    write_task(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_task(tmp_path / "k.cu")
    message = info.value.message
    assert "sizes.presets: key 1000.0 is a float, not a name" in message and "\n" not in message
    assert "quotes" in info.value.hint


def test_scored_preset_must_exist(tmp_path):
    def bad(s):
        s["sizes"]["scored"] = ["defualt"]
    assert "did you mean 'default'" in error_of(tmp_path, bad)


def test_non_integral_shape_is_reported_with_sizes(tmp_path):
    def bad(s):
        s["args"][0]["shape"] = ["M/3", "K"]
    message = error_of(tmp_path, bad)
    assert "args[0].shape[0]" in message and "not a whole number" in message


def test_unsafe_expression_in_spec(tmp_path):
    def bad(s):
        s["work"]["flops"] = "__import__('os').system('true')"
    message = error_of(tmp_path, bad)
    assert "work.flops" in message and "not allowed" in message


def test_todo_left_by_init_is_named(tmp_path):
    def bad(s):
        s["args"][0]["shape"] = ["TODO"]
    assert "still TODO" in error_of(tmp_path, bad)


def test_allow_entries_are_checked(tmp_path):
    def bad(s):
        s["allow"] = ["cublass"]
    assert "allow[0]" in error_of(tmp_path, bad)


def test_yaml_syntax_error_names_the_line(tmp_path):
    cu = write_task(tmp_path, "launcher: sgemm\nargs: [\n  {name: A\n")
    with pytest.raises(InputError) as info:
        load_task(cu)
    assert "k.task.yaml:4:1:" in info.value.message   # file:line:col, like every other data file


def test_default_tolerances_and_overrides(tmp_path):
    spec = copy.deepcopy(BASE)
    spec["args"][2]["tolerance"] = {"rtol": 1e-3}
    loaded = load_task(write_task(tmp_path, spec))
    assert loaded.tolerance_for("C") == (1e-3, DEFAULT_TOLERANCES["f32"].atol_scale)
    # atol scales with the reference's magnitude (finite values only)
    import numpy as np
    rtol, atol = loaded.tolerance_for("C", ref=np.array([1.0, -200.0, np.inf]))
    assert atol == pytest.approx(200 * DEFAULT_TOLERANCES["f32"].atol_scale)
    assert DEFAULT_TOLERANCES["i32"].exact and DEFAULT_TOLERANCES["bf16"].rtol == 1e-2
    assert DEFAULT_TOLERANCES["f64"].rtol < DEFAULT_TOLERANCES["f32"].rtol < DEFAULT_TOLERANCES["bf16"].rtol


def test_sweep_scales_other_symbols(tmp_path):
    spec = copy.deepcopy(BASE)
    spec["sizes"]["sweep"] = {"symbol": "M", "values": [32, 64], "scale": {"N": "M", "K": "2*M"}}
    loaded = load_task(write_task(tmp_path, spec))
    assert loaded.sweep_sizes() == [{"M": 32, "N": 32, "K": 64}, {"M": 64, "N": 64, "K": 128}]


def test_sweep_symbol_must_exist(tmp_path):
    def bad(s):
        s["sizes"]["sweep"] = {"symbol": "Q", "values": [1]}
    assert "sizes.sweep.symbol" in error_of(tmp_path, bad)


def test_scalar_overflow_is_caught(tmp_path):
    def bad(s):
        s["args"][3]["value"] = "M*2**40"
    assert "overflows i32" in error_of(tmp_path, bad)


def test_init_needs_exactly_one_source(tmp_path):
    def bad(s):
        s["args"][0]["init"] = {"dist": "uniform", "hook": "gen.py:make"}
    assert "exactly one of dist, generator (with parts) or hook" in error_of(tmp_path, bad)


def test_init_parameters_belong_to_the_dist(tmp_path):
    def bad(s):
        s["args"][0]["init"] = {"dist": "uniform", "mean": 3}
    message = error_of(tmp_path, bad)
    assert "args[0].init.mean" in message and "high, low" in message


def test_reference_file_must_exist(tmp_path):
    def bad(s):
        s["reference"] = {"python": "ref.py:compute"}
    assert "ref.py not found" in error_of(tmp_path, bad)


def test_python_reference_is_loadable(tmp_path):
    (tmp_path / "ref.py").write_text("def compute(inputs, sizes):\n    return {'C': inputs['A'] @ inputs['B']}\n")
    spec = copy.deepcopy(BASE)
    spec["reference"] = {"python": "ref.py:compute"}
    loaded = load_task(write_task(tmp_path, spec))
    inputs = loaded.make_inputs("small", 0)
    out = loaded.reference_callable()(inputs, loaded.sizes_for("small"))
    assert out["C"].shape == (64, 64)


def test_rescale_false_keeps_a_domain_out_of_the_scaled_call(tmp_path):
    """`rescale: false` marks a range that is the kernel's domain; the x4 verification call leaves it."""
    import types

    import numpy as np

    from skillbase.harness.session import Session

    spec = copy.deepcopy(BASE)
    spec["args"][0]["init"] = {"dist": "uniform", "low": -1, "high": 1, "rescale": False}
    spec["args"][1]["init"] = {"dist": "uniform", "low": -1, "high": 1}
    task = load_task(write_task(tmp_path, spec))
    fake = types.SimpleNamespace(spec=task)
    values = np.random.default_rng().uniform(-1, 1, 64).astype(np.float32)
    assert np.array_equal(Session._scaled(fake, "A", values), values)          # the domain stays
    assert np.array_equal(Session._scaled(fake, "B", values), values * 4)      # an ordinary range is scaled

    spec["args"][0]["init"]["rescale"] = "no"
    with pytest.raises(InputError, match="rescale"):
        load_task(write_task(tmp_path, spec))
