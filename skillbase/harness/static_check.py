"""Static check of a kernel file: APIs and patterns a candidate must not use, each with its reason.

The harness treats every candidate as untrusted (VERIFY.md). Runtime defences catch most cheats,
but some are cheaper and surer to refuse before anything runs: side streams and threads that
work outside the timer, library fallbacks, persisting-L2 windows that survive the flush, timing
and allocation inside the launcher, probing the environment for a profiler, state cached
across calls.

Matching is on tree-sitter-cuda's syntax tree, not on raw text: identifiers, type and namespace
names, `asm` strings, preprocessor macro bodies (which tree-sitter keeps as text, so we tokenise
them), and string literals that name profiler variables. A comment or an ordinary string that
mentions `cudaMalloc` does not trigger; `asm("mov.u64 %0, %%globaltimer;")` does.

    violations = check_source("K.cu", allow=spec.allow, hooks=spec.hook_names)
    blocking = [v for v in violations if v.severity == "error"]

Hooks (`hooks:` in the spec: setup / teardown, called by the harness outside every timed window)
may allocate, free, synchronise and keep handles in host globals: inside *their* bodies the rules
`launcher-memory` and `host-static-state` and the plain synchronisation calls of `launcher-sync`
are not reported. Everything else still is (streams, threads, persisting L2, device limits and
cache configuration, timing, environment probes, dynamic loading, and library calls unless
`allow:` lists the library). Code outside the hooks (the launcher, kernels, helpers) may not call
or reference a hook (`hook-call`), so a launcher cannot run a hook's allocation inside the timed call.

Capabilities (`CAPABILITIES`: `allow: [streams]`, `[cuda_graphs]`, `[l2_persistence]`) let a task use what
sys.streams_overlap, sys.cuda_graphs and mem.l2_persistence need, and nothing else: each names the
identifiers its hooks may use (creating and destroying streams, events, graphs) and those the launcher
may use (an event record and wait, a graph launch and its per-call parameters, a per-launch access-policy
window). With `streams` or `cuda_graphs`, every piece of work put on a stream other than the launch stream
must wait for an event recorded on the launch stream first and be joined back to it before the launcher
returns (`stream-join`), so all of it lies between the harness's start and end on the launch stream; the
dynamic defences (launch-stream probes, CUPTI timing of every stream, device-limit audit) are unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from skillbase.cuda import syntax
from skillbase.datafile.problems import suggestions
from skillbase.errors import InputError

__all__ = ["check_source", "Violation", "Rule", "RULES", "Capability", "CAPABILITIES", "ALLOWABLE",
           "banned_identifier", "errors_only"]


@dataclass(frozen=True)
class Violation:
    rule: str
    line: int
    snippet: str
    rationale: str
    severity: str = "error"   # "error" rejects the candidate; "warning" is reported only
    column: int = 1           # 1-based, of the first construct reported on the line (for editors and CI)

    def __str__(self) -> str:
        return f"line {self.line}: {self.rule}: {self.rationale} [{self.snippet}]"


@dataclass(frozen=True)
class Rule:
    id: str
    rationale: str
    names: frozenset[str] = frozenset()        # exact identifiers, anywhere
    prefixes: tuple[str, ...] = ()             # identifier prefixes
    namespaces: frozenset[str] = frozenset()   # `ns::…` or `using namespace ns`
    calls: frozenset[str] = frozenset()        # identifiers that only count when called (too common as names)
    allow: str | None = None                   # the task's `allow:` entry that turns the rule off
    severity: str = "error"
    exclude_prefixes: tuple[str, ...] = ()     # prefixes that belong to another rule


def _library(name: str, prefixes=(), namespaces=(), exclude=()) -> Rule:
    return Rule(f"library-{name}",
                f"{name} call: a library (or a fallback to one) does the work instead of the kernel being "
                "optimized; only tasks that list it in allow: may use it",
                prefixes=tuple(prefixes), namespaces=frozenset(namespaces), allow=name, exclude_prefixes=tuple(exclude))


RULES: tuple[Rule, ...] = (
    Rule("stream-or-thread",
         "creates a stream, thread, host callback or process: work there can run outside the timed window "
         "(only the launch stream is timed)",
         names=frozenset({"pthread_create", "cudaLaunchHostFunc", "cuLaunchHostFunc", "cudaStreamAddCallback",
                          "cuStreamAddCallback", "cudaStreamPerThread", "fork", "vfork", "posix_spawn", "popen",
                          "thrd_create"}),
         prefixes=("cudaStreamCreate", "cuStreamCreate"), calls=frozenset({"system"})),
    Rule("l2-persistence",
         "persisting-L2 access-policy window or limit: cached lines survive the harness's L2 flush, so timed "
         "iterations read warm data",
         names=frozenset({"cudaStreamAttributeAccessPolicyWindow", "cudaLimitPersistingL2CacheSize",
                          "cudaCtxResetPersistingL2Cache", "cuCtxResetPersistingL2Cache", "accessPolicyWindow",
                          "cudaAccessPolicyWindow", "cudaAccessPropertyPersisting", "cudaStreamSetAttribute",
                          "cuStreamSetAttribute", "cudaLaunchAttributeAccessPolicyWindow",
                          "cudaKernelNodeAttributeAccessPolicyWindow", "CU_LIMIT_PERSISTING_L2_CACHE_SIZE",
                          "CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW", "cudaStreamAttrValue"})),
    _library("cublasLt", prefixes=("cublasLt",)),
    _library("cublas", prefixes=("cublas",), exclude=("cublasLt",)),
    _library("cudnn", prefixes=("cudnn",)),
    _library("cusparse", prefixes=("cusparse",)),
    _library("cufft", prefixes=("cufft",)),
    _library("cusolver", prefixes=("cusolver",)),
    _library("curand", prefixes=("curand",)),
    _library("cub", namespaces=("cub",)),
    _library("thrust", namespaces=("thrust",)),
    _library("cutlass", namespaces=("cutlass", "cute")),
    Rule("embedded-python",
         "embeds a Python interpreter or calls PyTorch/ATen from CUDA code: the work runs in another "
         "framework's kernels and allocator instead of the candidate's, invisible to this check",
         prefixes=("Py_", "PyRun_", "PyImport_", "PyEval_", "PyGILState_", "PyObject_"),
         namespaces=frozenset({"torch", "at", "c10", "pybind11"})),
    Rule("python-candidate",
         "a Python (PyTorch) implementation, not a CUDA kernel: only a task that lists torch in allow: "
         "(a reference implementation such as the bench's torch_impl.py) may run one", allow="torch"),
    Rule("printf",
         "printing from a kernel or the launcher: device printf serialises through a host buffer and distorts "
         "timing, and output is a side channel the harness does not check",
         names=frozenset({"printf", "fprintf", "puts", "fputs", "putchar", "vprintf", "cout", "cerr", "clog"})),
    Rule("timing",
         "reads a clock or times itself: a candidate that measures time can behave differently when timed "
         "(the harness owns the clock)",
         names=frozenset({"clock64", "clock_gettime", "gettimeofday", "__rdtsc", "rdtsc", "timespec_get",
                          "__globaltimer", "QueryPerformanceCounter"}),
         prefixes=("cudaEvent", "cuEvent"), namespaces=frozenset({"chrono"}), calls=frozenset({"clock", "time"})),
    Rule("launcher-memory",
         "allocates, copies or sets memory: the launcher may only launch kernels on the buffers it is given "
         "(host work and hidden buffers escape verification and distort timing)",
         names=frozenset({"cudaHostAlloc", "cudaHostRegister", "cudaMemPrefetchAsync", "cudaMemAdvise",
                          "cuMemHostAlloc", "cuMemPrefetchAsync", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol",
                          "cudaMemcpyToSymbolAsync", "cudaMemcpyFromSymbolAsync"}),
         prefixes=("cudaMalloc", "cudaFree", "cudaMemcpy", "cudaMemset", "cudaMemPool", "cuMemAlloc", "cuMemFree",
                   "cuMemcpy", "cuMemset", "cuMemCreate", "cuMemMap"),
         calls=frozenset({"malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "mmap"})),
    Rule("launcher-sync",
         "synchronises, captures a graph or changes device limits: the harness does the synchronisation and "
         "timing; a launcher that blocks times host work",
         names=frozenset({"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaThreadSynchronize",
                          "cudaStreamWaitEvent", "cudaStreamQuery", "cudaDeviceSetLimit", "cudaStreamBeginCapture",
                          "cudaStreamEndCapture", "cuCtxSynchronize", "cuStreamSynchronize", "cuCtxSetLimit",
                          "cudaDeviceReset", "cudaSetDevice", "cudaDeviceSetCacheConfig", "cuCtxSetCacheConfig",
                          "cudaSetDeviceFlags"}),
         prefixes=("cudaGraph", "cuGraph", "cuStreamBeginCapture")),
    Rule("env-probe",
         "reads the environment or process state: a candidate that detects a profiler or sanitizer "
         "(CUDA_INJECTION64_PATH, LD_PRELOAD) can behave honestly only when watched",
         names=frozenset({"getenv", "secure_getenv", "environ", "__environ", "setenv", "putenv", "unsetenv",
                          "readlink", "fopen", "freopen", "opendir", "ifstream", "fstream", "dladdr",
                          "dl_iterate_phdr", "getpid", "getppid", "sysconf"}),
         prefixes=("cupti", "nvtx")),
    Rule("dynamic-loading",
         "loads code or looks up functions at run time: a name fetched by string escapes this check",
         names=frozenset({"dlopen", "dlsym", "dlmopen", "dlvsym", "cudaGetDriverEntryPoint",
                          "cudaGetDriverEntryPointByVersion", "cuGetProcAddress", "cudaGetProcAddress",
                          "cuModuleLoad", "cuModuleLoadData", "cuLibraryLoadData", "cudaLibraryLoadData"})),
    Rule("host-static-state",
         "static or global host variable written by the launcher: results can be cached across calls "
         "(keyed on pointer or call count) instead of computed"),
    Rule("device-global-state",
         "__device__ global written by a kernel: state that persists across launches can cache results or "
         "carry counters between calls; allow it with allow: [device_globals] when the task needs it",
         names=frozenset({"cudaGetSymbolAddress"}), allow="device_globals", severity="warning"),
    Rule("local-include",
         "includes a local file: code in it is invisible to this check (and the candidate is one file); "
         "allow it with allow: [local_includes]", allow="local_includes"),
    Rule("hook-call",
         "calls or references a setup/teardown hook outside the hooks: hooks run only when the harness calls "
         "them, outside the timed window, and may allocate and synchronise, which the launcher may not"),
    Rule("macro-token-pasting",
         "## in a macro can assemble a banned identifier (cuda##Malloc) that this check cannot see"),
    Rule("load-time-code",
         "constructor/destructor attribute or OpenMP: code that runs at library load or on other threads "
         "escapes the timed launch"),
    Rule("stream-join",
         "work on a side stream that is not forked from the launch stream (cudaStreamWaitEvent on an event "
         "recorded there first) or not joined back to it (an event recorded after the work and waited for on "
         "the launch stream): it could run before or after the timed window"),
)


@dataclass(frozen=True)
class Capability:
    """An `allow:` entry that admits exactly the calls one skill needs, each where it is safe."""

    name: str
    in_hooks: frozenset[str]   # identifiers allowed inside the setup/teardown hooks only
    anywhere: frozenset[str]   # ... and in the launcher too: types, and calls that order work on the launch stream


# Why a capability keeps the timing honest: the harness holds the launch stream with a spin kernel while the
# launcher queues its work, then records its end event on that stream and synchronises the whole device.
# Work forked from the launch stream (an event recorded there, waited for by the side stream) cannot start
# before the hold ends; work joined back (an event recorded on the side stream, waited for by the launch
# stream) ends before the end event and before anything the harness queues next. A graph launched on the
# launch stream is ordered like one kernel there. CUPTI times every record the call issued on any stream,
# and the probes still fail a candidate whose work runs while the stream is held or after it moved on.
_STREAM_OBJECTS = frozenset({"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority",
                             "cudaStreamDestroy"})
CAPABILITIES: tuple[Capability, ...] = (
    # sys.streams_overlap: independent kernels on side streams forked from and joined back to the launch stream.
    Capability("streams",
               in_hooks=_STREAM_OBJECTS | {"cudaEventCreate", "cudaEventCreateWithFlags", "cudaEventDestroy",
                                           "cudaEventDisableTiming"},
               anywhere=frozenset({"cudaEvent_t", "cudaEventRecord", "cudaStreamWaitEvent"})),
    # sys.cuda_graphs: kernel-only graphs built (or captured) in the setup hook, their kernel arguments set per
    # call and the graph launched on the launch stream.
    Capability("cuda_graphs",
               in_hooks=_STREAM_OBJECTS | {"cudaStreamBeginCapture", "cudaStreamEndCapture", "cudaGraphCreate",
                                           "cudaGraphAddKernelNode", "cudaGraphInstantiate",
                                           "cudaGraphInstantiateWithFlags", "cudaGraphUpload", "cudaGraphGetNodes",
                                           "cudaGraphKernelNodeGetParams", "cudaGraphDestroy",
                                           "cudaGraphExecDestroy"},
               anywhere=frozenset({"cudaGraph_t", "cudaGraphExec_t", "cudaGraphNode_t", "cudaGraphLaunch",
                                   "cudaGraphExecKernelNodeSetParams"})),
    # mem.l2_persistence: an access-policy window on one launch (cudaLaunchKernelEx's attribute, which ends with
    # the launch); the persisting-L2 limit may be read in the hooks, never set, and stream attributes stay banned.
    Capability("l2_persistence",
               in_hooks=frozenset({"cudaLimitPersistingL2CacheSize", "cudaCtxResetPersistingL2Cache"}),
               anywhere=frozenset({"cudaLaunchAttributeAccessPolicyWindow", "cudaAccessPolicyWindow",
                                   "accessPolicyWindow", "cudaAccessPropertyPersisting"})),
)
CAPABILITY_BY_NAME = {c.name: c for c in CAPABILITIES}

RULE_BY_ID = {r.id: r for r in RULES}
ALLOWABLE = tuple(sorted({r.allow for r in RULES if r.allow} | set(CAPABILITY_BY_NAME)))

# Inside hook bodies: allocation, host state and plain synchronisation are the hooks' job.
HOOK_EXEMPT_RULES = frozenset({"launcher-memory", "host-static-state"})
HOOK_EXEMPT_NAMES = frozenset({"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaThreadSynchronize",
                               "cuCtxSynchronize", "cuStreamSynchronize"})

# Strings that name an interpreter or framework to load or run (a dlsym'd "Py_Initialize", "import torch").
_PYTHON_STRINGS = re.compile(r"libpython|libtorch|\bPy[A-Z]?[A-Za-z]*_[A-Z]\w*|\bimport\s+torch\b")
_PROBE_STRINGS = re.compile(r"CUDA_INJECTION64_PATH|LD_PRELOAD|NSYS_|NV_COMPUTE_PROFILER|NSIGHT|/proc/self|/proc/\d")
_ASM_TIMER = re.compile(r"globaltimer|%+clock(64)?\b|%+clock_hi\b")
_IDENT = re.compile(r"[A-Za-z_]\w*")


def _rule_for_name(name: str, called: bool) -> Rule | None:
    for rule in RULES:
        if name in rule.names or (called and name in rule.calls):
            return rule
        if rule.prefixes and name.startswith(rule.prefixes) and not name.startswith(rule.exclude_prefixes or ("\0",)):
            return rule
    return None


# Driver functions a launcher may fetch by name: the tensor-map encoders TMA needs (hop.tma_load), which
# the runtime API does not wrap. The name is a literal, so nothing escapes the check; any other name,
# or a name computed at run time, is still `dynamic-loading`.
ENTRY_POINTS = frozenset({"cuTensorMapEncodeTiled", "cuTensorMapEncodeIm2col"})
_ENTRY_POINT_LOOKUPS = frozenset({"cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion"})


def _named_entry_point(call) -> bool:
    """Is `call` a cudaGetDriverEntryPoint[ByVersion]("<one of ENTRY_POINTS>", ...)?"""
    function = call.child_by_field_name("function")
    arguments = call.child_by_field_name("arguments")
    if function is None or arguments is None or syntax.text(function) not in _ENTRY_POINT_LOOKUPS:
        return False
    first = next((c for c in arguments.children if c.is_named and c.type != "comment"), None)
    return first is not None and first.type == "string_literal" and syntax.text(first).strip('"') in ENTRY_POINTS


def banned_identifier(word: str) -> str | None:
    """The rule id that bans identifier `word` anywhere (call-only names excluded), or None."""
    if not word:
        return None
    rule = _rule_for_name(word, called=False)
    if rule is None:
        rule = next((r for r in RULES if word in r.namespaces), None)
    return rule.id if rule else None


def errors_only(violations: list[Violation]) -> list[Violation]:
    return [v for v in violations if v.severity == "error"]


def _read(path_or_text) -> tuple[bytes, str]:
    if isinstance(path_or_text, Path):
        if not path_or_text.is_file():
            raise InputError(f"{path_or_text}: no such file")
        return path_or_text.read_bytes(), str(path_or_text)
    text = str(path_or_text)
    if "\n" not in text and text.endswith((".cu", ".cuh", ".h", ".cpp")) and Path(text).is_file():
        return Path(text).read_bytes(), text
    return text.encode("utf-8"), "<source>"


def check_source(path_or_text, allow=(), hooks=()) -> list[Violation]:
    """Every banned pattern in a `.cu` file (a Path, a path string, or the source text), in line order.

    `hooks`: names of the spec's setup/teardown functions, whose bodies may allocate, synchronise and
    write host globals (see the module doc)."""
    allow = tuple(allow or ())
    hooks = tuple(h for h in (hooks or ()) if h)
    for entry in allow:
        if entry not in ALLOWABLE:
            match = suggestions(entry, ALLOWABLE)
            raise InputError(f"allow: '{entry}' is not something the static check can allow "
                             f"(known: {', '.join(ALLOWABLE)})", hint=f"did you mean '{match[0]}'?" if match else None)
    if isinstance(path_or_text, Path | str) and str(path_or_text).endswith(".py") and "\n" not in str(path_or_text):
        # A PyTorch implementation: the harness runs it only where the task allows torch.
        rule = RULE_BY_ID["python-candidate"]
        return [] if "torch" in allow else [Violation(rule.id, 1, Path(path_or_text).name, rule.rationale)]
    source, _ = _read(path_or_text)
    return _Checker(source, set(allow), set(hooks)).run(syntax.parse(source).root_node)


class _Checker:
    def __init__(self, source: bytes, allow: set[str], hooks: set[str] = frozenset()):
        self.lines = source.decode("utf-8", "replace").splitlines()
        self.allow = allow
        self.hooks = set(hooks)
        self.hook_spans: list[tuple[int, int]] = []     # byte ranges of the hooks' definitions
        self.capabilities = [CAPABILITY_BY_NAME[a] for a in sorted(allow) if a in CAPABILITY_BY_NAME]
        self.found: dict[tuple[str, int, str], Violation] = {}

    # -- reporting ------------------------------------------------------------------------------
    def in_hook(self, node) -> bool:
        return any(start <= node.start_byte and node.end_byte <= end for start, end in self.hook_spans)

    def report(self, rule: Rule | str, node_or_line, what: str = "") -> None:
        rule = RULE_BY_ID[rule] if isinstance(rule, str) else rule
        if rule.allow and rule.allow in self.allow:
            return
        if self.hook_spans and not isinstance(node_or_line, int) and self.in_hook(node_or_line) and \
                (rule.id in HOOK_EXEMPT_RULES or (rule.id == "launcher-sync" and what in HOOK_EXEMPT_NAMES)):
            return
        line = node_or_line if isinstance(node_or_line, int) else syntax.line(node_or_line)
        column = 1 if isinstance(node_or_line, int) else node_or_line.start_point[1] + 1
        snippet = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else what
        if len(snippet) > 120:
            snippet = snippet[:117] + "..."
        key = (rule.id, line, "")  # one report per rule and line is enough to act on
        if key not in self.found:
            self.found[key] = Violation(rule.id, line, snippet, rule.rationale, rule.severity, column)

    # -- walk -----------------------------------------------------------------------------------
    def run(self, root) -> list[Violation]:
        if self.hooks:
            self.hook_spans = [(fn.start_byte, fn.end_byte) for fn in syntax.descendants(root)
                               if fn.type == "function_definition"
                               and syntax.function_name(fn.child_by_field_name("declarator")) in self.hooks]
        self.walk(root)
        self.check_state(root)
        if {"streams", "cuda_graphs"} & self.allow:
            self.check_stream_joins(root)
        return sorted(self.found.values(), key=lambda v: (v.line, v.rule))

    def capability_allows(self, name: str, node) -> bool:
        """Does an allowed capability admit identifier `name` here (in a hook, or anywhere)?"""
        return any(name in c.anywhere or (name in c.in_hooks and self.in_hook(node)) for c in self.capabilities)

    def walk(self, node) -> None:
        kind = node.type
        if kind in ("comment",):
            return
        if kind in ("identifier", "type_identifier", "field_identifier", "namespace_identifier"):
            self.check_name(node)
        elif kind == "qualified_identifier":
            flat = re.sub(r"\s+", "", syntax.text(node))
            if flat.startswith(("std::thread", "std::jthread", "std::async", "::std::thread")):
                self.report("stream-or-thread", node, flat)
        elif kind == "gnu_asm_expression":
            for child in node.children:
                if child.type in ("string_literal", "concatenated_string", "raw_string_literal") \
                        and _ASM_TIMER.search(syntax.text(child)):
                    self.report("timing", child, "asm clock")
        elif kind in ("string_literal", "raw_string_literal") and _PROBE_STRINGS.search(syntax.text(node)):
            self.report("env-probe", node, "probe string")
        elif kind in ("string_literal", "raw_string_literal") and _PYTHON_STRINGS.search(syntax.text(node)):
            self.report("embedded-python", node, "python string")
        elif kind in ("preproc_arg",):
            self.check_macro_text(node)
        elif kind == "preproc_include":
            path = node.child_by_field_name("path")
            if path is not None and path.type == "string_literal":
                self.report("local-include", node, syntax.text(path))
        elif kind == "preproc_call":
            directive = node.child_by_field_name("directive")
            argument = node.child_by_field_name("argument")
            if directive is not None and syntax.text(directive) == "#pragma" and argument is not None \
                    and syntax.text(argument).strip().startswith("omp"):
                self.report("load-time-code", node, "omp")
        elif kind == "new_expression":
            self.report("launcher-memory", node, "new")
        elif kind == "using_declaration":
            for word in _IDENT.findall(syntax.text(node)):
                self.check_namespace(word, node)
        elif kind in ("attribute_specifier", "attribute_declaration", "attribute"):
            if re.search(r"\b(constructor|destructor)\b", syntax.text(node)):
                self.report("load-time-code", node, "constructor")
        elif kind == "ERROR":
            # tree-sitter could not parse this region; scan its words so a parse error cannot hide a call.
            self.check_words(syntax.strip_comments_and_strings(syntax.text(node)), syntax.line(node), called=True)
        for child in node.children:
            self.walk(child)

    def check_namespace(self, word: str, node) -> None:
        for rule in RULES:
            if word in rule.namespaces:
                self.report(rule, node, word)

    def check_name(self, node) -> None:
        name = syntax.text(node)
        if name in self.hooks and node.type == "identifier" and not self.in_hook(node) and not _declares(node):
            self.report("hook-call", node, name)
        if node.type == "namespace_identifier":
            self.check_namespace(name, node)
        parent = node.parent
        called = (parent is not None and parent.type == "call_expression"
                  and parent.child_by_field_name("function") == node)
        rule = _rule_for_name(name, called)
        if rule is not None and not (called and _named_entry_point(parent)) and not self.capability_allows(name, node):
            self.report(rule, node, name)

    def check_words(self, text: str, first_line: int, called: bool) -> None:
        for offset, line in enumerate(text.splitlines() or [text]):
            for word in _IDENT.findall(line):
                if word in self.hooks:
                    self.report("hook-call", first_line + offset, word)
                rule = _rule_for_name(word, called) or next((r for r in RULES if word in r.namespaces), None)
                if rule is not None:
                    self.report(rule, first_line + offset, word)

    def check_macro_text(self, node) -> None:
        text = syntax.text(node)
        line = syntax.line(node)
        if "##" in text:
            self.report("macro-token-pasting", line, "##")
        if _ASM_TIMER.search(text) and re.search(r"\basm\b|__asm__", text):
            self.report("timing", line, "asm clock")
        if _PROBE_STRINGS.search(text):
            self.report("env-probe", line, "probe string")
        # A macro body is not parsed; treat every word in it as possibly called.
        self.check_words(syntax.strip_comments_and_strings(text), line, called=True)

    # -- side streams: forked from and joined back to the launch stream -------------------------------
    def check_stream_joins(self, root) -> None:
        """`stream-join`: in every function but the hooks, in source order, work on a side stream must
        follow a wait for an event recorded on the launch stream (the fork), and an event recorded on
        that stream after its last work must be waited for on the launch stream (the join)."""
        for fn in syntax.descendants(root):
            if fn.type != "function_definition" or self.in_hook(fn):
                continue
            body = fn.child_by_field_name("body")
            if body is not None:
                self.check_fork_join(body)

    def check_fork_join(self, body) -> None:
        # A fork or join counts only as a statement of the function's own body (not under an if, a loop or a
        # switch, which may skip it), and no return, goto or throw may leave the function before the join.
        on_launch_stream: set[str] = set()            # events last recorded on the launch stream
        forked: set[str] = set()                      # side streams that waited for one of them
        unjoined: dict[str, object] = {}              # side stream -> its latest work not yet joined
        recorded: dict[str, tuple[str, object]] = {}  # event -> (side stream, the work it covers)
        configs: dict[str, str] = {}                  # launch config -> its `.stream` expression
        first_side_work = None
        for node in syntax.descendants(body):
            if node.type == "assignment_expression":
                left = node.child_by_field_name("left")
                if left is not None and left.type == "field_expression" and \
                        syntax.text(left.child_by_field_name("field")) == "stream":
                    configs[_flat(left.child_by_field_name("argument"))] = _flat(node.child_by_field_name("right"))
                continue
            if node.type == "init_declarator":
                value = node.child_by_field_name("value")
                if value is not None and value.type == "initializer_list":
                    configs[syntax.declarator_name(node) or ""] = _initialised_stream(value)
                continue
            if node.type != "call_expression":
                continue
            kind, stream, event = _stream_site(node, configs)
            if kind in ("record", "wait") and not _body_statement(node, body):
                continue
            if kind == "record":
                if _is_launch_stream(stream):
                    on_launch_stream.add(event)
                    recorded.pop(event, None)
                else:
                    on_launch_stream.discard(event)
                    recorded[event] = (stream, unjoined.get(stream))
            elif kind == "wait":
                if not _is_launch_stream(stream):
                    if event in on_launch_stream:
                        forked.add(stream)
                elif event in recorded:
                    side, covered = recorded[event]
                    if covered is not None and unjoined.get(side) is covered:
                        del unjoined[side]
            elif kind == "work" and not _is_launch_stream(stream):
                first_side_work = first_side_work or node
                if stream not in forked:
                    self.report("stream-join", node, f"{stream}: not forked")
                unjoined[stream] = node
        for node in unjoined.values():
            self.report("stream-join", node, "not joined")
        if first_side_work is not None:
            for leave in syntax.descendants(body):
                if leave.type in _EXITS and leave.start_byte > first_side_work.end_byte:
                    self.report("stream-join", leave, "leaves before the join")

    # -- state across calls ----------------------------------------------------------------------
    def check_state(self, root) -> None:
        host_globals: dict[str, object] = {}
        device_globals: dict[str, object] = {}
        functions = []

        def collect(node, top: bool) -> None:
            for child in node.children:
                if child.type == "function_definition":
                    functions.append(child)
                elif child.type == "declaration" and top:
                    names = _declared_names(child)
                    if not names:
                        continue
                    words = _declaration_words(child)
                    if words & {"__device__", "__managed__"}:
                        for n in names:
                            device_globals[n] = child
                    elif words & {"__constant__", "__shared__", "extern", "typedef"}:
                        continue
                    else:   # `const float* last` is no constant: the pointer itself can be set
                        for n in names:
                            if not _is_const_object(child, n):
                                host_globals[n] = child
                elif child.type in ("namespace_definition", "declaration_list", "linkage_specification",
                                    "template_declaration", "preproc_if", "preproc_ifdef", "preproc_else",
                                    "preproc_elif"):
                    collect(child, True)

        collect(root, True)
        for members in syntax.descendants(root):   # a class's methods and static data members
            if members.type != "field_declaration_list":
                continue
            for child in members.children:
                if child.type == "template_declaration":
                    child = next((c for c in child.children if c.type == "function_definition"), child)
                if child.type == "function_definition":
                    functions.append(child)
                elif child.type == "field_declaration" and "static" in _declaration_words(child):
                    for n in _declared_names(child):
                        if not _is_const_object(child, n):
                            host_globals[n] = child
        constants = _file_constants(root)
        references = _reference_parameters(root)   # once per file: _is_written asks for every argument it sees
        fixed = _fixed_parameters(root, functions, constants, references)
        file_calls = _fact_functions(functions, constants, fixed, references)
        global_writes: dict[str, list[tuple[object, str]]] = {}   # name -> (use, kind of write)
        for fn in functions:
            body = fn.child_by_field_name("body")
            if body is None:
                continue
            calls = file_calls | fixed.get(fn.start_byte, frozenset())
            facts = _device_facts(body, calls, references)
            statics = set(host_globals).union(*(names for _, names in _static_locals(body)))
            pointers = _cache_pointers(body, statics, facts, calls, references)
            self.static_locals(body, facts, calls, pointers, references)
            for node in syntax.descendants(body):
                if node.type != "identifier":
                    continue
                name = syntax.text(node)
                if name in host_globals and _is_written(node, references) and node.start_byte not in pointers.bindings:
                    global_writes.setdefault(name, []).append(_write(node, facts, set(host_globals), calls))
                elif name in device_globals and _is_written(node, references):
                    self.report("device-global-state", node, name)
            for name in set(host_globals) & set(pointers.writes):
                global_writes.setdefault(name, []).extend(pointers.writes[name])
            for name, uses in _paren_references(body).items():
                if name in host_globals:
                    global_writes.setdefault(name, []).extend((use, "other") for use in uses)
        for name, writes in global_writes.items():
            if not _device_fact_cache(writes, _initializer(host_globals[name], name), calls):
                for node, _ in writes:
                    self.report("host-static-state", node, name)

    def static_locals(self, body, facts: set[str], calls: frozenset[str], pointers: CachePointers,
                      references: dict[str, set[int]]) -> None:
        bound = _paren_references(body)
        for node, names in _static_locals(body):
            cached = bool(names)
            for name in names:
                writes = [_write(use, facts, set(names), calls) for use in syntax.descendants(body)
                          if use.type == "identifier" and syntax.text(use) == name
                          and use.start_byte > node.end_byte and _is_written(use, references)
                          and use.start_byte not in pointers.bindings]
                writes += pointers.writes.get(name, [])
                writes += [(use, "other") for use in bound.get(name, []) if use.start_byte > node.end_byte]
                cached &= _device_fact_cache(writes, _initializer(node, name), calls)
            if not cached:
                self.report("host-static-state", node, "static local")


def _static_locals(body) -> list[tuple[object, list[str]]]:
    """The writable static (or thread_local) declarations in a function body, each with the names it declares."""
    found = []
    for node in syntax.descendants(body):
        if node.type != "declaration":
            continue
        specifiers = {syntax.text(c) for c in node.children if c.type in ("storage_class_specifier", "type_qualifier")}
        words = _declaration_words(node)
        if {"static", "thread_local"} & (specifiers | words) and "__shared__" not in words:
            names = _declared_names(node)
            writable = [n for n in names if not _is_const_object(node, n)]
            if writable or not names:
                found.append((node, writable))
    return found


def _is_const_object(declaration, name: str) -> bool:
    """Is the variable `name` itself const: `constexpr`, or `const` with no pointer in its declarator, or
    the pointer nearest its name qualified const (`const float* const p`)? `static const float* last`
    declares a pointer that can be set on every call (to the input it was given)."""
    words = _declaration_words(declaration)
    if "constexpr" in words:
        return True
    for child in declaration.children:
        node, pointer = child, None
        while node is not None and node.type not in ("identifier", "field_identifier", "function_declarator"):
            if node.type == "pointer_declarator":
                pointer = node
            node = node.child_by_field_name("declarator")
        if node is not None and node.type in ("identifier", "field_identifier") and syntax.text(node) == name:
            if pointer is not None:
                return any(c.type == "type_qualifier" and syntax.text(c) == "const" for c in pointer.children)
            break
    return "const" in words


# The launch stream as a launcher names it: no stream, the legacy default stream, or a null handle.
_LAUNCH_STREAM = frozenset({"", "0", "NULL", "nullptr", "cudaStreamLegacy", "(cudaStream_t)0", "cudaStream_t(0)",
                            "(cudaStream_t)nullptr", "(cudaStream_t)NULL"})


def _flat(node) -> str:
    return "" if node is None else re.sub(r"\s+", "", syntax.text(node))


def _is_launch_stream(stream: str) -> bool:
    return stream in _LAUNCH_STREAM


_EXITS = ("return_statement", "goto_statement", "throw_statement")


def _initialised_stream(initializer) -> str:
    """The stream a `cudaLaunchConfig_t c = {grid, block, smem, stream, ...}` (or `{.stream = s}`) names."""
    items = [c for c in initializer.named_children if c.type != "comment"]
    for item in items:
        if item.type == "initializer_pair" and "stream" in _flat(item.child_by_field_name("designator")):
            return _flat(item.child_by_field_name("value"))
    positional = [c for c in items if c.type != "initializer_pair"]
    return _flat(positional[3]) if len(positional) > 3 and len(positional) == len(items) else ""


def _body_statement(call, body) -> bool:
    """Is `call` an expression statement of `body` itself (not nested in a branch, loop or block)?"""
    statement = call.parent
    return statement is not None and statement.type == "expression_statement" and statement.parent == body


def _stream_site(call, configs: dict[str, str]) -> tuple[str | None, str, str]:
    """(kind, stream, event) of a call that touches a stream: "record" (cudaEventRecord), "wait"
    (cudaStreamWaitEvent), "work" (a kernel or graph launch), or (None, "", "")."""
    args = call.child_by_field_name("arguments")
    chevron = next((c for c in call.children if c.type == "kernel_call_syntax"), None)
    if chevron is not None:
        config = chevron.named_children
        return "work", _flat(config[3]) if len(config) > 3 else "", ""
    given = [c for c in args.named_children if c.type != "comment"] if args is not None else []
    name = _flat(call.child_by_field_name("function")).split("::")[-1]

    def arg(i: int) -> str:
        return _flat(given[i]) if i < len(given) else ""

    if name in ("cudaEventRecord", "cudaEventRecordWithFlags"):
        return "record", arg(1), arg(0)
    if name == "cudaStreamWaitEvent":
        return "wait", arg(0), arg(1)
    if name == "cudaGraphLaunch":
        return "work", arg(1), ""
    if name in ("cudaLaunchKernel", "cudaLaunchCooperativeKernel"):
        return "work", arg(5), ""
    if name == "cuLaunchKernel":
        return "work", arg(8), ""
    if name == "cudaLaunchKernelEx":
        return "work", configs.get(arg(0).lstrip("&"), ""), ""
    return None, "", ""


# A launcher may cache what the device is (its SM count, properties, an occupancy figure) in a static:
# the idiom is common and honest, and such a value cannot carry a result or a call count from one
# call to the next. Caching results stays refused here and is caught at run time anyway (fresh input
# values and addresses per timed iteration, the last timed output verified again: VERIFY.md).
DEVICE_QUERIES = frozenset({
    "cudaGetDevice", "cudaGetDeviceCount", "cudaDeviceGetAttribute", "cudaGetDeviceProperties",
    "cudaGetDeviceProperties_v2", "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "cudaOccupancyMaxPotentialBlockSize",
    "cudaFuncGetAttributes", "cudaDriverGetVersion", "cudaRuntimeGetVersion", "cuDeviceGetAttribute"})

# What the right side of a device-fact assignment may hold besides literals and device facts.
_FACT_EXPRESSION_NODES = frozenset({
    "number_literal", "true", "false", "identifier", "field_expression", "field_identifier", "binary_expression",
    "parenthesized_expression", "conditional_expression", "cast_expression", "type_descriptor",
    "primitive_type", "sized_type_specifier", "unary_expression"})


def _outermost(identifier, through: tuple[str, ...]):
    """(the expression `identifier` heads, its parent), climbing while it is the first child of a `through`
    node: `x` in `x.f`, `(x)`, `x[i]` (when subscripts are in `through`)."""
    node, parent = identifier, identifier.parent
    while parent is not None and parent.type in through and _head(parent) == node:
        node, parent = parent, parent.parent
    return node, parent


def _head(expression):
    """The operand an expression is built on: the inside of `(x)`, the object of `x.f` / `x[i]`."""
    if expression.type == "parenthesized_expression":
        inner = [c for c in expression.named_children if c.type != "comment"]
        return inner[0] if len(inner) == 1 else None
    return expression.children[0] if expression.children else None


_MEMBER_OF = ("field_expression", "parenthesized_expression")   # x.f, (x): the variable itself, no index


def _query_write(identifier) -> bool:
    """Is this use `&x` (or `&x.field`) passed to a device query (cudaDeviceGetAttribute(&x, ...))?"""
    _, parent = _outermost(identifier, _MEMBER_OF)
    if parent is None or parent.type != "pointer_expression" or not parent.children \
            or parent.children[0].type != "&":
        return False
    return _query_argument(parent)


def _query_argument(node) -> bool:
    """Is this expression an argument of a device query call?"""
    call = node.parent.parent if node.parent is not None and node.parent.type == "argument_list" else None
    if call is None or call.type != "call_expression":
        return False
    function = call.child_by_field_name("function")
    return function is not None and syntax.text(function).split("::")[-1] in DEVICE_QUERIES


def _device_facts(body, calls: frozenset[str], references: dict[str, set[int]]) -> set[str]:
    """Names in a function body whose address a device query writes through (`int v; cudaGetDevice(&v)`)
    and that start from a literal (or nothing) and are otherwise only given literals and device facts:
    a queried local later set from an input (`v = n;`) is not a device fact."""
    facts = {syntax.text(node) for node in syntax.descendants(body)
             if node.type == "identifier" and _query_write(node)} - set(_paren_references(body))
    while facts:   # to a fixed point: a local set from a disqualified one is disqualified too
        tainted = set()
        for node in syntax.descendants(body):
            if node.type == "declaration":
                tainted.update(name for name in set(_declared_names(node)) & facts
                               if (initial := _initializer(node, name)) is not None
                               and not _fact_expression(initial, set(), calls))
            elif node.type == "identifier" and syntax.text(node) in facts and _is_written(node, references) \
                    and _write(node, facts, set(), calls)[1] == "other":
                tainted.add(syntax.text(node))
        if not tainted:
            break
        facts -= tainted
    return facts


def _fact_expression(node, facts: set[str], calls: frozenset[str] = frozenset()) -> bool:
    """An expression of literals, device facts and the file's names in `calls` (its literal constants,
    and functions that return device facts, called with whatever arguments) only: no other call,
    subscript, pointer or assignment."""
    if node.type == "call_expression":
        function = node.child_by_field_name("function")
        return function is not None and syntax.text(function) in calls
    if node.type == "identifier":
        return syntax.text(node) in facts or syntax.text(node) in calls
    if node.is_named and node.type not in _FACT_EXPRESSION_NODES:
        return False
    return all(_fact_expression(child, facts, calls) for child in node.children)


_NUMERIC_MACRO = re.compile(r"[\s\d.xXa-fA-FuUlL()+\-*/%<>|&~^]+")


def _file_constants(root) -> set[str]:
    """Names the file gives a literal value: `#define THREADS 256`, `constexpr int WAVES = 1;` at file scope."""
    names: set[str] = set()
    for node in root.children:
        if node.type == "preproc_def":
            name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if name is not None and value is not None and _NUMERIC_MACRO.fullmatch(syntax.text(value).strip()):
                names.add(syntax.text(name))
        elif node.type == "declaration" and \
                {"const", "constexpr"} & _declaration_words(node):
            names.update(n for n in _declared_names(node)
                         if (v := _initializer(node, n)) is not None and _fact_expression(v, set(), frozenset(names)))
    return names


def _fact_functions(functions, constants: set[str], fixed: dict[int, frozenset[str]],
                    references: dict[str, set[int]]) -> frozenset[str]:
    """Names of the file's functions that only ever return device facts (`static int resident_blocks(...)`:
    queries the SM count and an occupancy figure, returns their product): each local a query writes
    starts from a literal and is otherwise only assigned literals and facts, and every return is an
    expression of those (a parameter returned, or anything read through a pointer, disqualifies it;
    a parameter in `fixed`, given a literal by every call, is a literal).
    Found to a fixed point, so such a function may call another; the result holds `constants` too."""
    found: set[str] = set(constants)
    while True:
        grown = set(found)
        for fn in functions:
            name = _function_name(fn)
            body = fn.child_by_field_name("body")
            if name is None or name in grown or body is None:
                continue
            if _returns_device_facts(body, frozenset(grown) | fixed.get(fn.start_byte, frozenset()), references):
                grown.add(name)
        if grown == found:
            return frozenset(found)
        found = grown


def _fixed_parameters(root, functions, constants: set[str],
                      references: dict[str, set[int]]) -> dict[int, frozenset[str]]:
    """For each function (by start byte) that only this file's code can call (not `extern "C"`, so not a
    launcher or hook the harness calls; defined once; its name used only as a callee and in no macro body,
    where a call is invisible), its scalar parameters that every call gives a literal (`_literal_argument`)
    and that its body only reads (`_only_read`: never assigned, incremented, addressed, bound to a non-const
    reference or shadowed). Inside the function such a parameter is a literal."""
    names = _Names(references, _macro_words(root))
    definitions: dict[str, list] = {}
    for fn in functions:
        if (name := _function_name(fn)) is not None:
            definitions.setdefault(name, []).append(fn)
    uses: dict[str, list] = {}
    for node in syntax.descendants(root):
        if node.type == "identifier" and syntax.text(node) in definitions and not _declares(node):
            uses.setdefault(syntax.text(node), []).append(node)
    fixed: dict[int, frozenset[str]] = {}
    caller_constants: dict[int, dict[str, int]] = {}   # a caller's start byte -> its constants (`_local_constants`)
    for name, (fn, *others) in definitions.items():
        calls = [use.parent for use in uses.get(name, [])]
        if others or name in names.in_macros or syntax.in_extern_c(fn) or not calls or any(
                use.parent.type != "call_expression" or use.parent.child_by_field_name("function") != use
                for use in uses[name]):
            continue
        literal = set()
        for i, (parameter, declared) in enumerate(_scalar_parameters(fn)):
            if parameter is not None and parameter not in names.in_macros \
                    and _only_read(fn, parameter, declared, names) \
                    and all(_literal_argument(call, i, constants, caller_constants, names) for call in calls):
                literal.add(parameter)
        if literal:
            fixed[fn.start_byte] = frozenset(literal)
    return fixed


@dataclass(frozen=True)
class _Names:
    """What the file says about names beyond a function's own text, for `_only_read`."""
    references: dict[str, set[int]]   # `_reference_parameters` (function-like macros' written arguments too)
    in_macros: frozenset[str]         # every word of every macro body: a name used there may mean anything


