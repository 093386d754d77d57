"""The capabilities `allow: [streams]`, `[cuda_graphs]`, `[l2_persistence]` (issue 23): what each admits, where.

A task opts in to exactly the calls of one skill whose effect lies outside a single launch
(sys.streams_overlap, sys.cuda_graphs, mem.l2_persistence). Without the entry every one of those calls
is refused as before; with it, the hooks may make the objects and the launcher may only order work on
the launch stream (a fork/join, a graph launch, a per-launch access-policy window). Work put on a side
stream must be forked from the launch stream and joined back to it (`stream-join`): a planted cheat
that hides work on a side stream is refused here, or (when it fools the text) by the launch-stream
probe on a GPU (`-m gpu`).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from skillbase.errors import InputError
from skillbase.harness.static_check import ALLOWABLE, CAPABILITIES, check_source, errors_only

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = {
    "streams": REPO / "skills" / "sys" / "sys.streams_overlap" / "examples",
    "cuda_graphs": REPO / "skills" / "sys" / "sys.cuda_graphs" / "examples",
    "l2_persistence": REPO / "skills" / "mem" / "mem.l2_persistence" / "examples",
}

HOOKS = ("sys_setup", "sys_teardown")


def _errors(source: str, allow=(), hooks=HOOKS) -> set[tuple[str, int]]:
    return {(v.rule, v.line) for v in errors_only(check_source(source, allow=allow, hooks=hooks))}


def _rules(source: str, allow=(), hooks=HOOKS) -> set[str]:
    return {rule for rule, _ in _errors(source, allow, hooks)}


KERNEL = "__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 1.0f; }\n"

# An honest fork/join: the side stream waits for the launch stream, the launch stream for the side stream.
FORK_JOIN = KERNEL + """
static cudaStream_t side = nullptr;
static cudaEvent_t forked = nullptr, joined = nullptr;
extern "C" int sys_setup(int n) {
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&forked, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&joined, cudaEventDisableTiming);
    return 0;
}
extern "C" void sys_teardown(void) { cudaStreamDestroy(side); cudaEventDestroy(forked); cudaEventDestroy(joined); }
extern "C" void run(float* a, float* b, int n) {
    cudaEventRecord(forked, 0);
    cudaStreamWaitEvent(side, forked, 0);
    k<<<1, 32>>>(a, n);
    k<<<1, 32, 0, side>>>(b, n);
    cudaEventRecord(joined, side);
    cudaStreamWaitEvent(0, joined, 0);
}
"""


def _launcher(body: str) -> str:
    """FORK_JOIN with the launcher's body replaced."""
    head = FORK_JOIN[:FORK_JOIN.index('extern "C" void run')]
    return head + 'extern "C" void run(float* a, float* b, int n) {\n' + body + "}\n"


# ------------------------------------------------------------------------------------------ the entries

def test_the_three_capabilities_are_allowable_and_validated():
    assert {"streams", "cuda_graphs", "l2_persistence"} <= set(ALLOWABLE)
    assert {c.name for c in CAPABILITIES} == {"streams", "cuda_graphs", "l2_persistence"}
    with pytest.raises(InputError, match="not something the static check can allow") as info:
        check_source(KERNEL, allow=["stream"])
    assert info.value.hint == "did you mean 'streams'?"


def test_a_task_spec_accepts_the_capabilities(tmp_path):
    from skillbase.task import load_task

    example = EXAMPLES["streams"]
    shutil.copy(example / "after.cu", tmp_path / "k.cu")
    shutil.copy(example / "task.yaml", tmp_path / "k.task.yaml")
    assert load_task(tmp_path / "k.cu").allow == ("streams",)


# ------------------------------------------------------------------------------------------ streams

def test_fork_join_needs_the_streams_entry():
    assert _rules(FORK_JOIN) == {"stream-or-thread", "timing", "launcher-sync"}
    assert _errors(FORK_JOIN, allow=["streams"]) == set()


