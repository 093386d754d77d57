"""Scratch buffers and vendor-library tasks: `role: scratch`, `link:` and `hooks: {setup, teardown}`.

CPU: the loader accepts them and reports every mistake in one line; scratch never becomes an output
(and a spec whose only written arguments are scratch is refused: nothing would be verified); the
static check lets hooks allocate, synchronise and keep handles while still catching the same calls
in the launcher, in helpers and any call of a hook from outside; the build links the libraries
(cache key included); ctypes calls of the hooks on a gcc-built library; the bench's vendor specs.
GPU (`-m gpu`): a kernel that leaves garbage in scratch verifies; a failing or missing setup is a
one-line load failure; the matrix_mul cuBLAS implementation is verified and timed against its
baseline through `compare.compare_candidate`.
"""

from __future__ import annotations

import copy
import ctypes
import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from skillbase.errors import InputError
from skillbase.harness.static_check import check_source, errors_only
from skillbase.task import load_task
from skillbase.task.spec import LINKABLE, ROLES

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
VENDOR_SPECS = sorted(BENCH.glob("ops/*/vendor_*.task.yaml"))

# A two-pass reduction with a scratch buffer, plus setup/teardown hooks, as a task.
KERNEL = textwrap.dedent("""\
    #include <cuda_runtime.h>
    __global__ void partial_sums(const float* x, float* partial, int n) {
        __shared__ float s[256];
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        s[threadIdx.x] = i < n ? x[i] : 0.f;
        __syncthreads();
        for (int o = 128; o > 0; o >>= 1) {
            if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];
            __syncthreads();
        }
        if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
    }
    __global__ void finish(const float* partial, int blocks, float* out) {
        if (threadIdx.x == 0 && blockIdx.x == 0) {
            float t = 0.f;
            for (int b = 0; b < blocks; ++b) t += partial[b];
            out[0] = t;
        }
    }
    extern "C" int setup_sum(int n) { return n > 0 ? 0 : 1; }
    extern "C" void teardown_sum(void) {}
    extern "C" void vsum(const float* x, float* out, float* partial, int n) {
        int blocks = (n + 255) / 256;
        partial_sums<<<blocks, 256>>>(x, partial, n);
        finish<<<1, 32>>>(partial, blocks, out);
    }
    """)

SPEC = {
    "launcher": "vsum",
    "args": [
        {"name": "x", "dtype": "f32", "shape": ["n"], "role": "in"},
        {"name": "out", "dtype": "f32", "shape": [1], "role": "out"},
        {"name": "partial", "dtype": "f32", "shape": ["ceil_div(n, 256)"], "role": "scratch"},
        {"name": "n", "dtype": "i32", "value": "n"},
    ],
    "sizes": {"presets": {"default": {"n": 65536}, "large": {"n": 1 << 20}}, "irregular": {"n": 100003}},
    "tolerance": {"rtol": 1e-3, "atol_scale": 1e-4},
    "work": {"flops": "n", "bytes": "4*n"},
    "hooks": {"setup": "setup_sum", "teardown": "teardown_sum"},
}


