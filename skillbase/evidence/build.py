"""Loading evidence (ncu report, raw CSV, evidence JSON) and building it from a source (static
features, ptxas). The ptxas report of a source comes from the harness's compile-only build (one
nvcc command line, one cache, local headers in its key). Heavy imports (ncu_report, jsonschema)
happen inside the functions that need them, so importing this module is cheap.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from skillbase.cuda.names import base_name, without_params
from skillbase.cuda.ptxas import parse_ptxas
from skillbase.errors import EnvironmentProblem, InputError, SkillbaseError
from skillbase.evidence.compressed import is_compressed, plain_file
from skillbase.evidence.model import Evidence
from skillbase.evidence.ncu_csv import load_ncu_csv
from skillbase.evidence.ncu_rep import load_ncu_report
from skillbase.evidence.static.features import static_features
from skillbase.harness.build import BuildError, build

if TYPE_CHECKING:
    from skillbase.task.spec import TaskSpec

NO_SOURCE_KERNEL = "the source has no kernel"   # how `align_names`' note about the static features begins


def load_evidence_json(path: str | Path) -> Evidence:
    """An evidence document written by `skillbase evidence` (or any producer of the schema)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read as UTF-8 text ({error})") from None
    return Evidence.from_json(text, where=str(path))


def load_any(path: str | Path, kernel: str | None = None) -> Evidence:
    """Dispatch on suffix, then on content: `.ncu-rep`, raw-page `.csv`, evidence `.json`, each of them
    also xz-compressed (`R.ncu-rep.xz`: read from its decompressed copy in the cache)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give a .ncu-rep, a raw-page .csv or an evidence .json")
    if is_compressed(path):
        return _load_compressed(path, kernel)
    suffix = path.suffix.lower()
    if suffix != ".ncu-rep" and suffix not in (".csv", ".json"):
        with path.open("rb") as handle:
            head = handle.read(4096)
        if head.startswith(b"NVR"):
            suffix = ".ncu-rep"
        elif head.lstrip().startswith(b"{"):
            suffix = ".json"
        elif b'"ID",' in head or b"==PROF==" in head:
            suffix = ".csv"
        else:
            raise InputError(f"{path}: not a .ncu-rep, an ncu CSV export or an evidence JSON",
                             hint="ncu -i REPORT.ncu-rep --page raw --csv --print-units base > raw.csv")
    if suffix == ".ncu-rep":
        return load_ncu_report(path, kernel)
    if suffix == ".csv":
        return load_ncu_csv(path, kernel)
    evidence = load_evidence_json(path)
    if kernel:
        evidence.select_kernel(kernel)
    return evidence


def _load_compressed(path: Path, kernel: str | None) -> Evidence:
    """The evidence of PATH's decompressed copy, as if PATH were that copy: the document and any
    error name the file the user gave, not the cache."""
    plain = plain_file(path)
    try:
        evidence = load_any(plain, kernel)
    except SkillbaseError as error:
        raise type(error)(error.message.replace(str(plain), str(path)), error.hint) from None
    if evidence.producer.get("source_path") == str(plain):
        evidence.producer["source_path"] = str(path)
    return evidence


# -- ptxas through nvcc -------------------------------------------------------------------------

def ptxas_for_source(source: str | Path, arch: str | None = None, extra_flags: tuple[str, ...] = (),
                     task_arch: str | None = None) -> tuple[str | None, str | None]:
    """(the `ptxas -v` log, note) of SOURCE's compile-only build (harness.build, cached, for the arch its
    `target_arch` picks: TASK_ARCH, the task spec's `arch:`, refined by ARCH; else ARCH, the GPU's, sm_90);
    without nvcc, or when SOURCE does not compile, (None, a note saying why: the evidence is still built)."""
    try:
        built = build(source, arch=arch, compile_only=True, extra_flags=extra_flags, task_arch=task_arch)
    except EnvironmentProblem as error:
        return None, f"{error.message}: ptxas resources (registers, spills) omitted"
    except BuildError as error:
        # nvcc names its temporary files at random (/tmp/tmpxft_00003e02_00000000-6_k.ptx): the note keeps
        # only the file's own name, so the same source gives the same evidence on every run
        message = _NVCC_TEMP.sub("", error.message)
        return None, f"nvcc failed: {message}; ptxas resources omitted"
    return built.log, None


_NVCC_TEMP = re.compile(r"\S*tmpxft_[0-9a-f]+_[0-9a-f]+-\d+_")


def _spec_arch(source: str | Path) -> tuple[str | None, str | None]:
    """(the `arch:` of the task spec beside SOURCE (K.task.yaml), note): (None, None) without a spec or
    when it names no arch; (None, a note) when the spec does not load."""
    from skillbase.task.spec import load_task, spec_path_for

    _, spec_path = spec_path_for(Path(source))
    if not spec_path.is_file():
        return None, None
    try:
        return load_task(source, check_launcher=False).arch, None
    except InputError as error:
        return None, f"the task spec's arch was not read ({error.message}): ptxas built for the default arch"


# -- assembling one document --------------------------------------------------------------------

def build_evidence(report: str | Path | None = None, evidence: Evidence | str | Path | None = None,
                   source: str | Path | None = None, ptxas_text: str | None = None, kernel: str | None = None,
                   arch: str | None = None, details: str | Path | None = None) -> Evidence:
    """One evidence document from a profile (REPORT or EVIDENCE) plus the SOURCE's static features and
    ptxas report (PTXAS_TEXT, or compiled from SOURCE with nvcc when available, for the arch the task
    spec beside SOURCE needs, refined by ARCH: see `ptxas_for_source`). DETAILS: the `--page details`
    CSV export that adds ncu's rule results to a raw-page CSV REPORT."""
    if isinstance(evidence, Evidence):
        result = evidence
        if kernel:
            result.select_kernel(kernel)
    elif evidence is not None:
        result = load_any(evidence, kernel)
    elif report is not None and details is not None:
        result = load_ncu_csv(report, kernel, details)
    elif report is not None:
        result = load_any(report, kernel)
    else:
        result = Evidence()
        result.producer["source_kind"] = "static"
        result.producer["source_path"] = str(source) if source else None

    if source is not None:
        result.static = static_features(source, instances=profiled_instances(result))
        if ptxas_text is None:
            # an sm_90a kernel (wgmma, setmaxnreg) does not assemble for sm_90: build it as the task does
            needed, spec_note = _spec_arch(source)
            ptxas_text, note = ptxas_for_source(source, arch, task_arch=needed)
            result.notes.extend(n for n in (spec_note, note) if n)
    if ptxas_text is not None:
        result.ptxas = parse_ptxas(ptxas_text) or None
        if result.ptxas is None:
            result.notes.append("the ptxas log names no entry function (was it built with -Xptxas -v?)")

    if not result.kernels and result.static:
        result.select_kernel(kernel)   # no profile: the source's kernels decide
    align_names(result)
    return result