def test_streams_objects_are_made_in_hooks_only():
    made_in_launcher = _launcher("""    cudaStream_t s; cudaStreamCreate(&s);
    cudaEventRecord(forked, 0);
    cudaStreamWaitEvent(s, forked, 0);
    k<<<1, 32, 0, s>>>(b, n);
    cudaEventRecord(joined, s);
    cudaStreamWaitEvent(0, joined, 0);
""")
    assert _rules(made_in_launcher, allow=["streams"]) == {"stream-or-thread"}


@pytest.mark.parametrize("call", ["cudaEventSynchronize(joined);", "cudaStreamSynchronize(side);",
                                  "float ms; cudaEventElapsedTime(&ms, forked, joined);",
                                  "cudaLaunchHostFunc(side, nullptr, nullptr);", "cudaStreamQuery(side);"])
def test_streams_admits_nothing_else(call):
    source = _launcher("    cudaEventRecord(forked, 0);\n    " + call + "\n")
    assert _rules(source, allow=["streams"]), f"{call} passed with allow: [streams]"


CHEATS = {
    "never joined": """    cudaEventRecord(forked, 0);
    cudaStreamWaitEvent(side, forked, 0);
    k<<<1, 32, 0, side>>>(b, n);
""",
    "never forked": """    k<<<1, 32, 0, side>>>(b, n);
    cudaEventRecord(joined, side);
    cudaStreamWaitEvent(0, joined, 0);
""",
    "joined before the work": """    cudaEventRecord(forked, 0);
    cudaStreamWaitEvent(side, forked, 0);
    cudaEventRecord(joined, side);
    cudaStreamWaitEvent(0, joined, 0);
    k<<<1, 32, 0, side>>>(b, n);
""",
    "join under a condition": """    cudaEventRecord(forked, 0);
    cudaStreamWaitEvent(side, forked, 0);
    k<<<1, 32, 0, side>>>(b, n);
    cudaEventRecord(joined, side);
    if (n < 0) cudaStreamWaitEvent(0, joined, 0);
""",
    "returns before the join": """    cudaEventRecord(forked, 0);
    cudaStreamWaitEvent(side, forked, 0);
    k<<<1, 32, 0, side>>>(b, n);
    if (n > 0) return;
    cudaEventRecord(joined, side);
    cudaStreamWaitEvent(0, joined, 0);
""",
    "joined through another stream's event": """    cudaEventRecord(forked, 0);
    cudaStreamWaitEvent(side, forked, 0);
    k<<<1, 32, 0, side>>>(b, n);
    cudaEventRecord(joined, 0);
    cudaStreamWaitEvent(0, joined, 0);
""",
    "forked from the side stream's own event": """    cudaEventRecord(forked, side);
    cudaStreamWaitEvent(side, forked, 0);
    k<<<1, 32, 0, side>>>(b, n);
    cudaEventRecord(joined, side);
    cudaStreamWaitEvent(0, joined, 0);
""",
}


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_side_stream_work_outside_a_fork_join_is_refused(cheat):
    rules = _rules(_launcher(CHEATS[cheat]), allow=["streams"])
    assert rules == {"stream-join"}, f"{cheat}: {rules}"


def test_a_runtime_launch_on_a_side_stream_is_held_to_the_same_join():
    unjoined = _launcher("""    cudaEventRecord(forked, 0);
    cudaStreamWaitEvent(side, forked, 0);
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(1); config.blockDim = dim3(32); config.stream = side;
    cudaLaunchKernelEx(&config, k, b, n);
""")
    assert _rules(unjoined, allow=["streams"]) == {"stream-join"}


