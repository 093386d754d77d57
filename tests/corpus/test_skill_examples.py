"""Every skill's verified example: `skills/<cat>/<id>/examples/{before,after}.cu`, `task.yaml`, `expect.yaml`.

An example shows one transformation at a size that fills an H200. These tests hold it to that:

- both kernels compile for sm_90 (`nvcc -arch=sm_90 -c -Xptxas -v`), or for the arch task.yaml names
  (`arch: sm_90a`: `-gencode=arch=compute_90a,code=sm_90a`, as the harness builds it), once per file, two at a
  time, the log cached under ~/.cache/skillbase/example-ptxas by source hash and nvcc version);
- `task.yaml` is a valid task spec for *both* files (same launcher signature, same arguments), with a
  `default` preset that is scored and an irregular size;
- the static features (`skillbase.evidence.static.features`) and the ptxas report
  (`skillbase.cuda.ptxas.parse_ptxas`) satisfy `expect.yaml`, and the `after` side's assertions
  would FAIL on `before` (so the expectation really sees the transformation);
- on a GPU (`-m gpu`), `after` matches `before` within the task tolerance on the small, irregular and
  default sizes, and is faster on the default size.

expect.yaml:

    why: one line, which transformation the example shows
    kernel: NAME                      # or {before: NAME, after: NAME}; optional when a file has one kernel
    before: {PATH: {OP: VALUE}, ...}  # static-feature paths, e.g. kernel.shared.static_bytes,
    after:  {PATH: {OP: VALUE}, ...}  #   file.kernel_launches, launchers.L.launches[0].block_threads
    ptxas_before: {FIELD: {OP: VALUE}}   # registers, stack_frame_bytes, spill_store_bytes, shared_bytes, ...
    ptxas_after:  {FIELD: {OP: VALUE}}
    changes: {PATH or ptxas.FIELD: increases | decreases | differs}   # after compared with before
    todo: [SECTION.PATH, ...]         # known gaps of the analysers: these assertions are expected to
                                      # fail today (like semgrep's todoruleid) and must be removed once they pass

OPs: eq ne gt ge lt le (numbers, booleans, null), len_eq len_ge (lists), contains / lacks (a list holds
/ does not hold a value), any / none (a list holds / holds no element whose fields include the given ones).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import operator
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SKILLS = REPO / "skills"
EXAMPLES = sorted(p for p in SKILLS.glob("*/*/examples") if (p / "task.yaml").is_file())
IDS = [p.parent.name for p in EXAMPLES]
SIDES = ("before", "after")
# Skills whose effect lies outside one launcher call (persisting-L2 windows, graphs, streams) have examples whose
# task opts in to exactly that capability (`allow: [streams]`, ...; static_check.CAPABILITIES), like a library
# call (`allow: [cub]`, cmp.use_library); the layout test then lets the capability's own calls through.
OPS = {"eq", "ne", "gt", "ge", "lt", "le", "len_eq", "len_ge", "any", "none", "contains", "lacks"}


def _expect(example: Path) -> dict:
    return yaml.safe_load((example / "expect.yaml").read_text())


def _capability_words(example: Path) -> str:
    """The identifiers the task's allowed capabilities admit (the static check itself judges where)."""
    from skillbase.harness.static_check import CAPABILITIES

    allow = (yaml.safe_load((example / "task.yaml").read_text()) or {}).get("allow") or []
    return " ".join(word for c in CAPABILITIES if c.name in allow for word in (*c.in_hooks, *c.anywhere))


# --------------------------------------------------------------------------- layout (no tools needed)

