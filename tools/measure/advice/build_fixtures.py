"""Rebuild the dev set's evidence fixtures from the local profiles and sources in `.devset/`.

    python tools/measure/advice/build_fixtures.py                  # every step whose report is here
    python tools/measure/advice/build_fixtures.py --profiles DIR   # reports under DIR/devset/<prog>/
    python tools/measure/advice/build_fixtures.py --dry-run        # say what would be built, write nothing
    python tools/measure/advice/build_fixtures.py --static-only --git /work/.mirror
                                       # no GPU: re-derive every fixture's static features, keep its profile

`.devset/profiles/{tune,test}/devset/<prog>/<version>.ncu-rep` (H200 profiles: `ncu --set full`
plus the metrics the rules read) and `<version>.src/` (the version's own files at the recorded
commit) come from the local recipe in `.devset/`, which is not committed (third-party code).
`--profiles DIR` reads them from DIR/devset/<prog>/ instead (the folder `.devset/profile.sh`
writes as $OUT), whatever the half. A step whose report or source is absent is skipped and listed.
The evidence keeps every metric of the report (rules may read more later) and names the source by
repository, commit and path, never by a local folder.

`--static-only` needs no report and no GPU: it reads each committed fixture, replaces its static features
with the current analyser's reading of the version's source at the recorded repository and commit, and
leaves the profile (metrics, ncu's rule results, ptxas) as it was; a change to the static analyser is
carried into every fixture of both halves this way (issue 15, round 4). The sources are the repositories'
C/C++/CUDA files at the commit, exported once into `.devset/sources/<owner>+<name>@<commit12>/` from git
repositories under `--git DIR` (`DIR/<owner>+<name>/repo`, `DIR/<owner>+<name>` or `DIR/<owner>/<name>`:
bare or not), so a kernel's quoted headers resolve as they do for nvcc.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import devset  # noqa: E402

from skillbase.evidence import Evidence, build_evidence, static_features  # noqa: E402

SOURCES = devset.LOCAL / "sources"
# What the static analysis may read: sources and headers (no data, no build outputs).
SOURCE_FILES = ("cu", "cuh", "h", "hpp", "hh", "hxx", "inl", "cpp", "cc", "cxx")


def ptxas_log(step: devset.Step, root: Path) -> str | None:
    """The `ptxas -v` log of the step's source, compiled here with the progression's `ptxas:` settings (include
    folders relative to the repository root `root`, an arch, cuBLAS declaration stubs), which the harness's own
    compile does not take; None without such settings or when the compile fails (build_evidence then compiles
    it the usual way and notes why the resources are missing)."""
    settings = devset.progression(step.prog).get("ptxas")
    nvcc = shutil.which("nvcc")
    if not settings or not nvcc:
        return None
    arch = settings.get("arch", "sm_90")
    flags = ["-c", "-O3", "-lineinfo", "-Xptxas", "-v", f"-gencode=arch=compute_{arch[3:]},code={arch}"]
    flags += [f"-I{root / folder}" for folder in settings.get("includes", ())]
    if settings.get("cublas_stubs"):
        flags.append(f"-I{devset.LOCAL / 'stubs'}")      # declarations only: the kernels do not call cuBLAS
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run([nvcc, *flags, str(root / step.path), "-o", str(Path(scratch) / "k.o")],
                              capture_output=True, text=True, timeout=600)
    return done.stderr if done.returncode == 0 else None


def with_static(evidence: Evidence, step: devset.Step, root: Path) -> Evidence:
    """EVIDENCE with the static features of the step's source under `root` (the repository's files at the
    commit), read with the progression's include folders (its -I: their helpers are part of what the kernel
    runs), the profiled kernel's name aligned with the source's, and the source named by repository, commit
    and path, not by the local folder."""
    includes = (devset.progression(step.prog).get("ptxas") or {}).get("includes", ())
    instances = [k.demangled for k in evidence.kernels if k.demangled]   # a kernel templated on a helper: which
    evidence.static = static_features(root / step.path, include_dirs=[root / d for d in includes],
                                      instances=instances)
    evidence = build_evidence(evidence=evidence)        # no source or report: only aligns the kernel names
    evidence.static["file"]["path"] = f"{step.repo}@{step.commit[:12]}:{step.path}"
    # The local folder names mean nothing elsewhere: keep the notes, without them (and each once).
    notes = [re.sub(re.escape(str(root)) + r"[^\s']*", step.path, n) for n in evidence.notes]
    evidence.notes = list(dict.fromkeys(notes))
    return evidence


def evidence_for(step: devset.Step, folder: Path) -> str:
    """The evidence JSON of one step from its report and source in `folder` (<version>.ncu-rep, <version>.src/)."""
    report, root = folder / f"{step.version}.ncu-rep", folder / f"{step.version}.src"
    log = ptxas_log(step, root)
    evidence = build_evidence(report=report, source=root / step.path, kernel=step.kernel, ptxas_text=log)
    if evidence.static:
        evidence = with_static(evidence, step, root)
    evidence.producer["source_path"] = f"{step.repo}@{step.commit[:12]}:{step.path}"
    evidence.producer["report"] = f"{step.key}.ncu-rep (H200, ncu 2025.3.1, --set full, --clock-control none)"
    evidence.notes = [re.sub(re.escape(str(folder)) + r"[^\s']*", step.path, n) for n in evidence.notes]
    return checked_json(evidence, step, folder)


def checked_json(evidence: Evidence, step: devset.Step, folder: Path) -> str:
    text = evidence.to_json()
    assert str(devset.LOCAL) not in text and str(folder) not in text, f"{step.key}: a local path leaked"
    return text


def source_tree(step: devset.Step, sources: Path = SOURCES) -> Path:
    """Where the step's repository at its commit is exported (its source files only)."""
    return sources / f"{step.repo.replace('/', '+')}@{step.commit[:12]}"


