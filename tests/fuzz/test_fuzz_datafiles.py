"""Fuzzed YAML data files and task specs: every input loads or is one InputError, in time, and the
folder it sits in is left exactly as it was."""

from __future__ import annotations

import copy
import math

import yaml
from fuzz_kit import examples, snapshot, survive, unchanged
from hypothesis import given
from hypothesis import strategies as st

from skillbase.datafile.yamldoc import load_yaml
from skillbase.task import load_task

KERNEL = """\
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {}
extern "C" void sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
    k<<<1, 1>>>(A, B, C, M, N, K);
}
"""
SPEC = {
    "launcher": "sgemm",
    "args": [
        {"name": "A", "dtype": "f32", "shape": ["M", "K"], "role": "in"},
        {"name": "B", "dtype": "f32", "shape": ["K", "N"], "role": "in"},
        {"name": "C", "dtype": "f32", "shape": ["M", "N"], "role": "out", "tolerance": {"rtol": 1e-4}},
        {"name": "M", "dtype": "i32", "value": "M"},
        {"name": "N", "dtype": "i32", "value": "N"},
        {"name": "K", "dtype": "i32", "value": "K"},
    ],
    "sizes": {"presets": {"small": {"M": 64, "N": 64, "K": 64}}, "irregular": {"M": 100, "N": 103, "K": 97}},
    "tolerance": {"rtol": 1e-4, "atol_scale": 1e-5},
    "work": {"flops": "2*M*N*K", "bytes": "4*(M*K + K*N + M*N)"},
}
# Values a hostile spec would try, beside whatever hypothesis makes up.
HOSTILE = st.sampled_from([
    2 ** 60, 2 ** 200, -1, 0, math.nan, math.inf, -math.inf, "2**60", "2**2**2**40", "M" * 3000, "(" * 400 + "M",
    "__import__('os').system('true')", "M.__class__", "../outside.py:f", "/etc/passwd", "", None, True, [], {},
    "1e400", "-0", "M // 0", "ceil_div(M, 0)", "log2(0)", "max()", "\x00", "é" * 50,
])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=40), HOSTILE)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)
FRAGMENTS = st.sampled_from([
    "a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n",
    "[" * 3000, "- " * 2000, "key: 1\nkey: 2\n", "!!python/object/apply:os.system ['true']\n",
    "x: !!binary aGVsbG8=\n", "\ufeffa: 1\n", "a:\n\t- 1\n", "? [a, b]\n: c\n", "<<: {a: 1}\n",
    "%YAML 1.1\n---\na: 1\n", "a: 1\n---\nb: 2\n", "\x00\x01\x02", "'unterminated\n",
])


def paths(value, prefix=()):
    """Every path into a nested dict/list, for picking a place to mutate."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths(child, (*prefix, index))


def replaced(document, path, value):
    if not path:
        return value
    out = copy.deepcopy(document)
    holder = out
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    return out


@examples(150)
@given(text=st.one_of(st.text(max_size=300), FRAGMENTS, st.lists(FRAGMENTS, min_size=2, max_size=4).map("".join),
                      VALUES.map(lambda v: yaml.safe_dump(v, allow_unicode=True))))
def test_any_yaml_text_loads_or_is_one_input_error(tmp_path_factory, text):
    folder = tmp_path_factory.mktemp("yaml")
    path = folder / "f.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass") if "\ud800" not in text else path.write_bytes(b"")
    before = snapshot(folder)
    survive("yaml text", lambda: load_yaml(path))
    unchanged(before, snapshot(folder))


@examples(200)
@given(data=st.data())
def test_mutated_task_specs_load_or_name_the_field(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("spec")
    (folder / "k.cu").write_text(KERNEL)
    spec = copy.deepcopy(SPEC)
    for _ in range(data.draw(st.integers(1, 3))):
        sizes = [p for p in paths(spec) if p[:1] == ("sizes",) and len(p) == 4]
        if sizes and data.draw(st.booleans()):   # a plausible edit: another size, so some specs still load
            spec = replaced(spec, data.draw(st.sampled_from(sizes)), data.draw(st.integers(-10, 10**6)))
        else:
            path = data.draw(st.sampled_from(list(paths(spec))[1:]))
            spec = replaced(spec, path, data.draw(st.one_of(HOSTILE, VALUES)))
    try:
        text = yaml.safe_dump(spec, allow_unicode=True)
    except (yaml.YAMLError, UnicodeEncodeError):
        return
    (folder / "k.task.yaml").write_text(text, encoding="utf-8", errors="replace")
    before = snapshot(folder)
    survive("task spec", lambda: load_task(folder / "k.cu"))
    unchanged(before, snapshot(folder))


@examples(50)
@given(raw=st.binary(max_size=400))
def test_a_spec_of_arbitrary_bytes_is_one_input_error(tmp_path_factory, raw):
    folder = tmp_path_factory.mktemp("bytes")
    (folder / "k.cu").write_text(KERNEL)
    (folder / "k.task.yaml").write_bytes(raw)
    survive("spec bytes", lambda: load_task(folder / "k.cu"))