def attach_source(evidence: Evidence, source: str | Path, preset: str | None = None) -> Evidence:
    """Add SOURCE's static features to a loaded profile (no compile: what `advise --report --source`
    does), keyed for the profiled kernel; a source without that kernel is said once in the notes
    and describes nothing. A task spec beside the source (K.task.yaml) adds what the task allows, and
    its work model at PRESET when the caller knows the size the profile was taken at (`checked_preset`)."""
    attach_task(evidence, source, preset)
    try:
        evidence.static = static_features(source, instances=profiled_instances(evidence))
    except InputError as error:      # advice still comes, from the profile alone
        evidence.notes.append(f"no static features: {error.message}")
        return evidence
    align_names(evidence)
    return evidence


def attach_task(evidence: Evidence, source: str | Path, preset: str | None = None) -> Evidence:
    """`evidence.task` from the spec beside SOURCE (its tolerance, its allowed libraries), when there
    is one; a spec that does not load is said once and left out. A profile also gets the task's work
    model at PRESET, the size it was profiled at (`attach_work`)."""
    from skillbase.task.spec import load_task, spec_path_for

    _, spec_path = spec_path_for(Path(source))
    if not spec_path.is_file():
        return evidence
    try:
        spec = load_task(Path(source))
    except InputError as error:
        evidence.notes.append(f"the task spec was not used: {error.message}")
        return evidence
    evidence.task = spec.evidence()
    attach_work(evidence, spec, preset)
    return evidence