def write_task(folder: Path, spec: dict, source: str = KERNEL, name: str = "vsum") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    cu = folder / f"{name}.cu"
    cu.write_text(source)
    (folder / f"{name}.task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return cu


def error_of(tmp_path: Path, mutate, source: str = KERNEL) -> str:
    spec = copy.deepcopy(SPEC)
    mutate(spec)
    cu = write_task(tmp_path, spec, source)
    with pytest.raises(InputError) as info:
        load_task(cu)
    message = info.value.message
    assert "\n" not in message and "vsum.task.yaml" in message, message
    return message + " | " + (info.value.hint or "")


# -- the task format -------------------------------------------------------------------------------

def test_schema_lists_the_roles_and_libraries_the_loader_knows():
    schema = json.loads((REPO / "skillbase" / "schemas" / "task.schema.json").read_text())
    assert schema["$defs"]["arg"]["properties"]["role"]["enum"] == list(ROLES)
    assert schema["properties"]["link"]["items"]["enum"] == list(LINKABLE)
    assert set(schema["properties"]["hooks"]["properties"]) == {"setup", "teardown"}


def test_scratch_link_and_hooks_load(tmp_path):
    spec = copy.deepcopy(SPEC)
    spec["link"] = ["cublas", "cufft"]
    spec["allow"] = ["cublas", "cufft"]
    task = load_task(write_task(tmp_path, spec))
    assert [a.name for a in task.outputs] == ["out"], "scratch is never an output"
    assert [a.name for a in task.scratch] == ["partial"]
    assert task.link == ("cublas", "cufft")
    assert task.hooks == {"setup": "setup_sum", "teardown": "teardown_sum"}
    assert task.hook_names == ("setup_sum", "teardown_sum")
    assert [a.name for a in task.scalar_args] == ["n"]
    inputs = task.make_inputs("default", 0)
    assert set(inputs) == {"x"}, "scratch is allocated and poisoned by the harness, never generated"
    resolved = task.resolve("irregular")
    assert resolved.arg("partial").shape == (391,) and resolved.arg("partial").role == "scratch"


def test_a_task_without_link_or_hooks_has_none(tmp_path):
    spec = copy.deepcopy(SPEC)
    del spec["hooks"]
    task = load_task(write_task(tmp_path, spec))
    assert task.link == () and task.hooks == {} and task.hook_names == ()


def test_only_scratch_written_is_a_spec_error(tmp_path):
    """Nothing would be verified: a scratch buffer must never be a way around verification."""
    def bad(s):
        s["args"][1]["role"] = "scratch"
    message = error_of(tmp_path, bad)
    assert "args: every written argument is scratch" in message and "nothing would be verified" in message


def test_scratch_cannot_have_init_or_tolerance(tmp_path):
    def init(s):
        s["args"][2]["init"] = {"dist": "zeros"}
    message = error_of(tmp_path, init)
    assert "args[2].init" in message and "scratch" in message and "poisons" in message

    def tolerance(s):
        s["args"][2]["tolerance"] = {"rtol": 0.1}
    assert "args[2].tolerance" in error_of(tmp_path, tolerance)


def test_const_scratch_is_an_error(tmp_path):
    source = KERNEL.replace("float* out, float* partial, int n) {\n    int blocks",
                            "float* out, const float* partial, int n) {\n    int blocks")
    assert "const float* partial" in source
    message = error_of(tmp_path, lambda s: None, source)
    assert "args[2].role" in message and "partial is scratch" in message


def test_scratch_cannot_be_a_generator_part(tmp_path):
    def bad(s):
        s["args"][0]["init"] = {"generator": "coo", "rows": 4, "cols": 4, "nnz": 2,
                                "parts": {"values": "x", "row": "partial", "col": "partial"}}
    assert "'partial' must be an in or inout array to be generated" in error_of(tmp_path, bad)


def test_unknown_role_names_scratch(tmp_path):
    def bad(s):
        s["args"][2]["role"] = "scrach"
    message = error_of(tmp_path, bad)
    assert "scratch" in message and "did you mean 'scratch'" in message


@pytest.mark.parametrize("name", ["cublass", "cudart", "nccl"])
def test_link_outside_the_toolkit_whitelist(tmp_path, name):
    message = error_of(tmp_path, lambda s: s.update(link=[name], allow=["cublas"]))
    assert message.startswith(str(tmp_path / "vsum.task.yaml") + ": link[0]: ")
    assert "allowed: cublas, cublasLt, cusparse, cufft, curand, cusolver, cudnn" in message
    if name == "cublass":
        assert "did you mean 'cublas'" in message


def test_a_linked_library_must_be_allowed(tmp_path):
    message = error_of(tmp_path, lambda s: s.update(link=["cublas"], allow=["cufft"]))
    assert "link[0]: cublas is linked but not in allow:" in message and "add cublas to allow:" in message


def test_hook_mistakes_are_one_line(tmp_path):
    def missing(s):
        s["hooks"]["setup"] = "setup_summ"
    message = error_of(tmp_path, missing)
    assert "hooks.setup: 'setup_summ' is not an extern \"C\" function defined in vsum.cu" in message
    assert "did you mean 'setup_sum'" in message

    def launcher(s):
        s["hooks"]["setup"] = "vsum"
    assert "hooks.setup: 'vsum' is the launcher" in error_of(tmp_path, launcher)

    def same(s):
        s["hooks"]["teardown"] = "setup_sum"
    assert "hooks.teardown" in error_of(tmp_path, same)

    def unknown(s):
        s["hooks"]["init"] = "setup_sum"
    message = error_of(tmp_path, unknown)
    assert "hooks.init" in message and "unknown field" in message

    def empty(s):
        s["hooks"] = {}
    assert "hooks" in error_of(tmp_path, empty)


def test_setup_must_take_the_launchers_scalars(tmp_path):
    wrong_count = KERNEL.replace("int setup_sum(int n)", "int setup_sum(int n, int m)")
    message = error_of(tmp_path, lambda s: None, wrong_count)
    assert "hooks.setup" in message and "scalar arguments in order (i32 n)" in message
    wrong_type = KERNEL.replace("int setup_sum(int n)", "int setup_sum(float n)")
    assert "hooks.setup" in error_of(tmp_path, lambda s: None, wrong_type)
    pointer = KERNEL.replace("int setup_sum(int n)", "int setup_sum(int* n)")
    assert "hooks.setup" in error_of(tmp_path, lambda s: None, pointer)
    teardown = KERNEL.replace("void teardown_sum(void)", "void teardown_sum(int n)")
    assert "hooks.teardown: teardown_sum takes 1 parameter(s); teardown takes none" in \
        error_of(tmp_path, lambda s: None, teardown)


# -- static check: hooks may allocate, the launcher may not ------------------------------------------

VENDOR_LIKE = textwrap.dedent("""\
    #include <cublas_v2.h>
    static cublasHandle_t g_handle = nullptr;
    static void* g_work = nullptr;
    extern "C" int bench_setup(int n) {
        if (g_handle) return 0;
        if (cublasCreate(&g_handle) != CUBLAS_STATUS_SUCCESS) return 1;
        if (cudaMalloc(&g_work, 1 << 20) != cudaSuccess) return 2;
        cudaDeviceSynchronize();
        return 0;
    }
    extern "C" void bench_teardown(void) {
        if (g_handle) cublasDestroy(g_handle);
        cudaFree(g_work);
        g_handle = nullptr;
    }
    extern "C" void run(const float* x, float* y, int n) {
        cublasScopy(g_handle, n, x, 1, y, 1);
    }
    """)
HOOKS = ("bench_setup", "bench_teardown")


def _rules(source, allow=("cublas",), hooks=HOOKS):
    return sorted({v.rule for v in errors_only(check_source(source, allow=allow, hooks=hooks))})


def test_hooks_may_allocate_sync_and_keep_handles():
    assert _rules(VENDOR_LIKE) == []
    # Without naming the hooks the same code is what the launcher rules forbid.
    assert _rules(VENDOR_LIKE, hooks=()) == ["host-static-state", "launcher-memory", "launcher-sync"]


def test_library_calls_in_hooks_still_need_allow():
    assert _rules(VENDOR_LIKE, allow=()) == ["library-cublas"]


def test_the_launcher_and_helpers_are_still_checked():
    in_launcher = VENDOR_LIKE.replace("cublasScopy(g_handle, n, x, 1, y, 1);",
                                      "float* t; cudaMalloc(&t, 4); cudaDeviceSynchronize(); g_work = t;")
    assert _rules(in_launcher) == ["host-static-state", "launcher-memory", "launcher-sync"]
    helper = VENDOR_LIKE.replace('extern "C" int bench_setup', 'static void grab() { cudaMalloc(&g_work, 4); }\n'
                                                               'extern "C" int bench_setup')
    assert _rules(helper) == ["host-static-state", "launcher-memory"], "only the hooks' own bodies are exempt"


@pytest.mark.parametrize("call", ["cudaStream_t s; cudaStreamCreate(&s);",
                                  "cudaDeviceSetCacheConfig(cudaFuncCachePreferL1);",
                                  "cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 1 << 20);",
                                  "const char* v = getenv(\"CUDA_INJECTION64_PATH\");", "long long t = clock64();"])
def test_hooks_stay_banned_from_streams_device_state_probes_and_clocks(call):
    source = VENDOR_LIKE.replace("cudaDeviceSynchronize();", call)
    assert _rules(source), f"{call} in a hook must still be reported"


@pytest.mark.parametrize("use", ["bench_setup(n);", "bench_teardown();", "int (*f)(int) = bench_setup; f(n);"])
def test_launcher_may_not_call_a_hook(use):
    source = VENDOR_LIKE.replace("cublasScopy(g_handle, n, x, 1, y, 1);", use)
    assert "hook-call" in _rules(source), use


def test_hook_reference_through_a_macro_is_caught():
    source = "#define SET bench_setup\n" + VENDOR_LIKE.replace("cublasScopy(g_handle, n, x, 1, y, 1);", "SET(n);")
    assert "hook-call" in _rules(source)


def test_a_prototype_of_a_hook_is_not_a_call():
    source = 'extern "C" int bench_setup(int n);\n' + VENDOR_LIKE
    assert _rules(source) == []


@pytest.mark.parametrize("spec_path", VENDOR_SPECS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_bench_vendor_kernels_pass_the_static_check_under_their_spec(spec_path):
    spec = load_task(spec_path)
    assert errors_only(check_source(spec.kernel_path, allow=spec.allow, hooks=spec.hook_names)) == []
    # ... and only because of the spec: without `allow` the library calls are refused (cusparse, cufft, cub too).
    rules = {v.rule for v in errors_only(check_source(spec.kernel_path, hooks=spec.hook_names))}
    assert rules == {f"library-{name}" for name in spec.allow}


# -- build: link flags ------------------------------------------------------------------------------

TINY_VENDOR = textwrap.dedent("""\
    #include <cuda_runtime.h>
    extern "C" int cublasCreate_v2(void** handle);     // a cuBLAS symbol, without needing its header
    static void* g_handle = nullptr;
    extern "C" int bench_setup(int n) { return cublasCreate_v2(&g_handle); }
    __global__ void k(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] *= 2.f; }
    extern "C" void run(float* x, int n) { k<<<1, 32>>>(x, n); }
    """)


@pytest.fixture(scope="module")
def build_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("link-cache")


def _vendor_dirs(file_name: str, kind: str) -> list[Path]:
    """Folders holding a toolkit file: the toolkit, $SKILLBASE_VENDOR_<KIND>, pip's nvidia-* packages."""
    variable = "SKILLBASE_VENDOR_INCLUDE" if kind == "include" else "SKILLBASE_VENDOR_LIB"
    dirs = [Path(p) for p in os.environ.get(variable, "").split(os.pathsep) if p]
    nvcc = shutil.which("nvcc")
    if nvcc:
        root = Path(nvcc).resolve().parent.parent
        dirs += [root / "include"] if kind == "include" else [root / "lib64", root / "lib"]
    for base in map(Path, sys.path):
        dirs.extend(sorted((base / "nvidia").glob(f"*/{kind}")))
    return [d for d in dirs if (d / file_name).exists()]


@pytest.mark.nvcc
def test_compile_only_build_links_the_spec_libraries(tmp_path, build_cache):
    from skillbase.harness.build import build

    source = tmp_path / "tiny_vendor.cu"
    source.write_text(TINY_VENDOR)
    plain = build(source, arch="sm_90", compile_only=True, cache_dir=build_cache)
    linked = build(source, arch="sm_90", compile_only=True, cache_dir=build_cache, link=("cublas",))
    assert "-lcublas" in linked.command and "-lcublas" not in plain.command
    assert linked.key != plain.key, "the libraries are part of the cache key"
    assert linked.command.index("-lcublas") > linked.command.index(str(source)), "libraries follow the sources"
    assert build(source, arch="sm_90", compile_only=True, cache_dir=build_cache, link=("cublas",)).cached
    with pytest.raises(InputError, match="allowed: cublas, cublasLt, cusparse, cufft, curand, cusolver, cudnn"):
        build(source, arch="sm_90", compile_only=True, cache_dir=build_cache, link=("nccl",))


@pytest.mark.nvcc
def test_bench_vendor_kernel_compiles_with_its_spec_link(monkeypatch, build_cache):
    from skillbase.harness.build import build

    spec = load_task(BENCH / "ops" / "matrix_mul" / "vendor_fp32.task.yaml")
    headers = _vendor_dirs("cublas_v2.h", "include")
    if not headers:
        pytest.skip("cublas_v2.h not found (toolkit, $SKILLBASE_VENDOR_INCLUDE, pip nvidia-* packages)")
    if not os.environ.get("SKILLBASE_VENDOR_INCLUDE"):
        monkeypatch.setenv("SKILLBASE_VENDOR_INCLUDE", str(headers[0]))
    result = build(spec.kernel_path, arch="sm_90", compile_only=True, cache_dir=build_cache, link=spec.link)
    assert result.object.is_file() and "-lcublas" in result.command


@pytest.mark.nvcc
def test_shared_library_records_the_linked_library(tmp_path, monkeypatch, build_cache):
    """Without the link the library would load with an unresolved cublasCreate_v2; with it, it is NEEDED."""
    from skillbase.harness.build import build

    libs = _vendor_dirs("libcublas.so", "lib")
    if not libs:
        pytest.skip("libcublas.so not found (toolkit lib64, $SKILLBASE_VENDOR_LIB, pip nvidia-* packages)")
    if shutil.which("readelf") is None:
        pytest.skip("needs readelf")
    vendor = [d for d in os.environ.get("SKILLBASE_VENDOR_LIB", "").split(os.pathsep) if d]
    if not any(Path(d).resolve() == libs[0].resolve() for d in vendor):
        monkeypatch.setenv("SKILLBASE_VENDOR_LIB", str(libs[0]))
    source = tmp_path / "tiny_vendor.cu"
    source.write_text(TINY_VENDOR)
    result = build(source, arch="sm_90", cache_dir=build_cache, link=("cublas",))
    dynamic = subprocess.run(["readelf", "-d", str(result.library)], capture_output=True, text=True).stdout
    assert "libcublas.so" in dynamic, dynamic


# -- hooks through ctypes (gcc-built library, no GPU) ------------------------------------------------

HOOKED_C = r"""
int setups, teardowns, last_n, fail_with;
int setup(int n, float alpha) { ++setups; last_n = n; return n == 13 ? fail_with : 0; }
void teardown(void) { ++teardowns; }
void launch(float* x, int n, float alpha) {}
"""


@dataclass
class Arg:
    name: str
    dtype: str
    pointer: bool


ARGS = [Arg("x", "f32", True), Arg("n", "i32", False), Arg("alpha", "f32", False)]


@pytest.fixture(scope="module")
def hooked(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    folder = tmp_path_factory.mktemp("hooked")
    (folder / "h.c").write_text(HOOKED_C)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / "libh.so"), str(folder / "h.c")], check=True)
    return folder / "libh.so"