@pytest.mark.parametrize("launch", [
    "cudaLaunchConfig_t config = {dim3(1), dim3(32), 0, side}; cudaLaunchKernelEx(&config, k, b, n);",
    "cudaLaunchConfig_t config = {.gridDim = dim3(1), .blockDim = dim3(32), .stream = side};\n"
    "    cudaLaunchKernelEx(&config, k, b, n);",
    "void* args[] = {&b, &n}; cudaLaunchCooperativeKernel((void*)k, dim3(1), dim3(32), args, 0, side);",
    "void* args[] = {&b, &n}; cudaLaunchKernel((void*)k, dim3(1), dim3(32), args, 0, side);",
])
def test_every_way_of_naming_the_stream_of_a_launch_is_read(launch):
    forked = "    cudaEventRecord(forked, 0);\n    cudaStreamWaitEvent(side, forked, 0);\n    " + launch + "\n"
    assert _rules(_launcher(forked), allow=["streams"]) == {"stream-join"}, "a side-stream launch passed unjoined"
    joined = forked + "    cudaEventRecord(joined, side);\n    cudaStreamWaitEvent(0, joined, 0);\n"
    assert _errors(_launcher(joined), allow=["streams"]) == set()


# ------------------------------------------------------------------------------------------ cuda_graphs

# A graph captured in the setup hook on a stream of its own, its node's arguments set per call, launched on the
# launch stream.
CAPTURED = KERNEL + """
static cudaStream_t capture = nullptr;
static cudaGraph_t graph = nullptr;
static cudaGraphExec_t graph_exec = nullptr;
static cudaGraphNode_t nodes[1];
extern "C" int sys_setup(int n) {
    cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking);
    cudaStreamBeginCapture(capture, cudaStreamCaptureModeGlobal);
    k<<<1, 32, 0, capture>>>(nullptr, n);
    cudaStreamEndCapture(capture, &graph);
    size_t count = 1;
    cudaGraphGetNodes(graph, nodes, &count);
    cudaGraphInstantiate(&graph_exec, graph, 0);
    return 0;
}
extern "C" void sys_teardown(void) {
    cudaGraphExecDestroy(graph_exec); cudaGraphDestroy(graph); cudaStreamDestroy(capture);
}
extern "C" void run(float* a, float* b, int n) {
    void* args[] = {&a, &n};
    cudaKernelNodeParams p = {};
    p.func = (void*)k; p.gridDim = dim3(1); p.blockDim = dim3(32); p.kernelParams = args;
    cudaGraphExecKernelNodeSetParams(graph_exec, nodes[0], &p);
    cudaGraphLaunch(graph_exec, 0);
}
"""


def _graph_launcher(body: str) -> str:
    head = CAPTURED[:CAPTURED.index('extern "C" void run')]
    return head + 'extern "C" void run(float* a, float* b, int n) {\n' + body + "}\n"


def test_a_captured_graph_needs_the_cuda_graphs_entry():
    assert _rules(CAPTURED) == {"launcher-sync", "stream-or-thread"}
    assert _errors(CAPTURED, allow=["cuda_graphs"]) == set()


@pytest.mark.parametrize("call", ["cudaGraphInstantiate(&graph_exec, graph, 0);",
                                  "cudaStreamBeginCapture(capture, cudaStreamCaptureModeGlobal);",
                                  "cudaGraphExecDestroy(graph_exec);", "cudaGraphUpload(graph_exec, 0);"])
def test_graphs_are_built_in_hooks_only(call):
    # (instantiating into the global handle is also a host-static-state write outside the hooks)
    assert "launcher-sync" in _rules(_graph_launcher("    " + call + "\n    cudaGraphLaunch(graph_exec, 0);\n"),
                                     allow=["cuda_graphs"])


@pytest.mark.parametrize("node", ["cudaGraphAddHostNode(&h, graph, nullptr, 0, nullptr);",
                                  "cudaGraphAddMemcpyNode(&h, graph, nullptr, 0, nullptr);",
                                  "cudaGraphAddMemsetNode(&h, graph, nullptr, 0, nullptr);",
                                  "cudaGraphAddChildGraphNode(&h, graph, nullptr, 0, graph);",
                                  "cudaGraphAddEventRecordNode(&h, graph, nullptr, 0, nullptr);"])
def test_only_kernel_nodes_even_in_hooks(node):
    source = CAPTURED.replace("    return 0;\n}\nextern \"C\" void sys_teardown",
                              f"    cudaGraphNode_t h; {node}\n    return 0;\n}}\nextern \"C\" void sys_teardown", 1)
    assert node in source
    assert _rules(source, allow=["cuda_graphs"]) == {"launcher-sync"}


