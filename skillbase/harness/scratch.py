"""Candidates' scratch copies: a kernel source written into the cache with its task spec beside it.

Candidates are written beside nothing the user owns: each source goes into a content-named folder
in the cache (`<cache>/candidates/<digest of the source and the task's files>/`) together with a copy of the
task spec and every file the spec names (a python or CUDA reference, input hooks), and every local
header the source includes (`#include "common.cuh"`, `"../util/math.cuh"`, laid out as around the
original), so the copy builds, loads, verifies and profiles exactly like the original. Jobs judging the
same source of the same task at once (several workers, several GPUs) share its folder: each file is
rewritten only when it differs, and then aside and renamed into place, so a reader never sees one
half-written.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from skillbase.config import cache_root
from skillbase.cuda.includes import local_includes
from skillbase.datafile.yamldoc import load_yaml
from skillbase.errors import InputError
from skillbase.files import write_bytes_atomically


def scratch_copy(task_path: Path, source: str) -> Path:
    """The source as `<cache>/candidates/<digest>/<task file name>`, the task spec copied beside it.

    The digest covers everything copied (the source, the spec, the files it names, the headers), not the
    source alone: two tasks whose kernels share a file name (every KernelBench task's `model.cu`) judged at
    once with the same source would otherwise share one folder, and one job could load the other task's
    spec. Content, not the task's path: a copy of the task elsewhere (the generator judges in a temporary
    one) finds the same folder, and so the same builds. A header above the task's folder (`../util/x.cuh`)
    moves the kernel down into the copy by as many folders, so the relative include still resolves."""
    spec = task_path.with_name(task_path.stem + ".task.yaml")
    home = task_path.resolve().parent
    names = spec_files(spec) if spec.exists() else []
    headers = [h for h in _spec_headers(spec, names) if h != task_path.resolve()]
    headers += local_includes(source.encode(), home, {task_path.resolve(), *headers}, relative_only=True)
    root = home
    while not all(h.is_relative_to(root) for h in headers) and root != root.parent:
        root = root.parent   # the nearest folder above every header and the task
    key = hashlib.sha256(source.encode())
    if spec.exists():
        for name, path in ((spec.name, spec), *((n, spec.parent / n) for n in names)):
            if path.is_file():
                key.update(b"\0" + name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    if root != home:
        key.update(b"\0home\0" + str(home.relative_to(root)).encode())
    placed = [(header.relative_to(root), header.read_bytes()) for header in headers]
    for name, data in placed:
        key.update(b"\0" + str(name).encode() + b"\0" + hashlib.sha256(data).digest())
    folder = cache_root() / "candidates" / key.hexdigest()[:16]
    path = folder / home.relative_to(root) / task_path.name
    _write_if_changed(path, source.encode())
    for name, data in placed:
        _write_if_changed(folder / name, data)
    if spec.exists():
        copy_spec(spec, path.parent / spec.name)
    return path


def _spec_headers(spec: Path, names: list[str]) -> list[Path]:
    """The local headers of the CUDA files a spec names (`names`, its `spec_files`): a CUDA reference's includes
    travel with it."""
    seen: set[Path] = set()
    for name in names:
        path = spec.parent / name
        if path.suffix in (".cu", ".cuh") and path.is_file():
            local_includes(path.read_bytes(), path.resolve().parent, seen, relative_only=True)
    return sorted(seen)


def copy_headers(source: str, task_path: Path, target_folder: Path) -> list[Path]:
    """Copy the local headers `source` (a kernel of the task at `task_path`) includes from within the task's
    folder into `target_folder`, laid out alike; returns those above the folder, which are not copied."""
    home = task_path.resolve().parent
    above = []
    for header in local_includes(source.encode(), home, {task_path.resolve()}, relative_only=True):
        if not header.is_relative_to(home):
            above.append(header)
            continue
        _write_if_changed(target_folder / header.relative_to(home), header.read_bytes())
    return above


def copy_spec(spec: Path, target: Path) -> None:
    """Copy a task spec together with the files it names (a python or CUDA reference, input
    hooks), so the copy loads, verifies and profiles exactly like the original."""
    _write_if_changed(target, spec.read_bytes())
    for name in spec_files(spec):
        if (spec.parent / name).is_file():
            _write_if_changed(target.parent / name, (spec.parent / name).read_bytes())


def _write_if_changed(target: Path, data: bytes) -> None:
    """`data` into `target` (its folders made) unless it holds it already; written aside and renamed, never
    truncated in place."""
    try:
        if target.read_bytes() == data:
            return
    except OSError:
        pass
    target.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomically(target, data)


def spec_files(spec_path: Path) -> list[str]:
    """Files a task spec refers to, relative to it: reference.python / reference.cuda (with that
    kernel's own spec), and every init hook. Unreadable specs name nothing (load_task reports them)."""
    try:
        data = load_yaml(Path(spec_path), exponent_floats=True).data or {}
    except InputError:
        return []
    names: list[str] = []
    reference = data.get("reference") if isinstance(data, dict) else None
    if isinstance(reference, dict):
        if isinstance(reference.get("python"), str):
            names.append(reference["python"].rpartition(":")[0])
        if isinstance(reference.get("cuda"), str):
            cuda = reference["cuda"]
            names += [cuda, str(Path(cuda).with_suffix("")) + ".task.yaml"]
    for arg in (data.get("args") or []) if isinstance(data, dict) else []:
        init = arg.get("init") if isinstance(arg, dict) else None
        if isinstance(init, dict) and isinstance(init.get("hook"), str):
            names.append(init["hook"].rpartition(":")[0])
    return [n for n in dict.fromkeys(names) if n and not Path(n).is_absolute() and ".." not in Path(n).parts]