def test_setup_runs_once_per_size_and_teardown_once(hooked):
    from skillbase.harness.native import NativeLauncher

    launcher = NativeLauncher(hooked, "launch", ARGS, hooks={"setup": "setup", "teardown": "teardown"})
    lib = launcher.lib
    assert launcher.setup({"n": 100, "alpha": 0.5}) is True
    assert launcher.setup({"n": 100, "alpha": 0.5}) is False, "the same size is set up once"
    assert launcher.setup({"n": 200, "alpha": 0.5}) is True
    assert ctypes.c_int.in_dll(lib, "setups").value == 2 and ctypes.c_int.in_dll(lib, "last_n").value == 200
    launcher.teardown()
    launcher.teardown()
    assert ctypes.c_int.in_dll(lib, "teardowns").value == 1
    launcher.close()


def test_failing_setup_and_missing_hooks_are_one_line(hooked):
    from skillbase.harness.native import HookError, LoadError, NativeLauncher
    from skillbase.harness.runtime import diagnose
    from skillbase.harness.worker import _error_payload

    launcher = NativeLauncher(hooked, "launch", ARGS, "candidate", hooks={"setup": "setup"})
    ctypes.c_int.in_dll(launcher.lib, "fail_with").value = 7
    with pytest.raises(HookError) as info:
        launcher.setup({"n": 13, "alpha": 1.0})
    assert "candidate: setup(n=13, alpha=1.0) returned 7" in info.value.message and "\n" not in info.value.message
    payload, _ = _error_payload(info.value)
    assert diagnose(0, "", False, 60, payload["error"]) == ("load-failed", info.value.message)
    launcher.teardown()      # never set up: nothing to tear down
    launcher.close()
    with pytest.raises(LoadError, match="no extern \"C\" function 'bench_setup' \\(the spec's hooks.setup\\)"):
        NativeLauncher(hooked, "launch", ARGS, hooks={"setup": "bench_setup"})