def test_a_graph_launched_on_a_side_stream_is_not_joined():
    assert _rules(_graph_launcher("    cudaGraphLaunch(graph_exec, capture);\n"), allow=["cuda_graphs"]) == \
        {"stream-join"}


def test_streams_do_not_bring_graphs_nor_graphs_events():
    assert _rules(CAPTURED, allow=["streams"]) == {"launcher-sync"}
    assert _rules(FORK_JOIN, allow=["cuda_graphs"]) == {"timing", "launcher-sync"}


# ------------------------------------------------------------------------------------------ l2_persistence

WINDOWED = KERNEL + """
static size_t carve = 0;
extern "C" int sys_setup(int n) { cudaDeviceGetLimit(&carve, cudaLimitPersistingL2CacheSize); return 0; }
extern "C" void sys_teardown(void) { cudaCtxResetPersistingL2Cache(); }
extern "C" void run(float* a, float* b, int n) {
    cudaLaunchAttribute window[1] = {};
    window[0].id = cudaLaunchAttributeAccessPolicyWindow;
    window[0].val.accessPolicyWindow.base_ptr = a;
    window[0].val.accessPolicyWindow.num_bytes = n * sizeof(float);
    window[0].val.accessPolicyWindow.hitRatio = carve ? 1.0f : 0.0f;
    window[0].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    window[0].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(1); config.blockDim = dim3(32); config.attrs = window; config.numAttrs = 1;
    cudaLaunchKernelEx(&config, k, a, n);
}
"""


def test_a_per_launch_window_needs_the_l2_persistence_entry():
    assert _rules(WINDOWED) == {"l2-persistence"}
    assert _errors(WINDOWED, allow=["l2_persistence"]) == set()


@pytest.mark.parametrize("state", [
    "cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 1 << 20);",
    "cudaStreamAttrValue v = {}; cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &v);",
    "size_t c; cudaDeviceGetLimit(&c, cudaLimitPersistingL2CacheSize);",
    "cudaCtxResetPersistingL2Cache();",
])
def test_l2_state_that_outlives_the_launch_stays_banned(state):
    """The limit (even read) and the reset belong to the hooks; a stream attribute and a new limit to no one."""
    source = WINDOWED.replace("    cudaLaunchKernelEx(&config, k, a, n);\n",
                              f"    {state}\n    cudaLaunchKernelEx(&config, k, a, n);\n")
    assert _rules(source, allow=["l2_persistence"]), f"{state} passed in the launcher"


def test_a_new_limit_is_refused_even_in_the_hooks():
    source = WINDOWED.replace("return 0; }", "cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, carve); return 0; }")
    assert _rules(source, allow=["l2_persistence"]) == {"launcher-sync"}


# ------------------------------------------------------------------------------------------ the examples

def _spec(example: Path, side: str, tmp_path: Path):
    from skillbase.task import load_task

    folder = tmp_path / side
    folder.mkdir()
    shutil.copy(example / f"{side}.cu", folder / "k.cu")
    shutil.copy(example / "task.yaml", folder / "k.task.yaml")
    return folder / "k.cu", load_task(folder / "k.cu")


@pytest.mark.parametrize("capability", sorted(EXAMPLES))
def test_the_example_passes_with_its_entry_and_not_without(capability, tmp_path):
    for side in ("before", "after"):
        path, spec = _spec(EXAMPLES[capability], side, tmp_path)
        assert capability in spec.allow
        assert errors_only(check_source(path, allow=spec.allow, hooks=spec.hook_names)) == [], side
    without = [a for a in spec.allow if a != capability]
    refused = errors_only(check_source(path, allow=without, hooks=spec.hook_names))   # after.cu, the last side
    assert refused, f"after.cu of the {capability} example passes without allow: [{capability}]"


# ------------------------------------------------------------------------------------------ on a GPU