def _macro_words(root) -> frozenset[str]:
    return frozenset(word for node in syntax.descendants(root) if node.type in ("preproc_def", "preproc_function_def")
                     and (value := node.child_by_field_name("value")) is not None
                     for word in _IDENT.findall(syntax.strip_comments_and_strings(syntax.text(value))))


# Where a name is read and nothing else: an operand, an argument, a returned or launched value.
_READ_CONTEXTS = frozenset({"argument_list", "binary_expression", "conditional_expression", "parenthesized_expression",
                            "return_statement", "kernel_call_syntax", "unary_expression", "condition_clause"})
_READ_FIELDS = {"init_declarator": "value", "assignment_expression": "right", "cast_expression": "value"}


def _only_read(scope, name: str, declared, names: _Names) -> bool:
    """Is every use of `name` in `scope` but its declaring identifier `declared` a plain read? Not a write
    (`_is_written`: nor an argument a function-like macro may write), not another declaration (a lambda's
    parameter, a range-for's variable, a capture, a shadowing local), not cast away from const: so each names
    the one variable `declared` declares, holding the value it was given."""
    for use in syntax.descendants(scope):
        if use.type != "identifier" or syntax.text(use) != name or use.start_byte == declared.start_byte:
            continue
        parent = use.parent
        field = _READ_FIELDS.get(parent.type)
        if not (parent.child_by_field_name(field) == use if field else parent.type in _READ_CONTEXTS):
            return False
        if _is_written(use, names.references):
            return False
        node = use
        while node is not None and node != scope:
            if node.type == "call_expression" and (function := node.child_by_field_name("function")) is not None \
                    and "const_cast" in syntax.text(function):
                return False
            node = node.parent
    return True