def test_examples_exist():
    assert len(EXAMPLES) >= 48, f"only {len(EXAMPLES)} skills have examples"


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_example_layout(example: Path):
    skill = example.parent.name
    assert example.parent.parent.name == skill.split(".")[0], "category folder must be the id's prefix"
    for name in ("before.cu", "after.cu", "task.yaml", "expect.yaml"):
        assert (example / name).is_file(), f"missing {name}"
    for side in SIDES:
        text = (example / f"{side}.cu").read_text()
        assert text.startswith(f"// {skill}, {side}"), f"{side}.cu must open with '// {skill}, {side}: ...'"
        hooks = (yaml.safe_load((example / "task.yaml").read_text()) or {}).get("hooks") or {}
        assert text.count('extern "C"') == 1 + len(hooks), \
            f"{side}.cu needs exactly one extern \"C\" launcher (and the task's hooks)"
        # the harness's bans (VERIFY.md): nothing outside the launcher's device work (code, not comments)
        code = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
        allowed = _capability_words(example)
        for banned in ("printf", "cudaMalloc", "cudaFree", "cudaDeviceSynchronize", "cudaStreamCreate",
                       "cudaEventRecord", "cudaMemcpy", "AccessPolicyWindow", "cublas", "std::thread", "clock("):
            if banned not in allowed:
                assert banned not in code, f"{side}.cu uses {banned}, which the harness bans"
    expect = _expect(example)
    assert isinstance(expect.get("why"), str) and expect["why"].strip(), "expect.yaml needs a one-line why"
    unknown = set(expect) - {"why", "kernel", "before", "after", "ptxas_before", "ptxas_after", "changes", "todo"}
    assert not unknown, f"unknown expect.yaml keys {unknown}"
    assert expect.get("after") or expect.get("ptxas_after") or expect.get("changes"), "nothing asserted on after"
    for section in ("before", "after", "ptxas_before", "ptxas_after"):
        for path, cond in (expect.get(section) or {}).items():
            assert isinstance(cond, dict) and set(cond) <= OPS and cond, f"{section}.{path}: bad condition {cond}"
    for path, how in (expect.get("changes") or {}).items():
        assert how in ("increases", "decreases", "differs"), f"changes.{path}: {how}"


# --------------------------------------------------------------------------- compilation (nvcc)

def _cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "skillbase" / "example-ptxas"


@functools.cache
def _nvcc_version() -> str:
    return subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout


def _arch_flags(cu: Path) -> list[str]:
    """The target flags the harness uses for this example: its task.yaml's `arch:` (sm_90a for wgmma,
    setmaxnreg, TMA multicast) or sm_90."""
    from skillbase.harness.build import arch_flags

    spec = yaml.safe_load((cu.parent / "task.yaml").read_text()) or {}
    return arch_flags(spec.get("arch") or "sm_90")


def _nvcc_compile(cu: Path, out_dir: Path) -> tuple[int, str]:
    """(returncode, log) of `nvcc -arch=sm_90 -c -Xptxas -v` (the example's arch), cached by source and nvcc version."""
    cmd = ["nvcc", *_arch_flags(cu), "-c", "-Xptxas", "-v"]
    key = hashlib.sha256("\0".join([_nvcc_version(), *cmd, cu.read_text()]).encode()).hexdigest()
    cached = _cache_dir() / f"{key}.json"
    if cached.is_file():
        try:
            data = json.loads(cached.read_text())
            return data["rc"], data["log"]
        except (ValueError, KeyError):
            pass
    obj = out_dir / f"{cu.parent.parent.name}.{cu.stem}.o"
    proc = subprocess.run([*cmd, str(cu), "-o", str(obj)], capture_output=True, text=True, timeout=300)
    result = (proc.returncode, proc.stdout + proc.stderr)
    if proc.returncode == 0:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            cached.write_text(json.dumps({"rc": result[0], "log": result[1]}))
        except OSError:
            pass                                  # a read-only home only costs the cache
    return result


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[tuple[str, str], tuple[int, str]]:
    """(skill, side) -> (returncode, nvcc log), every file compiled once, two at a time."""
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc on PATH")
    out = tmp_path_factory.mktemp("examples_obj")
    jobs = [(ex.parent.name, side, ex / f"{side}.cu") for ex in EXAMPLES for side in SIDES]
    with ThreadPoolExecutor(max_workers=int(os.environ.get("SKILLBASE_NVCC_JOBS", "2"))) as pool:
        results = list(pool.map(lambda job: _nvcc_compile(job[2], out), jobs))
    return {(skill, side): res for (skill, side, _), res in zip(jobs, results, strict=True)}


@pytest.mark.nvcc
@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_example_compiles(example: Path, compiled):
    for side in SIDES:
        rc, log = compiled[(example.parent.name, side)]
        assert rc == 0, f"{side}.cu does not compile for sm_90:\n{log}"
        assert "warning" not in log.lower() or "ptxas info" in log, log


# --------------------------------------------------------------------------- task spec

