"""Every bench kernel compiles for sm_90 (object files only, no linking; two compiles at a time).

Vendor kernels need their library's headers (cuBLAS, cuSPARSE, cuFFT, cuDNN); CUB ships with the
toolkit. They are looked up in the toolkit, in $SKILLBASE_VENDOR_INCLUDE and in pip's nvidia-*
packages; a vendor kernel whose header is nowhere is skipped with the header's name. cuDNN is not
part of the toolkit: `source bench/tools/cudnn_env.sh` finds an installed one (e.g. the
nvidia-cudnn-cu13 wheel). Only the kernels a run selects are compiled (`-k vendor_bf16` builds the BF16 vendors).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KERNELS = sorted((REPO / "bench" / "ops").glob("*/*.cu"))
LIB_HEADERS = ("cublas_v2.h", "cublasLt.h", "cusparse.h", "cufft.h", "cudnn.h")


def _include_dirs() -> list[Path]:
    dirs = [Path(p) for p in os.environ.get("SKILLBASE_VENDOR_INCLUDE", "").split(os.pathsep) if p]
    nvcc = shutil.which("nvcc")
    if nvcc:
        dirs.append(Path(nvcc).resolve().parent.parent / "include")
    for base in map(Path, sys.path):
        dirs.extend(sorted((base / "nvidia").glob("*/include")))
    return [d for d in dirs if d.is_dir()]


def _missing_header(source: str, dirs: list[Path]) -> str | None:
    for header in re.findall(r'#include\s*[<"]([^>"]+)[>"]', source):
        if header in LIB_HEADERS and not any((d / header).is_file() for d in dirs):
            return header
    return None


def _selected(session) -> list[Path]:
    """The kernels of this module's compile test that the run selected (all of them without -k)."""
    chosen = [item.callspec.params["kernel"] for item in session.items
              if getattr(item, "originalname", "") == "test_kernel_compiles_for_sm90"]
    return chosen or KERNELS


@pytest.fixture(scope="module")
def compiled(request):
    dirs = _include_dirs()
    flags = [f"-I{d}" for d in dirs if "nvidia" in str(d) or str(d) in os.environ.get("SKILLBASE_VENDOR_INCLUDE", "")]
    tmp = Path(tempfile.mkdtemp(prefix="bench-objs-"))

    def one(path: Path):
        missing = _missing_header(path.read_text(), dirs)
        if missing:
            how = "source bench/tools/cudnn_env.sh, or " if missing == "cudnn.h" else ""
            return path, "skip", f"{missing} not found ({how}set SKILLBASE_VENDOR_INCLUDE)"
        obj = tmp / f"{path.parent.name}-{path.stem}.o"
        out = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-c", str(path), "-o", str(obj), *flags],
                             capture_output=True, text=True, timeout=300)
        return path, "ok" if out.returncode == 0 else "fail", out.stderr[-3000:]

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = {p: (status, log) for p, status, log in pool.map(one, _selected(request.session))}
    yield results
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_kernel_compiles_for_sm90(compiled, kernel):
    status, log = compiled[kernel]
    if status == "skip":
        pytest.skip(log)
    assert status == "ok", log
    assert "warning" not in log, log