def _scalar_parameters(function) -> list[tuple[str | None, object]]:
    """A function's parameters in order, each (its name, its identifier node); (None, None) where the parameter
    is not a plain named value."""
    declarator = syntax.function_declarator(function.child_by_field_name("declarator"))
    parameters = declarator.child_by_field_name("parameters") if declarator is not None else None
    found = []
    for parameter in parameters.named_children if parameters is not None else ():
        if parameter.type == "comment":
            continue
        inner = parameter.child_by_field_name("declarator") if parameter.type == "parameter_declaration" else None
        found.append((syntax.text(inner), inner) if inner is not None and inner.type == "identifier" else (None, None))
    return found


def _literal_argument(call, position: int, constants: set[str], caller_constants: dict[int, dict[str, int]],
                      names: _Names) -> bool:
    """Is the call's argument at `position` a literal: numbers and file constants, or a `const` local of the
    calling function declared before the call and only read (`_local_constants`; `caller_constants` caches them)?"""
    arguments = call.child_by_field_name("arguments")
    values = [c for c in arguments.named_children if c.type != "comment"] if arguments is not None else []
    if position >= len(values):
        return False
    caller = call.parent
    while caller is not None and caller.type != "function_definition":
        caller = caller.parent
    local = frozenset()
    if caller is not None:
        if caller.start_byte not in caller_constants:
            caller_constants[caller.start_byte] = _local_constants(caller, constants, names)
        local = frozenset(n for n, declared_by in caller_constants[caller.start_byte].items()
                          if declared_by <= call.start_byte)
    return _fact_expression(values[position], set(), frozenset(constants | local)) and not _has_call(values[position])


