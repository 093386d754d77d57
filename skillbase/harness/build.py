"""Build a kernel file into a shared library with nvcc, parse ptxas's resource report, cache the result.

    result = build("sgemm.cu")                      # arch from the GPU (harness.env), else sm_90
    result = build("sgemm.cu", compile_only=True)   # CI: no GPU needed, no loadable library promised

Command: `nvcc -shared -Xcompiler -fPIC -O3 -lineinfo -Xptxas -v -arch=sm_XX [extra] -o libK.so K.cu`
(compile-only uses `-c` and an object file instead of `-shared`). `-lineinfo` lets ncu map
metrics to source lines; `-Xptxas -v` reports registers, shared memory, stack and spills.

Cache: a build is keyed on sha256 of the source bytes, the bytes of every local header it
includes ("…" includes, recursively), the file's absolute path (`-lineinfo` embeds it), the flags
and `nvcc --version`, so changing any of them rebuilds and nothing else does. The cache lives in
`$SKILLBASE_CACHE/build` (default `~/.cache/skillbase/build`), or `cache_dir`; entries are
written to a temporary folder and renamed into place, so concurrent builders never see half a
library. Failed builds are not cached.

Extra flags come from skills and sweeps. They are checked against an allow-list: a flag that
links a library (`-lcublas`), injects a header (`-include`), changes the host compiler or the
output path would let a candidate escape the static check, so it is refused.

Libraries are linked only through `link=` (the task spec's `link:`), from a fixed list of CUDA
toolkit libraries (`LINKABLE`): `-l<name>` for each, after the source. They are part of the cache
key. When a toolkit lacks a library's files (e.g. the headers and libraries come from pip's nvidia-*
wheels), `$SKILLBASE_VENDOR_INCLUDE` and `$SKILLBASE_VENDOR_LIB` (path lists) add `-I` and `-L` plus
an rpath for builds that link a library; they are in the key too.

Architecture: `task_arch` is what the task spec's `arch:` asks for (e.g. `sm_90a`, the only target
that holds wgmma and setmaxnreg); it wins over the device's arch, and an explicit `arch` must have
its compute capability. An arch-specific target (`sm_XXa`, `sm_XXf`) is built with
`-gencode=arch=compute_XXa,code=sm_XXa`: nvcc 13's plain `-arch=sm_90a` also emits compute_90 PTX,
which cannot hold those instructions. A build that will be loaded (not compile-only) is refused,
before nvcc runs, when the GPU here cannot run its target (`runs_on`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from skillbase.config import cache_root, env_paths, private_dir
from skillbase.cuda.includes import local_includes
from skillbase.errors import EnvironmentProblem, InputError, SkillbaseError
from skillbase.harness import env
from skillbase.harness.static_check import banned_identifier
from skillbase.task.spec import LINKABLE

__all__ = ["build", "BuildResult", "BuildError", "default_cache_dir", "normalize_arch", "base_flags", "arch_flags",
           "runs_on", "build_all",
           "target_arch", "require_device_for",
           "ALLOWED_FLAG_PREFIXES", "link_flags", "first_error", "check_extra_flags"]

DEFAULT_ARCH = "sm_90"   # the H200 the project targets; used when no GPU can be asked
BUILD_TIMEOUT_S = 600

# Flags a skill or sweep may add. Prefix match; `-D`/`-U` carry tunables (BLOCK=128).
ALLOWED_FLAG_PREFIXES = (
    "-D", "-U", "-O", "--use_fast_math", "-use_fast_math", "-ftz=", "--ftz=", "-prec-div=", "--prec-div=",
    "-prec-sqrt=", "--prec-sqrt=", "-fmad=", "--fmad=", "-maxrregcount", "--maxrregcount", "-Xptxas",
    "--ptxas-options", "-std=", "--std", "-restrict", "--restrict", "--extra-device-vectorization",
    "-extra-device-vectorization", "--expt-relaxed-constexpr", "-expt-relaxed-constexpr",
    "--expt-extended-lambda", "-expt-extended-lambda", "--extended-lambda", "-lineinfo", "--generate-line-info",
    "-dlcm=", "-default-stream", "--default-stream",
)
# Values that follow a flag as a separate word (e.g. `-Xptxas -dlcm=ca`, `-maxrregcount 64`).
_TAKES_VALUE = {"-Xptxas", "--ptxas-options", "-maxrregcount", "--maxrregcount", "-D", "-U", "-std", "--std",
                "-default-stream", "--default-stream"}
_FORBIDDEN_PTXAS = re.compile(r"(^|,)\s*-?-(o|output-file)\b")


class BuildError(SkillbaseError):
    """nvcc failed. `message` is the first compiler error (`K.cu:LINE: error: …`); `log` is everything."""

    def __init__(self, message: str, log: str = "", command: list[str] | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.log = log
        self.command = command or []


@dataclass(frozen=True)
class BuildResult:
    library: Path | None   # the shared library (None for compile-only builds)
    ptxas: dict            # {kernel: {registers, shared_bytes, stack_frame_bytes, spill_*_bytes, cmem_bytes, …}}
    log: str               # nvcc's full output (ptxas -v report included)
    cached: bool           # True when this build was served from the cache
    arch: str              # e.g. "sm_90"
    command: list[str] = field(default_factory=list)
    key: str = ""          # the cache key (sha256 hex)
    object: Path | None = None   # the object file of a compile-only build


def default_cache_dir() -> Path:
    """`$SKILLBASE_CACHE/build`, else `~/.cache/skillbase/build`."""
    return cache_root() / "build"


def normalize_arch(arch: str) -> str:
    """'sm_90', '90', '9.0', 'compute_90', 'sm_90a' -> the -arch value nvcc takes ('sm_90', 'sm_90a')."""
    text = str(arch).strip().lower()
    if match := re.fullmatch(r"(?:sm_|compute_)?(\d{2,3})([af]?)", text):
        return f"sm_{match.group(1)}{match.group(2)}"
    if match := re.fullmatch(r"(\d+)\.(\d)", text):
        return f"sm_{match.group(1)}{match.group(2)}"
    raise InputError(f"arch '{arch}' is not a CUDA architecture", hint="use e.g. sm_90 (H100/H200), sm_80 (A100)")


def compute_capability(arch: str) -> tuple[int, int]:
    """'sm_90a' -> (9, 0); 'sm_121f' -> (12, 1)."""
    digits = re.sub(r"\D", "", normalize_arch(arch))
    return int(digits[:-1]), int(digits[-1])


def runs_on(arch: str, compute_cap: str) -> bool:
    """Whether code built for `arch` runs on a device of `compute_cap` ('9.0'): an arch-specific
    target (sm_90a) only on exactly its CC, a family target (sm_100f) on its major at the same or a
    later minor, a plain one (sm_90, which embeds PTX) on its CC and later."""
    target = compute_capability(arch)
    device = compute_capability(compute_cap)
    suffix = normalize_arch(arch)[-1]
    if suffix == "a":
        return device == target
    if suffix == "f":
        return device[0] == target[0] and device[1] >= target[1]
    return device >= target


def target_arch(arch: str | None = None, task_arch: str | None = None) -> str:
    """The arch a build targets: the task's (`arch:`), refined by an explicit `arch` of the same compute
    capability (sm_90 asked, sm_90a needed: sm_90a); else the explicit one; else the GPU's; else sm_90."""
    requested = normalize_arch(arch) if arch else None
    if task_arch:
        required = normalize_arch(task_arch)
        if requested is None or required.startswith(requested):
            return required
        if requested.startswith(required):
            return requested
        raise InputError(f"arch {requested} was asked for but the task needs {required}",
                         hint=f"drop --arch, or pass --arch {required}")
    return requested or env.gpu_arch() or DEFAULT_ARCH


