"""A cache of the parsed rule set, keyed on a digest of every file that defines it.

Parsing the built-in rules (YAML with marks, JSON Schema, rule-engine's parser) takes far longer
than evaluating them, and importing rule-engine alone costs ~0.3 s. A cached `advise` therefore
loads one pickle and compiles the stored Python translations. The key covers the vocabulary,
every rule file, the thresholds file, the engine's own source and the Python version, so any edit
invalidates it. Set SKILLBASE_NO_CACHE=1 to bypass it; SKILLBASE_CACHE moves it (with every other cache).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any

_ENGINE_DIR = Path(__file__).resolve().parent


def cache_dir() -> Path:
    from skillbase.config import cache_root

    return cache_root()


def enabled() -> bool:
    from skillbase.config import rule_cache_enabled

    return rule_cache_enabled()


def digest(dirs: list[Path], thresholds: Path) -> str:
    from .rules import rule_files

    h = hashlib.sha256()
    h.update(sys.version.encode())
    files: list[Path] = sorted(_ENGINE_DIR.glob("*.py"))
    for directory in dirs:
        files.append(directory / "vocabulary.yaml")
        files.extend(rule_files(directory))
    files.append(thresholds)
    if not any((d / "vocabulary.yaml").is_file() for d in dirs):
        from skillbase.config import builtin_rules_dir

        files.append(builtin_rules_dir() / "vocabulary.yaml")
    for path in files:
        h.update(str(path).encode() + b"\0")
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"<absent>")
    return h.hexdigest()


def _path(key: str) -> Path:
    return cache_dir() / f"rules-{key[:32]}.pickle"


def read(key: str) -> Any:
    if not enabled():
        return None
    try:
        with open(_path(key), "rb") as handle:
            return pickle.load(handle)
    # absent, unreadable, truncated, or naming a class that has since moved: rebuild
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
        return None


def write(key: str, engine: Any) -> None:
    if not enabled():
        return
    directory = cache_dir()
    temporary: Path | None = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, delete=False, suffix=".tmp") as handle:
            temporary = Path(handle.name)
            pickle.dump(engine, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, _path(key))
        # every edit of a rule makes a new key: keep the newest few so the folder stays small
        old = sorted(directory.glob("rules-*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)[8:]
        for stale in old:
            stale.unlink(missing_ok=True)
    except OSError:   # a read-only home (or a concurrent prune) must not break advise: we parse next time too
        if temporary is not None:
            temporary.unlink(missing_ok=True)