def _local_constants(function, constants: set[str], names: _Names) -> dict[str, int]:
    """The `const` / `constexpr` locals a statement of the function's own body declares (not one nested in a
    block, loop or lambda) and sets to numbers and file constants, that no macro mentions and that the function
    only reads (`_only_read`), each with the byte its declaration ends at (a use before it is another name).
    The qualifier is read from the syntax tree (a comment saying const is no const)."""
    body = function.child_by_field_name("body")
    local: dict[str, int] = {}
    for declaration in body.named_children if body is not None else ():
        if declaration.type != "declaration" or not {"const", "constexpr"} & {
                syntax.text(c) for c in declaration.children if c.type == "type_qualifier"}:
            continue
        for child in declaration.children:
            declared = child.child_by_field_name("declarator") if child.type == "init_declarator" else None
            initial = child.child_by_field_name("value") if declared is not None else None
            if declared is None or declared.type != "identifier" or initial is None:
                continue
            name = syntax.text(declared)
            if name not in names.in_macros and _fact_expression(initial, set(), frozenset(constants)) \
                    and not _has_call(initial) and _only_read(function, name, declared, names):
                local[name] = declaration.end_byte
    return local


def _function_name(function) -> str | None:
    return syntax.function_name(function.child_by_field_name("declarator"))