# Passes the text (every stream is the same expression) but runs all the work on sides[0] and "joins"
# sides[1], which holds nothing: the launch stream moves on while the work still runs.
ALIASED_JOIN = """
static cudaStream_t sides[2] = {nullptr, nullptr};
static cudaEvent_t fork_done = nullptr, side_done = nullptr;
extern "C" void streams_teardown(void) {
    for (int s = 0; s < 2; ++s) if (sides[s] != nullptr) cudaStreamDestroy(sides[s]);
    if (fork_done != nullptr) cudaEventDestroy(fork_done);
    if (side_done != nullptr) cudaEventDestroy(side_done);
    sides[0] = sides[1] = nullptr;
    fork_done = side_done = nullptr;
}
extern "C" int streams_setup(int n, int steps) {
    if (sides[0] != nullptr) return 0;
    cudaStreamCreateWithFlags(&sides[0], cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&sides[1], cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&fork_done, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&side_done, cudaEventDisableTiming);
    return 0;
}
extern "C" void oscillator_pair(const float* sa, const float* sb, float* ya, float* yb, int n, int steps) {
    int blocks = (n + THREADS - 1) / THREADS;
    int k = 0;
    cudaEventRecord(fork_done, 0);
    cudaStreamWaitEvent(sides[k], fork_done, 0);
    duffing<<<blocks, THREADS, 0, sides[k]>>>(sa, ya, n, steps, BETA_A);
    duffing<<<blocks, THREADS, 0, sides[k]>>>(sb, yb, n, steps, BETA_B);
    k = 1;
    cudaEventRecord(side_done, sides[k]);
    cudaStreamWaitEvent(0, side_done, 0);
}
"""


def _aliased_join_cheat(tmp_path: Path) -> tuple[Path, Path]:
    example = EXAMPLES["streams"]
    before = tmp_path / "before.cu"
    shutil.copy(example / "before.cu", before)
    shutil.copy(example / "task.yaml", tmp_path / "before.task.yaml")
    after = (example / "after.cu").read_text()
    kernels = after[:after.index("static cudaStream_t side")]
    cheat = tmp_path / "cheat.cu"
    cheat.write_text(kernels + ALIASED_JOIN)
    shutil.copy(example / "task.yaml", tmp_path / "cheat.task.yaml")
    return before, cheat


def test_the_aliased_join_fools_the_text(tmp_path):
    """Why the GPU test below exists: the static check sees one stream expression throughout."""
    from skillbase.task import load_task

    _, cheat = _aliased_join_cheat(tmp_path)
    spec = load_task(cheat)
    assert errors_only(check_source(cheat, allow=spec.allow, hooks=spec.hook_names)) == []


@pytest.mark.gpu
def test_a_graph_replaying_its_setup_arguments_is_refused(tmp_path):
    """A graph launched without this call's pointers replays the placeholders it was built with: it faults or
    leaves this call's outputs unwritten, and fails either way."""
    from skillbase.harness.runtime import Options, evaluate

    example = EXAMPLES["cuda_graphs"]
    for name in ("before.cu", "after.cu"):
        shutil.copy(example / name, tmp_path / name)
    for stem in ("before", "after"):
        shutil.copy(example / "task.yaml", tmp_path / f"{stem}.task.yaml")
    after = tmp_path / "after.cu"
    text = after.read_text()
    update = re.compile(r"^ *cudaGraphExecKernelNodeSetParams\(.*\n", re.M)
    assert len(update.findall(text)) == 1
    after.write_text(update.sub("", text))
    result = evaluate(tmp_path / "before.cu", candidate=after, options=Options(static=True, time=False))
    assert result.status in ("incorrect", "crashed"), (result.status, result.reason)


@pytest.mark.gpu
def test_the_launch_stream_probe_refuses_an_aliased_join(tmp_path):
    from skillbase.harness.runtime import Options, evaluate

    before, cheat = _aliased_join_cheat(tmp_path)
    result = evaluate(before, candidate=cheat, options=Options(static=True, time=False))
    assert result.status == "incorrect", (result.status, result.reason)
    assert "outside the launch stream" in result.reason, result.reason