# -- the worker's session on the CPU: a host "kernel" (gcc) behind a numpy stand-in for CuPy ----------

HOST_SUM = r"""
int setups, teardowns, last_n;
int setup_sum(int n) { ++setups; last_n = n; return n > 0 ? 0 : 1; }
void teardown_sum(void) { ++teardowns; }
void vsum(const float* x, float* out, float* partial, int n) {
    int blocks = (n + 255) / 256; double t = 0;
    for (int b = 0; b < blocks; ++b) {
        float s = 0; for (int i = b * 256; i < n && i < (b + 1) * 256; ++i) s += x[i];
        partial[b] = s;
    }
    for (int b = 0; b < blocks; ++b) t += partial[b];
    out[0] = (float)t OFFSET;
#ifdef GARBAGE
    for (int b = 0; b < blocks; ++b) partial[b] = (b % 3 == 0) ? 0.f / 0.f : 1e30f * b;
#endif
}
"""


def _host_session(monkeypatch, tmp_path, candidate_defines):
    """A Session whose device is host memory: enough to run verify_candidate without a GPU."""
    import types

    import numpy as np

    import skillbase.harness.session as session_module

    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    (tmp_path / "host.c").write_text(HOST_SUM)
    libs = {}
    for name, defines in (("ref", ["-DOFFSET="]), ("cand", candidate_defines)):
        libs[name] = tmp_path / f"lib{name}.so"
        subprocess.run(["gcc", "-shared", "-fPIC", *defines, "-o", str(libs[name]), str(tmp_path / "host.c")],
                       check=True)

    class HostArray(np.ndarray):
        @property
        def data(self):
            return types.SimpleNamespace(ptr=self.ctypes.data)

        def get(self):
            return np.asarray(self).copy()

    def wrap(array):
        return np.ascontiguousarray(array).view(HostArray)

    cp = types.SimpleNamespace(asarray=lambda a: wrap(np.array(a)), empty=lambda n, dtype: wrap(np.empty(n, dtype)),
                               uint8=np.uint8, count_nonzero=np.count_nonzero,
                               cuda=types.SimpleNamespace(Stream=lambda non_blocking: None))

    class HostDevice:
        def __init__(self, index):
            self.cp = cp

        def limits(self):
            return {}

        def limits_changed(self, snapshot):
            return {}

        def memset(self, array, byte):
            np.asarray(array).view(np.uint8)[:] = byte

        def sync(self):
            pass

        def fill_shared_nan(self):
            pass

        def mem_available(self):
            return 1 << 40       # room: the reference stays on this "device", scrambled

    monkeypatch.setattr(session_module, "Device", HostDevice)
    task = write_task(tmp_path / "task", copy.deepcopy(SPEC))
    job = {"task": str(task), "candidate": {"library": str(libs["cand"]), "hooks": SPEC["hooks"]},
           "reference": {"kind": "cuda", "library": str(libs["ref"]), "hooks": SPEC["hooks"]}}
    return session_module.Session(job)