def _returns_device_facts(body, calls: frozenset[str], references: dict[str, set[int]]) -> bool:
    facts = _device_facts(body, calls, references)
    returns = [node for node in syntax.descendants(body) if node.type == "return_statement"]
    values = [next((c for c in r.named_children if c.type != "comment"), None) for r in returns]
    return bool(returns) and all(v is not None and _fact_expression(v, facts, calls) for v in values)


def _fact_assignment(target, facts: set[str], calls: frozenset[str] = frozenset()):
    """The right side of `target = <literals and device facts>` when `target` is its left side, else None."""
    parent = target.parent
    if parent is None or parent.type != "assignment_expression" or parent.child_by_field_name("left") != target:
        return None
    operator = parent.child_by_field_name("operator")
    right = parent.child_by_field_name("right")
    if operator is None or syntax.text(operator) != "=" or right is None or not _fact_expression(right, facts, calls):
        return None
    return right


def _write(identifier, facts: set[str], statics: set[str], calls: frozenset[str] = frozenset()) -> tuple[object, str]:
    """A write to a static, classified: "query" (a device query writes through its address), "derived"
    (assigned an expression that reads a queried value), "literal" (assigned literals or other statics
    only), or "other" (anything else: an input, a pointer, a counter)."""
    if _query_write(identifier):
        return identifier, "query"
    return identifier, _assigned(_outermost(identifier, _MEMBER_OF)[0], facts, statics, calls)


