"""Rebuild the dev set's evidence fixtures from the local profiles and sources in `.devset/`.

    python tools/measure/advice/build_fixtures.py                  # every step whose report is here
    python tools/measure/advice/build_fixtures.py --profiles DIR   # reports under DIR/devset/<prog>/
    python tools/measure/advice/build_fixtures.py --dry-run        # say what would be built, write nothing

`.devset/profiles/{tune,test}/devset/<prog>/<version>.ncu-rep` (H200 profiles: `ncu --set full`
plus the metrics the rules read) and `<version>.src/` (the version's own files at the recorded
commit) come from the local recipe in `.devset/`, which is not committed (third-party code).
`--profiles DIR` reads them from DIR/devset/<prog>/ instead (the folder `.devset/profile.sh`
writes as $OUT), whatever the half. A step whose report or source is absent is skipped and listed.
The evidence keeps every metric of the report (rules may read more later) and names the source by
repository, commit and path, never by a local folder.
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

from skillbase.evidence import build_evidence, static_features  # noqa: E402


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


def evidence_for(step: devset.Step, folder: Path) -> str:
    """The evidence JSON of one step from its report and source in `folder` (<version>.ncu-rep, <version>.src/)."""
    report, source = folder / f"{step.version}.ncu-rep", folder / f"{step.version}.src" / step.path
    log = ptxas_log(step, folder / f"{step.version}.src")
    evidence = build_evidence(report=report, source=source, kernel=step.kernel, ptxas_text=log)
    includes = (devset.progression(step.prog).get("ptxas") or {}).get("includes", ())
    if includes and evidence.static:
        # the helpers in the repository's include folders (its -I) are part of what the kernel runs
        evidence.static = static_features(source, include_dirs=[folder / f"{step.version}.src" / d for d in includes])
    origin = f"{step.repo}@{step.commit[:12]}:{step.path}"
    evidence.producer["source_path"] = origin
    evidence.producer["report"] = f"{step.key}.ncu-rep (H200, ncu 2025.3.1, --set full, --clock-control none)"
    # The local folder names mean nothing elsewhere: keep the notes, without them.
    evidence.notes = [re.sub(re.escape(str(folder)) + r"[^\s']*", step.path, n) for n in evidence.notes]
    if evidence.static:
        evidence.static["file"]["path"] = origin
    text = evidence.to_json()
    assert str(devset.LOCAL) not in text and str(folder) not in text, f"{step.key}: a local path leaked"
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=Path, help="folder holding devset/<prog>/<version>.ncu-rep and .src/ "
                        "(default: .devset/profiles/<half>/)")
    parser.add_argument("--dry-run", action="store_true", help="build each evidence, write no fixture")
    args = parser.parse_args(argv)
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