def require_device_for(arch: str) -> None:
    """Refuse, in one line, to build loadable code for `arch` on a GPU that cannot run it (no GPU: fine)."""
    device = env.gpu_arch()   # cached: every build asks, nvidia-smi runs once per process
    if device is None or runs_on(arch, device):
        return
    major, minor = compute_capability(arch)
    needs = {"a": f"exactly compute capability {major}.{minor}",
             "f": f"compute capability {major}.{minor} or a later {major}.x"}
    needs = needs.get(arch[-1], f"compute capability {major}.{minor} or later")
    here, cc = env.gpu_name() or "GPU", ".".join(map(str, compute_capability(device)))
    raise EnvironmentProblem(f"{arch} code needs a GPU of {needs}; this {here} is {cc}",
                             hint="run it on such a GPU, or build compile-only (no GPU needed)")


def check_extra_flags(flags) -> tuple[str, ...]:
    """Refuse flags that could link libraries, inject code or redirect output (see module doc)."""
    flags = tuple(str(f) for f in flags)
    expect_value = False
    previous = ""
    for flag in flags:
        if previous in ("-D", "-U"):
            _check_macro(previous + flag)
        elif flag.startswith(("-D", "-U")):
            _check_macro(flag)
        previous = flag
        if expect_value:
            expect_value = False
            if _FORBIDDEN_PTXAS.search(flag):
                raise InputError(f"compile flag value '{flag}' redirects output; not allowed")
            continue
        if not flag.startswith(ALLOWED_FLAG_PREFIXES):
            raise InputError(f"compile flag '{flag}' is not allowed (it could link a library, inject code or "
                             "change the output)", hint="allowed: -D, -U, -O*, --use_fast_math, -ftz=, -prec-div=, "
                             "-prec-sqrt=, -fmad=, -maxrregcount, -Xptxas, -std=, --restrict, --expt-*")
        if flag in _TAKES_VALUE:
            expect_value = True
        elif flag.startswith(("-Xptxas=", "--ptxas-options=")) and _FORBIDDEN_PTXAS.search(flag.split("=", 1)[1]):
            raise InputError(f"compile flag '{flag}' redirects output; not allowed")
    if expect_value:
        raise InputError(f"compile flag '{flags[-1]}' needs a value")
    return flags