def _assigned(target, facts: set[str], statics: set[str], calls: frozenset[str]) -> str:
    """What `target = <right>` stores: "derived", "literal" or "other" (as `_write` classifies a write)."""
    right = _fact_assignment(target, facts | statics, calls)
    if right is None:
        return "other"
    nodes = (right, *syntax.descendants(right))
    reads = {syntax.text(n) for n in nodes if n.type == "identifier"}
    queried = reads & (facts - statics) or _has_call(right)
    return "derived" if queried else "literal"


@dataclass
class CachePointers:
    """A function's local pointers that can only point at static caches (`_cache_pointers`)."""
    bindings: set[int]                              # start bytes of the `s` in each `&s` that binds such a pointer
    writes: dict[str, list[tuple[object, str]]]     # static -> the writes through a pointer that may point at it


def _cache_pointers(body, statics: set[str], facts: set[str], calls: frozenset[str],
                    references: dict[str, set[int]]) -> CachePointers:
    """Local pointers that only ever hold the address of one of `statics` (`int* slot = hit ? &a : &b;`,
    any condition; `slot = &c;`) and are used only to read `*slot`, to assign `*slot = <...>` or as a
    device query's output argument. A write through such a pointer counts as a write to every static it may
    point at, classified like a direct one, so a pointer-selected cache of device facts is one (issue 16) and
    a static written through a pointer with anything else is not. A pointer used in any other way (copied,
    passed on, indexed, offset, returned, compared) may alias anything: its `&s` stay writes of unknown value."""
    pointers = CachePointers(set(), {})
    for declaration in syntax.descendants(body):
        if declaration.type != "declaration" or \
                {"static", "thread_local"} & {syntax.text(c) for c in declaration.children}:
            continue   # a static pointer is host state of its own, checked as such
        for child in declaration.children:   # `int* slot = ...;` or `int* slot;`
            declarator = child.child_by_field_name("declarator") if child.type == "init_declarator" else child
            if declarator is None or declarator.type != "pointer_declarator" or \
                    (name := declarator.child_by_field_name("declarator")) is None or name.type != "identifier":
                continue
            found = _cache_pointer(body, child, syntax.text(name), statics, facts, calls, references)
            if found is not None:
                bindings, targets, writes = found
                pointers.bindings |= bindings
                for target in targets:
                    pointers.writes.setdefault(target, []).extend(writes)
    return pointers