def _load_spec(example: Path, side: str):
    """load_task on a copy laid out as K.cu + K.task.yaml (the loader's convention)."""
    from skillbase import task

    tmp = Path(tempfile.mkdtemp(prefix="skill_example_"))
    shutil.copy(example / f"{side}.cu", tmp / "k.cu")
    shutil.copy(example / "task.yaml", tmp / "k.task.yaml")
    for extra in example.glob("*.py"):              # init hooks live beside the spec
        shutil.copy(extra, tmp / extra.name)
    return task.load_task(tmp / "k.cu")


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_task_spec_valid(example: Path):
    before, after = (_load_spec(example, side) for side in SIDES)
    assert before.launcher == after.launcher
    assert "default" in before.presets and "default" in before.scored, "a scored `default` preset is required"
    assert len(before.presets) >= 2, "a small preset besides default is required"
    assert any(v % 32 for v in before.irregular.values()), "the irregular size must not be a multiple of 32"
    resolved = before.resolve("default")
    # memory-bound examples must not fit the 60 MB L2; compute-bound ones (>= 8 flop/byte) may
    if resolved.flops < 8 * resolved.bytes:
        assert resolved.bytes > 2 * 60e6, f"default size moves only {resolved.bytes / 1e6:.0f} MB: fits the L2"


# --------------------------------------------------------------------------- static features and ptxas

_INDEX = re.compile(r"^([^\[]+)((?:\[\d+\])*)$")


def _resolve(features: dict, kernel: str, path: str):
    parts = path.split(".")
    if parts[0] == "kernel":
        node, parts = features["kernels"][kernel], parts[1:]
    elif parts[0] == "file":
        node, parts = features["file"], parts[1:]
    elif parts[0] == "launchers":
        node, parts = features["launchers"], parts[1:]
    else:
        raise AssertionError(f"path {path} must start with kernel., file. or launchers.")
    try:
        for part in parts:
            m = _INDEX.match(part)
            assert m, f"bad path component {part} in {path}"
            node = node[m.group(1)]
            for idx in re.findall(r"\[(\d+)\]", m.group(2)):
                node = node[int(idx)]
    except (KeyError, IndexError, TypeError):
        return MISSING                                # a feature the analyser does not produce
    return node


class _Missing:
    def __repr__(self):
        return "missing"


MISSING = _Missing()


def _check(value, cond: dict) -> list[str]:
    """Failures of `value` against {op: expected}."""
    bad = []
    for op, want in cond.items():
        if op in ("any", "none"):
            hit = any(isinstance(v, dict) and all(v.get(k) == w for k, w in want.items()) for v in value or [])
            ok = hit if op == "any" else not hit
        elif op in ("contains", "lacks"):
            hit = isinstance(value, list) and want in value
            ok = hit if op == "contains" else (isinstance(value, list) and not hit)
        elif op in ("len_eq", "len_ge"):
            ok = value is not None and (len(value) == want if op == "len_eq" else len(value) >= want)
        elif op in ("eq", "ne"):
            ok = (value == want) if op == "eq" else (value != want)
        else:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and {
                "gt": value > want, "ge": value >= want, "lt": value < want, "le": value <= want}[op]
        if not ok:
            bad.append(f"{op} {want!r} (observed {value!r})")
    return bad


def _kernel_name(expect: dict, side: str, features: dict) -> str:
    k = expect.get("kernel")
    if isinstance(k, dict):
        k = k[side]
    if k is None:
        names = list(features["kernels"])
        assert len(names) == 1, f"{side}.cu has kernels {names}: name one in expect.yaml"
        k = names[0]
    assert k in features["kernels"], f"kernel {k} not in {side}.cu (found {list(features['kernels'])})"
    return k


@pytest.fixture(scope="module")
def analysed(compiled):
    from skillbase.cuda import ptxas
    from skillbase.evidence.static import features as static
    out = {}
    for ex in EXAMPLES:
        for side in SIDES:
            rc, log = compiled[(ex.parent.name, side)]
            out[(ex.parent.name, side)] = (static.static_features(ex / f"{side}.cu"),
                                           ptxas.parse_ptxas(log) if rc == 0 else {})
    return out


def _evaluate(expect: dict, section: str, features: dict, ptx: dict, kernel: str) -> list[str]:
    failures = []
    for path, cond in (expect.get(section) or {}).items():
        if section.startswith("ptxas"):
            assert kernel in ptx, f"ptxas reported no kernel {kernel} (got {list(ptx)})"
            value = ptx[kernel].get(path)
        else:
            value = _resolve(features, kernel, path)
        failures += [f"{section}.{path}: {msg}" for msg in _check(value, cond)]
    return failures