def test_session_never_compares_scratch_and_sets_up_once_per_size(monkeypatch, tmp_path):
    from skillbase.harness.result import CheckResult
    from skillbase.harness.verify import VerifyPlan, verify_candidate

    session = _host_session(monkeypatch, tmp_path, ["-DOFFSET=", "-DGARBAGE"])
    result = CheckResult(compiled=True)
    plan = VerifyPlan(sizes=session.spec.verify_sizes(), probe_calls=0)
    assert verify_candidate(session, plan, result), result.reason
    assert {name for check in result.checks for name in check.outputs} == {"out"}
    libraries = [launcher.lib for launcher in session.launchers]
    for launcher in session.launchers:   # default, then irregular: one setup each, whatever the number of calls
        assert ctypes.c_int.in_dll(launcher.lib, "setups").value == 2
        assert launcher.setup_for == (("n", 100003),)
    session.close()
    assert [ctypes.c_int.in_dll(lib, "teardowns").value for lib in libraries] == [1, 1]


def test_session_still_fails_a_wrong_output_beside_scratch(monkeypatch, tmp_path):
    from skillbase.harness.result import CheckResult
    from skillbase.harness.verify import VerifyPlan, verify_candidate

    session = _host_session(monkeypatch, tmp_path, ["-DOFFSET=+1.0f", "-DGARBAGE"])
    result = CheckResult(compiled=True)
    assert not verify_candidate(session, VerifyPlan(sizes=session.spec.verify_sizes(), probe_calls=0), result)
    assert result.status == "incorrect" and "out:" in result.reason, result.reason
    session.close(teardown=False)