def _cache_pointer(body, declarator, name: str, statics, facts, calls, references):
    """(the `&s` bindings, the statics pointed at, the writes through it) for the pointer `name` that
    `declarator` (`*slot = <value>` or `*slot`) declares, or None when it may point at anything but statics
    (`_cache_pointers`). A pointer declared without a value, or null, points at nothing yet."""
    value = declarator.child_by_field_name("value") if declarator.type == "init_declarator" else None
    addresses = [] if value is None else _addresses(value, statics)
    if addresses is None:
        return None
    writes: list[tuple[object, str]] = []
    for use in syntax.descendants(body):
        if use.type != "identifier" or syntax.text(use) != name or use.start_byte < declarator.end_byte:
            continue   # before its declarator ends, the name is another variable (or the one being declared)
        node, parent = _outermost(use, ("parenthesized_expression",))
        if parent is not None and parent.type == "assignment_expression" and parent.child_by_field_name("left") == node:
            operator = parent.child_by_field_name("operator")
            more = _addresses(parent.child_by_field_name("right"), statics) \
                if operator is not None and syntax.text(operator) == "=" else None
            if more is None:
                return None
            addresses += more
        elif parent is not None and parent.type == "pointer_expression" and parent.children[0].type == "*":
            # *slot = v; and (*slot)++, int& r = *slot, &*slot, keep(*slot): "other"
            if _is_written(parent, references):
                writes.append((use, _assigned(_outermost(parent, _MEMBER_OF)[0], facts, statics, calls)))
        elif _query_argument(node):
            writes.append((use, "query"))
        else:
            return None   # the pointer escapes
    return {a.start_byte for a in addresses}, {syntax.text(a) for a in addresses}, writes


def _addresses(expression, statics: set[str]) -> list | None:
    """The identifiers `s` of the statics an expression can only be the address of (`&s`, `(E)`,
    `c ? E1 : E2` with any condition; a null pointer adds none), or None when it may be anything else."""
    if expression is None:
        return None
    if expression.type == "null" or (expression.type == "number_literal" and syntax.text(expression) == "0"):
        return []
    if expression.type == "parenthesized_expression":
        return _addresses(_head(expression), statics)
    if expression.type == "conditional_expression":
        first = _addresses(expression.child_by_field_name("consequence"), statics)
        second = _addresses(expression.child_by_field_name("alternative"), statics)
        return None if first is None or second is None else first + second
    if expression.type == "pointer_expression" and expression.children[0].type == "&":
        argument = expression.child_by_field_name("argument")
        if argument is not None and argument.type == "identifier" and syntax.text(argument) in statics:
            return [argument]
    return None


def _has_call(expression) -> bool:
    """Does the expression call a function (in a fact expression: one of the file's fact functions)?"""
    return any(n.type == "call_expression" for n in (expression, *syntax.descendants(expression)))


def _initializer(declaration, name: str):
    """The initial value given to `name` in its declaration (None: none, or not found)."""
    for child in declaration.children:
        if child.type == "init_declarator":
            declarator = child.child_by_field_name("declarator")
            if declarator is not None and syntax.text(declarator) == name:
                return child.child_by_field_name("value")
    return None


def _device_fact_cache(writes, initial, calls: frozenset[str] = frozenset()) -> bool:
    """Does a static only ever hold device facts: a literal (or no) initial value or one a fact function
    returns, no write but device queries and assignments of literals, device facts and fact functions'
    results, and at least one of them a queried value (a flag set to a literal, `done = 1`, is call
    state, not a device fact)?"""
    kinds = {kind for _, kind in writes}
    if initial is None:
        initial_kind = "literal"
    elif not _fact_expression(initial, set(), calls):
        initial_kind = "other"
    else:   # a call can only be a fact function's here
        initial_kind = "derived" if _has_call(initial) else "literal"
    kinds |= {initial_kind}
    return "other" not in kinds and bool(kinds & {"query", "derived"})


def _declares(identifier) -> bool:
    """Is this identifier the name in a function declarator (a prototype), not a use?"""
    parent = identifier.parent
    return parent is not None and parent.type == "function_declarator" and \
        parent.child_by_field_name("declarator") == identifier


_SPECIFIERS = ("storage_class_specifier", "type_qualifier", "attribute_specifier", "attribute_declaration")