def _split_todo(expect: dict, failures: list[str]) -> tuple[list[str], list[str]]:
    """(real failures, todo assertions that unexpectedly pass)."""
    todo = set(expect.get("todo") or ())
    real = [f for f in failures if f.split(": ", 1)[0] not in todo]
    failed_todo = {f.split(": ", 1)[0] for f in failures} & todo
    return real, sorted(todo - failed_todo)


@pytest.mark.nvcc
@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_expectations_hold(example: Path, analysed):
    expect = _expect(example)
    skill = example.parent.name
    feats = {side: analysed[(skill, side)] for side in SIDES}
    kernels = {side: _kernel_name(expect, side, feats[side][0]) for side in SIDES}
    failures = []
    for side in SIDES:
        f, p = feats[side]
        failures += _evaluate(expect, side, f, p, kernels[side])
        failures += _evaluate(expect, f"ptxas_{side}", f, p, kernels[side])
    for path, how in (expect.get("changes") or {}).items():
        values = []
        for side in SIDES:
            f, p = feats[side]
            values.append(p[kernels[side]].get(path.split(".", 1)[1]) if path.startswith("ptxas.")
                          else _resolve(f, kernels[side], path))
        b, a = values
        ok = {"increases": operator.gt, "decreases": operator.lt, "differs": operator.ne}[how](a, b)
        if not ok:
            failures.append(f"changes.{path}: {how} (before {b!r}, after {a!r})")
    failures, fixed = _split_todo(expect, failures)
    assert not failures, "\n".join(failures)
    assert not fixed, f"todo assertions now hold, move them out of todo: {fixed}"


@pytest.mark.nvcc
@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_after_assertions_see_the_transformation(example: Path, analysed):
    """The `after` assertions must fail on `before` (else they cannot tell the two apart)."""
    expect = _expect(example)
    if expect.get("changes"):
        return                                   # a before/after comparison is discriminating by itself
    skill = example.parent.name
    f, p = analysed[(skill, "before")]
    kernel = _kernel_name(expect, "before", f)
    missed = _evaluate(expect, "after", f, p, kernel) + _evaluate(expect, "ptxas_after", f, p, kernel)
    todo = set(expect.get("todo") or ())
    missed = [m for m in missed if m.split(": ", 1)[0] not in todo]
    if not missed and todo:
        pytest.xfail(f"only the todo assertions {sorted(todo)} would tell after from before (analyser gap)")
    assert missed, "every `after` assertion also holds for before.cu: the expectation cannot see the change"


# --------------------------------------------------------------------------- on a GPU: same results, faster

_CTYPES = {"i32": ctypes.c_int, "u32": ctypes.c_uint, "i64": ctypes.c_longlong, "f32": ctypes.c_float,
           "f64": ctypes.c_double, "u8": ctypes.c_ubyte, "i8": ctypes.c_byte}


def _build_shared(cu: Path, out: Path) -> ctypes.CDLL:
    so = out / f"{cu.parent.parent.name}.{cu.stem}.so"
    subprocess.run(["nvcc", "-O3", *_arch_flags(cu), "-shared", "-Xcompiler", "-fPIC", str(cu), "-o", str(so)],
                   check=True, capture_output=True, text=True, timeout=300)
    return ctypes.CDLL(str(so))