_MACRO = re.compile(r"^-[DU]([A-Za-z_]\w*)(?:=([\w.+-]*))?$")


def _check_macro(flag: str) -> None:
    # A macro value is a number or a plain word (BLOCK=128, TYPE=float); anything that could
    # expand to a call (parentheses, spaces) or name a banned API would hide code from the static check.
    match = _MACRO.match(flag)
    if not match:
        raise InputError(f"compile flag '{flag}' is not a plain macro "
                         "(NAME or NAME=value without spaces or parentheses)")
    for word in (match.group(1), match.group(2) or ""):
        rule = banned_identifier(word)
        if rule is not None:
            raise InputError(f"compile flag '{flag}' names {word}, which the static check bans ({rule})")


def link_flags(link=()) -> tuple[list[str], list[str]]:
    """(compile flags, link flags) for `link`: `-l<name>` for each library (checked against the task
    format's list), plus the vendor folders from $SKILLBASE_VENDOR_INCLUDE (-I) and
    $SKILLBASE_VENDOR_LIB (-L and an rpath) when something is linked. The link flags go after the
    sources: a linker that drops unneeded libraries (--as-needed) would otherwise drop them."""
    names = []
    for name in link or ():
        name = str(name)
        if name not in LINKABLE:
            raise InputError(f"link: '{name}' is not a CUDA toolkit library the harness links "
                             f"(allowed: {', '.join(LINKABLE)})")
        if name not in names:
            names.append(name)
    if not names:
        return [], []
    includes = [f"-I{folder}" for folder in _env_paths("SKILLBASE_VENDOR_INCLUDE")]
    libs = []
    for folder in _env_paths("SKILLBASE_VENDOR_LIB"):
        libs += [f"-L{folder}", f"-Xlinker=-rpath={folder}"]
    return includes, libs + [f"-l{name}" for name in names]


def _env_paths(variable: str) -> list[str]:
    return [str(Path(p).resolve()) for p in env_paths(variable)]


def arch_flags(arch: str) -> list[str]:
    """nvcc's target flags for `arch`: `-arch=sm_90` (SASS plus PTX the driver can JIT on later GPUs), or for
    an arch-specific / family target only its SASS, `-gencode=arch=compute_90a,code=sm_90a`: nvcc 13's
    `-arch=sm_90a` would add compute_90 PTX, where wgmma and setmaxnreg fail to assemble."""
    arch = normalize_arch(arch)
    if arch[-1] in "af":
        return [f"-gencode=arch=compute_{arch[len('sm_'):]},code={arch}"]
    return [f"-arch={arch}"]


def base_flags(arch: str, compile_only: bool) -> list[str]:
    kind = ["-c"] if compile_only else ["-shared", "-Xcompiler", "-fPIC"]
    return kind + ["-O3", "-lineinfo", "-Xptxas", "-v"] + arch_flags(arch)


def _cache_key(source: Path, flags: list[str], nvcc_version: str) -> str:
    digest = hashlib.sha256()
    for part in (b"skillbase-build-v1", str(source.resolve()).encode(), source.read_bytes(),
                 json.dumps(flags).encode(), nvcc_version.encode()):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    for header in local_includes(source.read_bytes(), source.resolve().parent, {source.resolve()}):
        digest.update(str(header).encode())
        digest.update(hashlib.sha256(header.read_bytes()).digest())
    return digest.hexdigest()


_NVCC_ERROR = re.compile(r"^(?P<file>[^\s:()][^:()]*)\((?P<line>\d+)\): (?:catastrophic )?error(?: #\S+)?: "
                         r"(?P<msg>.*)$")
_GCC_ERROR = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$")


def first_error(log: str, source_name: str) -> str:
    """The first error as `K.cu:LINE: error: …` (nvcc, host compiler, ptxas and linker formats)."""
    for raw in log.splitlines():
        line = raw.strip()
        for pattern in (_NVCC_ERROR, _GCC_ERROR):
            if match := pattern.match(line):
                name = Path(match.group("file")).name
                return f"{name}:{match.group('line')}: error: {match.group('msg').strip()}"
    for raw in log.splitlines():
        line = raw.strip()
        if re.match(r"^(ptxas|nvlink|ld|nvcc)\b.*\b(error|fatal)\b", line, re.I) or "error" in line.lower():
            return f"{source_name}: " + re.sub(r"\s+", " ", line)
    return f"{source_name}: nvcc failed (see the build log)"