# -- the bench suite -------------------------------------------------------------------------------

def test_bench_scratch_buffers_are_scratch():
    for path in sorted(BENCH.glob("ops/*/*.task.yaml")):
        for arg in yaml.safe_load(path.read_text())["args"]:
            assert not str(arg.get("description", "")).startswith("scratch"), \
                f"{path}: {arg['name']} is a work buffer: role scratch, not {arg.get('role')}"
    assert load_task(BENCH / "ops" / "dot_product" / "fp32.task.yaml").arg("partial").role == "scratch"


@pytest.mark.parametrize("spec_path", VENDOR_SPECS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_vendor_spec_names_its_hooks_link_and_reference(spec_path):
    spec = load_task(spec_path)   # validates hooks against vendor_<dtype>.cu's functions too
    assert spec.hooks == {"setup": "bench_setup", "teardown": "bench_teardown"}
    library = spec.allow[0]
    assert spec.link == (() if library == "cub" else (library,))
    dtype = spec_path.name.split(".")[0].split("_", 1)[1]
    assert spec.reference == {"cuda": f"{dtype}.cu"}, "a vendor kernel is verified against the baseline kernel"
    baseline = load_task(spec_path.with_name(f"{dtype}.task.yaml"))
    assert [(a.name, a.dtype, a.role) for a in baseline.args] == [(a.name, a.dtype, a.role) for a in spec.args]
    assert baseline.presets == spec.presets and baseline.link == () and baseline.hooks == {}


def test_bench_discovery_reads_link_and_hooks_from_the_vendor_spec():
    from skillbase.bench import suite as lib

    vendors = [i for o in lib.discover(BENCH) for i in o.implementations if i.kind == "vendor"]
    assert len(vendors) == len(VENDOR_SPECS)
    for impl in vendors:
        assert impl.spec_path.name == f"{impl.name}.task.yaml"
        assert (impl.setup, impl.teardown) == ("bench_setup", "bench_teardown")
        assert impl.link == load_task(impl.spec_path).link


def test_generate_is_idempotent(tmp_path):
    """Writing into a fresh copy twice: the second run changes nothing, and --check agrees."""
    copy_root = tmp_path / "bench"
    shutil.copytree(BENCH / "tools", copy_root / "tools")
    shutil.copytree(BENCH / "ops", copy_root / "ops")
    script = copy_root / "tools" / "generate.py"
    first = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert first.returncode == 0 and first.stdout == "", first.stdout + first.stderr
    second = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert second.returncode == 0 and second.stdout == "", second.stdout
    check = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout


# -- GPU ------------------------------------------------------------------------------------------

GARBAGE = KERNEL.replace(
    "        finish<<<1, 32>>>(partial, blocks, out);\n",
    "        finish<<<1, 32>>>(partial, blocks, out);\n"
    "        scribble<<<blocks, 256>>>(partial, blocks);   // leave garbage behind in the scratch\n").replace(
    'extern "C" int setup_sum',
    "__global__ void scribble(float* p, int blocks) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < blocks) p[i] = (i % 3 == 0) ? __int_as_float(0x7fc00000) : 1e30f * i;\n"
    "}\n"
    'extern "C" int setup_sum')

QUICK_TIME = {"target_s": 0.1, "min_samples": 10, "max_samples": 30}


def _python_reference(folder: Path) -> None:
    (folder / "ref.py").write_text(textwrap.dedent("""\
        import numpy as np
        def vsum(inputs, sizes):
            return {"out": np.array([inputs["x"].astype(np.float64).sum()], dtype=np.float32)}   # no scratch
        """))


@pytest.mark.gpu
@pytest.mark.parametrize("reference", ["self", "python"])
def test_garbage_in_scratch_still_verifies(tmp_path, reference):
    from skillbase.harness.runtime import Options, evaluate

    spec = copy.deepcopy(SPEC)
    if reference == "python":
        _python_reference(tmp_path)
        spec["reference"] = {"python": "ref.py:vsum"}
    task = write_task(tmp_path, spec)
    candidate = tmp_path / "cand" / "vsum.cu"
    candidate.parent.mkdir()
    candidate.write_text(GARBAGE)
    result = evaluate(task, candidate=candidate, baseline=task,
                      options=Options(time_plan=QUICK_TIME))
    assert result.status == "ok", result.reason
    assert result.correct is True
    assert all(set(c.outputs) == {"out"} for c in result.checks), "scratch is never compared or reported"
    assert all(p.ok for p in result.probes), [p for p in result.probes if not p.ok]
    assert result.timings and all(t.kernels["candidate"].suspicious is None for t in result.timings)


@pytest.mark.gpu
def test_a_wrong_output_beside_scratch_still_fails(tmp_path):
    """Scratch does not loosen the check of the real output."""
    from skillbase.harness.runtime import Options, evaluate

    task = write_task(tmp_path, copy.deepcopy(SPEC))
    candidate = tmp_path / "cand" / "vsum.cu"
    candidate.parent.mkdir()
    candidate.write_text(KERNEL.replace("out[0] = t;", "out[0] = t + 1.0f;"))
    result = evaluate(task, candidate=candidate, options=Options(time=False))
    assert result.status == "incorrect" and "out:" in result.reason, result.reason


@pytest.mark.gpu
def test_failing_or_missing_setup_is_a_one_line_load_failure(tmp_path):
    from skillbase.harness.runtime import Options, evaluate

    task = write_task(tmp_path, copy.deepcopy(SPEC))
    failing = tmp_path / "fail" / "vsum.cu"
    failing.parent.mkdir()
    failing.write_text(KERNEL.replace("return n > 0 ? 0 : 1;", "return n == 100003 ? 5 : 0;"))
    result = evaluate(task, candidate=failing, options=Options(time=False))
    assert result.status == "load-failed", result.reason
    assert "setup_sum(n=100003) returned 5" in result.reason and "\n" not in result.reason
    missing = tmp_path / "missing" / "vsum.cu"
    missing.parent.mkdir()
    missing.write_text(KERNEL.replace('extern "C" int setup_sum(int n) { return n > 0 ? 0 : 1; }', ""))
    result = evaluate(task, candidate=missing, options=Options(time=False))
    assert result.status == "load-failed" and "'setup_sum' (the spec's hooks.setup)" in result.reason, result.reason


@pytest.mark.gpu
def test_matrix_mul_cublas_verified_and_timed_against_its_baseline():
    from skillbase.run import judges as compare

    folder = BENCH / "ops" / "matrix_mul"
    vendor, baseline = folder / "vendor_fp32.cu", folder / "fp32.cu"
    verdict = compare.compare_candidate(vendor, candidate_source=vendor.read_text(),
                                        best_source=baseline.read_text(), best_task=baseline, preset="m")
    assert verdict.status in ("accepted", "slower"), f"{verdict.status}: {verdict.reason}"
    assert verdict.runtime_us and verdict.runtime_us > 0
    assert verdict.baseline_us and verdict.baseline_us > 0
