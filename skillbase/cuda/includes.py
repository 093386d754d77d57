"""A source's local headers: every `#include "..."` that names a file beside its includer, followed through.

The build's cache key hashes them (a header edited is a new build) and a candidate's scratch copy carries
them (a kernel that includes `common.cuh` builds in the cache as it does in the user's folder). Quoted
includes that name no file there (`"cuda_runtime.h"`, found on nvcc's own path) are not local.
"""

from __future__ import annotations

import re
from pathlib import Path

_QUOTED_INCLUDE = re.compile(rb'^\s*#\s*include\s*"([^"]+)"', re.M)


def local_includes(text: bytes, folder: Path, seen: set[Path] | None = None, relative_only: bool = False) -> list[Path]:
    """The resolved paths of the files `text` (a source in `folder`) includes by quotes, and theirs, each once.
    `relative_only`: leave out a header named by an absolute path (it, and what it includes, resolve in place
    wherever the includer is copied)."""
    seen = set() if seen is None else seen
    found = []
    for match in _QUOTED_INCLUDE.finditer(text):
        name = match.group(1).decode("utf-8", "replace")
        if relative_only and Path(name).is_absolute():
            continue
        target = (folder / name).resolve()
        if target in seen or not target.is_file():
            continue
        seen.add(target)
        found.append(target)
        found.extend(local_includes(target.read_bytes(), target.parent, seen, relative_only))
    return found