def git_command(git_root: Path, repo: str) -> list[str] | None:
    """`git` pointed at the local clone of REPO under GIT_ROOT (bare or not), or None when there is none."""
    owner, name = repo.split("/")
    for candidate in (git_root / f"{owner}+{name}" / "repo", git_root / f"{owner}+{name}", git_root / owner / name):
        if (candidate / "objects").is_dir() and (candidate / "HEAD").is_file():
            return ["git", f"--git-dir={candidate}"]
        if (candidate / ".git").exists():
            return ["git", "-C", str(candidate)]
    return None


def export_sources(git_root: Path, sources: Path = SOURCES) -> list[str]:
    """Export every dev-set repository's source files at its recorded commit from the clones under GIT_ROOT
    into SOURCES (once: an exported tree is kept); returns the repositories that could not be exported."""
    failed = []
    for step in {(s.repo, s.commit): s for s in devset.steps()}.values():
        target = source_tree(step, sources)
        if target.is_dir():
            continue
        git = git_command(git_root, step.repo)
        if git is None:
            failed.append(f"{step.repo} (no clone under {git_root})")
            continue
        listing = subprocess.run([*git, "ls-tree", "-r", "-z", "--name-only", step.commit], capture_output=True)
        if listing.returncode != 0:
            failed.append(f"{step.repo}@{step.commit[:12]} ({listing.stderr.decode(errors='replace').strip()[:80]})")
            continue
        paths = [p for p in listing.stdout.decode().split("\0") if p.rsplit(".", 1)[-1] in SOURCE_FILES]
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        for start in range(0, len(paths), 500):           # a command line of bounded length
            archive = subprocess.run([*git, "archive", step.commit, "--", *paths[start:start + 500]],
                                     capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(partial)], input=archive.stdout, check=True)
        partial.rename(target)
        print(f"exported {step.repo}@{step.commit[:12]} -> {target}")
    return failed


def restatic(step: devset.Step, sources: Path = SOURCES) -> str:
    """The step's committed fixture with its static features re-derived from the source at the recorded
    commit; the profile part (metrics, ncu's rule results, ptxas, focus) is kept as it was."""
    root = source_tree(step, sources)
    evidence = with_static(Evidence.from_json(devset.read_fixture(step)), step, root)
    return checked_json(evidence, step, root)


def static_only(args: argparse.Namespace) -> int:
    """--static-only: every committed fixture's static features again, from the sources; says how many changed."""
    if args.git:
        failed = export_sources(args.git)
        if failed:
            print("not exported: " + "; ".join(failed))
    changed, same, missing = [], 0, []
    for step in devset.steps():
        if not step.fixture.is_file() or not (source_tree(step) / step.path).is_file():
            missing.append(step.key)
            continue
        text = restatic(step)
        if text == devset.read_fixture(step):
            same += 1
            continue
        changed.append(step.key)
        if not args.dry_run:
            devset.write_fixture(step, text)
    verb = "would change (dry run)" if args.dry_run else "changed"
    print(f"static features re-derived: {verb} {len(changed)}, unchanged {same}, "
          f"missing (no fixture or no source) {len(missing)} {missing[:5]}")
    return 0 if not missing else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=Path, help="folder holding devset/<prog>/<version>.ncu-rep and .src/ "
                        "(default: .devset/profiles/<half>/)")
    parser.add_argument("--dry-run", action="store_true", help="build each evidence, write no fixture")
    parser.add_argument("--static-only", action="store_true", help="no reports, no GPU: re-derive the static "
                        "features of every committed fixture from its source (.devset/sources/), keep its profile")
    parser.add_argument("--git", type=Path, help="with --static-only: folder of the repositories' git clones to "
                        "export the sources from (<owner>+<name>/repo, <owner>+<name> or <owner>/<name>)")
    args = parser.parse_args(argv)
    if args.static_only:
        return static_only(args)
    built, missing = 0, []
    for step in devset.steps():
        root = args.profiles if args.profiles else devset.LOCAL / "profiles" / step.half
        folder = root / "devset" / step.prog
        source = folder / f"{step.version}.src" / step.path
        if not (folder / f"{step.version}.ncu-rep").is_file() or not source.is_file():
            missing.append(step.key)
            continue
        text = evidence_for(step, folder)
        if not args.dry_run:
            devset.write_fixture(step, text)
        built += 1
        data = json.loads(text)
        print(f"{step.key:45s} {data['focus_kernel'][:40]:40s} {len(data['kernels'][0]['metrics'])} metrics")
    print(f"{'checked (dry run, nothing written)' if args.dry_run else 'built'} {built} fixtures; "
          f"missing locally: {len(missing)} {missing[:5]}")
    return 0 if built else 1


if __name__ == "__main__":
    sys.exit(main())