def _run(cp, fn, spec, resolved, inputs: dict, outs: dict):
    args = []
    for a in spec.args:
        if a.pointer:
            args.append(ctypes.c_void_p((outs[a.name] if a.name in outs else inputs[a.name]).data.ptr))
        else:
            args.append(_CTYPES[a.dtype](resolved.arg(a.name).value))
    fn(*args)


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_example_on_gpu(example: Path, tmp_path):
    cp = pytest.importorskip("cupy")
    spec = _load_spec(example, "before")
    libs = {side: _build_shared(example / f"{side}.cu", tmp_path) for side in SIDES}
    fns = {side: getattr(libs[side], spec.launcher) for side in SIDES}
    for fn in fns.values():
        fn.restype = None
    report = {"skill": example.parent.name}
    for preset in ("small", "irregular", "default"):
        resolved = spec.resolve(preset)
        for side in SIDES:          # the task's hooks.setup, once per size before its calls, as the harness does
            _hook(libs[side], spec, "setup", resolved)
        host = spec.make_inputs(preset, seed=1)
        inputs = {k: cp.asarray(v) for k, v in host.items()}
        # scratch is allocated and poisoned like an output (the launcher may not allocate) but never compared
        written = [a for a in spec.args if a.pointer and a.role in ("out", "inout", "scratch")]
        results = {}
        for side in SIDES:
            outs = {}
            for a in written:
                arg = resolved.arg(a.name)
                if a.role == "inout":
                    outs[a.name] = inputs[a.name].copy()
                else:                            # poison: NaN for floats, all-ones for ints
                    buf = cp.empty(arg.shape, dtype=host_dtype(a.dtype))
                    buf.view(cp.uint8).fill(0xFF)
                    outs[a.name] = buf
            _run(cp, fns[side], spec, resolved, inputs, outs)
            cp.cuda.runtime.deviceSynchronize()
            results[side] = {k: cp.asnumpy(v) for k, v in outs.items()}
        for a in (a for a in written if not a.scratch):
            import numpy as np
            ref = results["before"][a.name].astype(np.float64)
            got = results["after"][a.name].astype(np.float64)
            assert np.isfinite(ref).all(), f"{preset}: before left non-finite values in {a.name}"
            rtol, atol = spec.tolerance_for(a.name, ref=ref)
            err = np.abs(got - ref)
            bad = ~(err <= atol + rtol * np.abs(ref))
            report[f"{preset}.{a.name}.max_abs_err"] = float(err.max()) if err.size else 0.0
            assert not bad.any(), (f"{preset}: {int(bad.sum())} of {bad.size} elements of {a.name} differ "
                                   f"(max abs err {err.max():.3g}, atol {atol:.3g}, rtol {rtol:.3g})")
        if preset == "default":
            report.update(_time_pair(cp, fns, spec, resolved, inputs, outs))
    for side in SIDES:
        _hook(libs[side], spec, "teardown", None)
    _record(report)
    assert report["after_us"] < report["before_us"], f"after is not faster: {report}"


def _hook(lib, spec, kind: str, resolved) -> None:
    """Call the task's hooks.setup(<scalars>) (it must return 0) or hooks.teardown(), when the task names it."""
    name = spec.hooks.get(kind)
    if not name:
        return
    fn = getattr(lib, name)
    if kind == "teardown":
        fn.restype = None
        fn()
        return
    fn.restype = ctypes.c_int
    scalars = [_CTYPES[a.dtype](resolved.arg(a.name).value) for a in spec.args if not a.pointer]
    assert fn(*scalars) == 0, f"{name} failed"


def host_dtype(name: str):
    import numpy as np
    return {"f32": np.float32, "f64": np.float64, "bf16": np.uint16, "f16": np.float16, "i32": np.int32,
            "i64": np.int64, "u8": np.uint8, "i8": np.int8, "u32": np.uint32}[name]


def _time_pair(cp, fns, spec, resolved, inputs, outs, reps: int = 15) -> dict:
    """Median device time of each side, interleaved (A B A B), with the L2 flushed before each call."""
    flush = cp.empty(256 * 1024 * 1024, dtype=cp.uint8)    # > 4x the 60 MB L2
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = {side: [] for side in SIDES}
    for rep in range(reps + 2):
        for side in SIDES:
            flush.fill(rep & 0xFF)
            start.record()
            _run(cp, fns[side], spec, resolved, inputs, outs)
            stop.record()
            stop.synchronize()
            if rep >= 2:                                   # two warm-up rounds
                times[side].append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    med = {side: sorted(t)[len(t) // 2] for side, t in times.items()}
    spread = {side: sorted(t)[(3 * len(t)) // 4] - sorted(t)[len(t) // 4] for side, t in times.items()}
    return {"before_us": med["before"], "after_us": med["after"], "speedup": med["before"] / med["after"],
            "before_iqr_us": spread["before"], "after_iqr_us": spread["after"],
            "floor_us": max(resolved.bytes / 4.3e12, resolved.flops / 67e12) * 1e6}


def _record(report: dict) -> None:
    path = os.environ.get("SKILLBASE_EXAMPLES_REPORT")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps(report) + "\n")