def _declaration_words(declaration) -> set[str]:
    """A declaration's own specifiers and qualifiers (`static`, `const`, `__device__`), read from the syntax tree
    before its first declarator: not a comment (`int v /* const */ = 4`), not a later declarator's
    (`int g, *const p`), not a template argument's (`std::pair<const int, int> g`)."""
    words: set[str] = set()
    for child in declaration.children:
        if child.type == "identifier" or child.type.endswith("declarator"):
            break
        if child.type in _SPECIFIERS or not child.is_named:
            words.update(_IDENT.findall(syntax.text(child)))
    return words


def _declared_names(declaration) -> list[str]:
    """Variable names a declaration introduces (function prototypes introduce none)."""
    names = []
    for child in declaration.children:   # a class's field_declaration names field_identifiers
        if child.type not in ("identifier", "field_identifier", "init_declarator", "array_declarator",
                              "pointer_declarator", "reference_declarator"):
            continue
        node = child
        is_function = False
        while node is not None and node.type not in ("identifier", "field_identifier"):
            if node.type == "function_declarator":
                is_function = True
                break
            node = node.child_by_field_name("declarator")
        if node is not None and not is_function:
            names.append(syntax.text(node))
    return names


def _is_written(identifier, references: dict[str, set[int]]) -> bool:
    """Is this use a write: the target of an assignment / ++ / --, address taken, an atomic's target, or
    passed where the callee may write it (`references`: the file's `_reference_parameters`)?"""
    while identifier.parent is not None and identifier.parent.type == "qualified_identifier" \
            and identifier.parent.child_by_field_name("name") == identifier:
        identifier = identifier.parent   # C::calls, ns::last
    node, parent = _outermost(identifier, ("subscript_expression", *_MEMBER_OF))
    while parent is not None and parent.type == "pointer_expression" and parent.children \
            and parent.children[0].type == "*":
        node, parent = _outermost(parent, ("subscript_expression", *_MEMBER_OF))   # *p, (*p), (*p).f
    if parent is None:
        return False
    if parent.type == "assignment_expression" and parent.child_by_field_name("left") == node:
        return True
    if parent.type == "update_expression":
        return True
    if parent.type == "pointer_expression" and parent.children and parent.children[0].type == "&":
        return True
    if parent.type == "initializer_list" and parent.parent is not None and parent.parent.type == "init_declarator":
        node, parent = parent, parent.parent   # int& r{x}, int& r = {x}
    if parent.type == "init_declarator" and parent.child_by_field_name("value") == node:
        declarator = parent.child_by_field_name("declarator")   # int& r = x: a write through r writes x
        return declarator is not None and declarator.type == "reference_declarator" and not _is_const(parent.parent)
    if _by_reference(node, references):
        return True
    while parent is not None and parent.type in ("binary_expression", "cast_expression", "parenthesized_expression"):
        node, parent = parent, parent.parent  # atomicAdd(buf + i, 1), atomicAdd((int*)&x, 1)
    if parent is None:
        return False
    if parent.type == "argument_list" and parent.parent is not None and parent.parent.type == "call_expression":
        fn = parent.parent.child_by_field_name("function")
        if fn is not None and syntax.text(fn).startswith("atomic"):
            return True
    return False


# std::swap(x, v), std::exchange(x, v); std::tie(x) = t, std::ref, std::forward_as_tuple, std::addressof,
# std::move and std::forward hand out a reference or the address, through which x can be written
_WRITES_ITS_ARGUMENTS = frozenset({"swap", "exchange", "tie", "ref", "forward_as_tuple", "addressof", "move",
                                   "forward"})


def _paren_references(body) -> dict[str, list]:
    """Names bound to a non-const local reference with parentheses (`int& r(x);`), each with its nodes: the tree
    reads that as a prototype whose parameter type is `x`, so `_is_written` never sees x there."""
    bound: dict[str, list] = {}
    for declaration in syntax.descendants(body):
        if declaration.type != "declaration" or _is_const(declaration):
            continue
        for child in declaration.children:
            inner = next((c for c in child.named_children if c.type == "function_declarator"), None) \
                if child.type == "reference_declarator" else None
            parameters = inner.child_by_field_name("parameters") if inner is not None else None
            for name in syntax.descendants(parameters) if parameters is not None else ():
                if name.type == "type_identifier":
                    bound.setdefault(syntax.text(name), []).append(name)
    return bound


def _by_reference(argument, references: dict[str, set[int]]) -> bool:
    """Is this expression a call's argument that the callee may write: to std::swap / std::exchange, or at a
    non-const reference parameter of a function the file declares (`void keep(int& c, int v)`)?"""
    arguments = argument.parent
    call = arguments.parent if arguments is not None and arguments.type == "argument_list" else None
    function = call.child_by_field_name("function") if call is not None and call.type == "call_expression" else None
    if function is None:
        return False
    name = syntax.text(function).split("::")[-1]
    if name in _WRITES_ITS_ARGUMENTS:
        return True
    position = [c for c in arguments.named_children if c.type != "comment"].index(argument)
    return position in references.get(name, set())


def _reference_parameters(root) -> dict[str, set[int]]:
    """Function name -> the positions of its non-const reference parameters, over all its declarations in the file;
    a function-like macro's name -> the positions of the arguments its body may write (`_macro_writes`)."""
    found: dict[str, set[int]] = _macro_writes(root)
    for declarator in syntax.descendants(root):
        name = declarator.child_by_field_name("declarator") if declarator.type == "function_declarator" else None
        parameters = declarator.child_by_field_name("parameters") if name is not None else None
        if parameters is None:
            continue
        listed = [c for c in parameters.named_children if c.type != "comment"]
        found.setdefault(syntax.text(name).split("::")[-1], set()).update(
            i for i, parameter in enumerate(listed)
            if (inner := parameter.child_by_field_name("declarator")) is not None
            and inner.type in ("reference_declarator", "abstract_reference_declarator") and not _is_const(parameter))
    return found


# In a macro body, what may write a parameter `p`: `p = `, `p += `, `p++` (after closing parentheses); `++p`,
# `&p`, or a word before it, a declaration (`int p`) (after opening ones); and any call when p is in the body.
_MACRO_WRITE_AFTER = r"\s*\)*\s*(?:(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+|--)"
_MACRO_WRITE_BEFORE = r"(?:\+\+|--|(?<![&\w)\]\s])\s*&|\b(?!return\b)[A-Za-z_]\w*[\s*&]+)\s*\(*\s*$"
_MACRO_CALL = re.compile(r"\b(?!(?:sizeof|alignof|decltype|defined)\b)[A-Za-z_]\w*\s*\(")


def _macro_writes(root) -> dict[str, set[int]]:
    """Function-like macro name -> the positions of the parameters its body may write, read from the body's
    text (`_MACRO_WRITE_AFTER` / `_BEFORE`, a call, or `...`): `#define SET(a, b) a = b` writes argument 0,
    `#define CEIL(a, b) (((a) + (b) - 1) / (b))` none."""
    found: dict[str, set[int]] = {}
    for node in syntax.descendants(root):
        name, params = node.child_by_field_name("name"), node.child_by_field_name("parameters")
        if node.type != "preproc_function_def" or name is None or params is None:
            continue
        value = node.child_by_field_name("value")
        body = syntax.strip_comments_and_strings(syntax.text(value)) if value is not None else ""
        calls = _MACRO_CALL.findall(body)
        written = set()
        for i, param in enumerate(c for c in params.children if c.type in ("identifier", "...")):
            if param.type == "...":
                written.update(range(i, i + 64))   # every variadic argument, as far as any call goes
                continue
            word = syntax.text(param)
            for use in re.finditer(rf"\b{re.escape(word)}\b", body):
                if calls or re.match(_MACRO_WRITE_AFTER, body[use.end():]) \
                        or re.search(_MACRO_WRITE_BEFORE, body[:use.start()]):
                    written.add(i)
        found.setdefault(syntax.text(name), set()).update(written)
    return found


def _is_const(declaration) -> bool:
    """Does a declaration (or parameter) declare its names const (`const int& r`, `int const& r`)?"""
    return declaration is not None and any(c.type == "type_qualifier" and syntax.text(c) == "const"
                                           for c in declaration.children)