# Linked into every shared library: nvcc links the CUDA runtime statically into each library, so only
# code inside it can read the candidate's launch errors (invalid configuration, too many resources).
# The harness calls it after every launch (skillbase.harness.native). A candidate defining the same
# symbol fails to link.
LAST_ERROR_PROBE = """#include <cuda_runtime.h>
extern "C" int skillbase_last_error(void) { return (int)cudaGetLastError(); }
"""
PROBE_VERSION = "last-error-probe:v1"


def build(cu_path, arch: str | None = None, compile_only: bool = False, extra_flags=(),
          cache_dir: str | Path | None = None, timeout_s: int = BUILD_TIMEOUT_S, link=(),
          task_arch: str | None = None) -> BuildResult:
    """Compile `cu_path` (cached). Raises BuildError on compile errors, EnvironmentProblem without nvcc
    or, for a loadable build, on a GPU that cannot run the target.

    `link`: CUDA toolkit libraries to link (the task spec's `link:`), e.g. ("cublas",).
    `task_arch`: the architecture the task spec's `arch:` requires (see `target_arch`)."""
    source = Path(cu_path)
    if not source.is_file():
        raise InputError(f"{source}: no such file")
    chosen = target_arch(arch, task_arch)
    if not compile_only:
        require_device_for(chosen)   # before nvcc: a library this GPU cannot load is refused in one line
    nvcc = env.nvcc_path()
    version = env.nvcc_version_text(nvcc)
    includes, libs = link_flags(link)
    flags = base_flags(chosen, compile_only) + list(check_extra_flags(extra_flags)) + includes
    key = _cache_key(source, (flags + libs) if compile_only else flags + libs + [PROBE_VERSION], version)
    if cache_dir is not None:
        root = Path(cache_dir)
    else:   # built libraries are loaded and run: a cache others can write into could hand us theirs
        private_dir(cache_root())
        root = private_dir(default_cache_dir())
    entry = root / key
    artifact_name = f"{source.stem}.o" if compile_only else f"lib{source.stem}.so"
    artifact = entry / artifact_name
    command = [nvcc] + flags + ["-o", str(artifact), str(source)] + libs

    if artifact.is_file() and (entry / "build.log").is_file():
        log = (entry / "build.log").read_text()
        return _result(artifact, compile_only, log, True, chosen, command, key)

    root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=root))
    try:
        target = scratch / artifact_name
        run = [nvcc] + flags + ["-o", str(target), str(source)]
        if not compile_only:
            probe = scratch / "skillbase_probe.cu"
            probe.write_text(LAST_ERROR_PROBE)
            run.append(str(probe))
        run += libs
        try:
            proc = subprocess.run(run, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise BuildError(f"{source.name}: nvcc did not finish within {timeout_s} s", log="", command=run,
                             hint="a template or unroll explosion? simplify the kernel") from None
        except OSError as error:
            raise EnvironmentProblem(f"cannot run {nvcc} ({error})",
                                     hint="check the CUDA toolkit installation") from None
        log = (proc.stdout or "") + (proc.stderr or "")
        if proc.returncode != 0 or not target.is_file():
            raise BuildError(first_error(log, source.name), log=log, command=run)
        (scratch / "build.log").write_text(log)
        (scratch / "command.json").write_text(json.dumps(command))
        try:
            os.rename(scratch, entry)
        except OSError:
            # Another builder finished the same key first; its entry is identical, use it.
            if not artifact.is_file():
                raise
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)
    return _result(artifact, compile_only, log, False, chosen, command, key)


def build_all(requests: list[dict], jobs: int) -> list[BuildResult | SkillbaseError]:
    """`build(**request)` for every request, `jobs` nvcc processes at a time, in request order: each
    a result or the error that build raised (one broken kernel never stops the others). Warms the
    cache for work that then builds the same kernels one at a time (nvcc dominates, the GPU is serial)."""
    def one(request: dict) -> BuildResult | SkillbaseError:
        try:
            return build(**request)
        except SkillbaseError as error:
            return error

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, requests))


def _result(artifact: Path, compile_only: bool, log: str, cached: bool, arch: str, command, key) -> BuildResult:
    # Imported here, not at the top: skillbase.evidence's package face imports evidence.build, which
    # builds with this module, so a top-level import would be circular.
    from skillbase.cuda.ptxas import parse_ptxas

    return BuildResult(library=None if compile_only else artifact, ptxas=parse_ptxas(log), log=log, cached=cached,
                       arch=arch, command=list(command), key=key, object=artifact if compile_only else None)