def checked_preset(source: str | Path, preset: str) -> str:
    """PRESET, when it names a size of the task spec beside SOURCE; otherwise the spec's one-line error (a
    missing spec, or `no size preset 'X' (presets: ...)` with the nearest name), as `optimize --preset` gives."""
    from skillbase.task.spec import load_task

    load_task(Path(source)).sizes_for(preset)
    return preset


def attach_work(evidence: Evidence, spec: TaskSpec, preset: str | None) -> Evidence:
    """`roofline.flops` / `roofline.bytes`: SPEC's work model (one launcher call) at PRESET, the size the
    profile was taken at, so the rules can set the kernel's DRAM traffic against the bytes the task must
    move (`dram_traffic_ratio`). Left unset, with a note, when that size is not known (a saved report
    names none): a work model at a guessed size would make a wrong ratio. A side the model counts as zero
    (a KernelBench import derives no FLOPs) is left unset too: zero there means "not modelled". Evidence
    without a profile has no traffic to compare and is left alone; a document that already carries the
    work model (an evidence JSON written by `skillbase profile`) keeps it."""
    roofline = evidence.roofline or {}
    if not evidence.kernels or "bytes" in roofline or "flops" in roofline:
        return evidence
    if preset is None:
        evidence.notes.append("the task's work model (roofline bytes and FLOPs) is not set: the size the report was "
                              "profiled at is not known (name it with `--preset P`; `skillbase profile K.cu "
                              "--preset P` records it)")
        return evidence
    try:
        flops, nbytes = spec.work(preset)
    except InputError as error:
        evidence.notes.append(f"the task's work model is not set: {error.message}")
        return evidence
    work = {key: value for key, value in (("flops", flops), ("bytes", nbytes)) if value > 0}
    evidence.roofline = {**roofline, **work, "work_preset": preset}
    launches = sum(record.launches or 1 for record in evidence.kernels)
    if launches > 1:
        # the focus kernel's metrics are per launch, the work model is the whole call's: a ratio below 1 is a part
        evidence.notes.append(f"the work model at '{preset}' is one launcher call of {launches} kernel launches; "
                              "the focus kernel's DRAM bytes (one launch's) are a part of it")
    return evidence


def profiled_instances(evidence: Evidence) -> list[str]:
    """The profiled kernels' demangled names that carry template arguments (what static_features binds)."""
    return [k.demangled for k in evidence.kernels if k.demangled and "<" in k.demangled]


def align_names(evidence: Evidence) -> None:
    """Make `static.kernels[focus]` and `ptxas[focus]` resolve for the focus kernel's name.

    ncu, ptxas and the source name a kernel differently; they are matched by mangled name when
    known, else by base function name, and the focus name is added as an alias key. A template
    instance the source analysed as such (`k<&helper>`: static_features' INSTANCES) is the focus's.
    """
    focus_name = evidence.focus_kernel
    if not focus_name:
        return
    record = evidence.focus()
    base = record.base_name if record else base_name(focus_name)
    instance = without_params(record.demangled) if record and record.demangled else None
    if evidence.static and instance and instance != focus_name and instance in evidence.static["kernels"]:
        evidence.static["kernels"][focus_name] = evidence.static["kernels"][instance]
    elif evidence.static and focus_name not in evidence.static["kernels"]:
        if base in evidence.static["kernels"]:
            evidence.static["kernels"][focus_name] = evidence.static["kernels"][base]
        else:
            evidence.notes.append(f"{NO_SOURCE_KERNEL} `{base}` (the profiled one; it defines "
                                  f"{', '.join(evidence.static['kernels'])}): its static features are not used")
    if evidence.ptxas and focus_name not in evidence.ptxas:
        match = None
        if record and record.mangled:
            match = next((v for v in evidence.ptxas.values() if v.get("mangled") == record.mangled), None)
        if match is None:
            candidates = [v for k, v in evidence.ptxas.items() if base_name(v.get("mangled") or k) == base]
            match = candidates[0] if len(candidates) == 1 else None
        if match is not None:
            evidence.ptxas[focus_name] = match
        else:
            evidence.notes.append(f"ptxas reports no kernel matching {focus_name!r}")
