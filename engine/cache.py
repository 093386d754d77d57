"""A cache of the parsed rule set, keyed on a digest of every file that defines it.

Parsing the built-in rules (YAML with marks, JSON Schema, rule-engine's parser) takes far longer
than evaluating them, and importing rule-engine alone costs ~0.3 s. A cached `advise` therefore
loads one JSON file and compiles the stored Python translations. The key covers the vocabulary,
every rule file, the thresholds file, the engine's own source and the Python version, so any edit
invalidates it. Set SKILLBASE_NO_CACHE=1 to bypass it; SKILLBASE_CACHE moves it (with every other cache).

The file name is a digest of public files, so anyone who can write the folder could plant one:
the cache is data only (JSON decoded into a fixed list of the engine's own dataclasses, never
pickle), every stored translation is checked against the translator's grammar before it is
compiled (`expressions.is_translation`), and the folder is made private (`config.private_dir`: 0700,
used only while owned by the user and closed to others' writes). Anything else is ignored and the
rules are parsed.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from skillbase.files import write_text_atomically

# Imported here, not per value: decoding visits every node of the rule set (~24,000) on the start-up
# path this cache exists to shorten. evaluate.py, the only importer, loads these modules anyway.
from .expressions import Comparison, Expression, is_translation
from .rules import Derivation, Node, Proposal, Rule, rule_files
from .vocabulary import MISSING, Entry, Thresholds, Vocabulary

_ENGINE_DIR = Path(__file__).resolve().parent


def cache_dir() -> Path:
    from skillbase.config import cache_root

    return cache_root()


def enabled() -> bool:
    from skillbase.config import rule_cache_enabled

    return rule_cache_enabled()


def digest(dirs: list[Path], thresholds: Path) -> str:

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


_FORMAT = 1   # bump when the encoding below changes


def _folder() -> Path:
    return cache_dir() / "rules"


def _path(key: str) -> Path:
    return _folder() / f"rules-{key[:32]}.json"


def _private(path: Path) -> bool:
    """A cache file owned by this user that others cannot write."""
    try:
        info = path.lstat()
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode) or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
        return False
    return not info.st_mode & 0o022


def _usable_folder() -> bool:
    from skillbase.config import private_dir
    from skillbase.errors import EnvironmentProblem

    try:
        private_dir(cache_dir())
        private_dir(_folder())
    except EnvironmentProblem:   # advise still works, parsing the rules each time
        return False
    return True


def read(key: str) -> dict[str, Any] | None:
    """A cached engine's constructor arguments, or None (then the rules are parsed again)."""
    if not enabled():
        return None
    path = _path(key)
    if not (_usable_folder() and _private(path)):
        return None
    try:
        document = json.loads(path.read_bytes())
        if not isinstance(document, dict) or document.get("format") != _FORMAT or document.get("key") != key:
            return None
        return _decode_engine(document["engine"])
    # absent, unreadable, truncated, planted or from an older engine: parse the rules instead
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None


def write(key: str, engine: Any) -> None:
    if not enabled():
        return
    directory = _folder()
    if not _usable_folder():
        return   # somebody else's or an open folder: never write where others could swap the file
    try:
        text = json.dumps({"format": _FORMAT, "key": key, "engine": _encode_engine(engine)})
        # closed to others' writes whatever the umask, or `read` (`_private`) would not trust it
        write_text_atomically(_path(key), text, mode=0o600)
        # every edit of a rule makes a new key: keep the newest few so the folder stays small
        old = sorted(directory.glob("rules-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)[8:]
        for stale in old:
            stale.unlink(missing_ok=True)
    except OSError:   # a read-only home (or a concurrent prune) must not break advise: we parse next time too
        pass


# ---- the encoding: plain JSON, decoded only into the engine's own dataclasses -------------------

_TYPES: dict[str, type] = {cls.__name__: cls for cls in (Comparison, Expression, Derivation, Node, Proposal, Rule,
                                                            Entry, Thresholds)}


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if value is MISSING:
        return {"$": "MISSING"}
    if isinstance(value, Path):
        return {"$": "Path", "path": str(value)}
    if isinstance(value, (list, tuple)):
        items = [_encode(item) for item in value]
        return items if isinstance(value, list) else {"$": "tuple", "items": items}
    if isinstance(value, dict):
        return {"$": "dict", "items": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if is_dataclass(value) and type(value).__name__ in _TYPES:
        out = {f.name: _encode(getattr(value, f.name)) for f in fields(value) if f.name != "_fn"}
        out["$"] = type(value).__name__
        return out
    raise TypeError(f"cannot cache a {type(value).__name__}")


def _decode(value: Any, types: dict[str, type]) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_decode(item, types) for item in value]
    if not isinstance(value, dict):
        raise TypeError("not a cached value")
    kind = value.get("$")
    if kind == "MISSING":
        return MISSING
    if kind == "Path":
        return Path(value["path"])
    if kind == "tuple":
        return tuple(_decode(item, types) for item in value["items"])
    if kind == "dict":
        return {_decode(k, types): _decode(v, types) for k, v in value["items"]}
    cls = types.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise TypeError(f"unknown cached type {kind!r}")
    names = {f.name for f in fields(cls) if f.name != "_fn"}
    if set(value) - {"$"} != names:
        raise TypeError(f"cached {kind} has other fields")
    obj = cls(**{name: _decode(value[name], types) for name in names})
    if isinstance(obj, Expression) and obj.python is not None and not (
            isinstance(obj.python, str) and is_translation(obj.python)):
        raise TypeError("a cached translation outside the translator's grammar")
    return obj


def _encode_engine(engine: Any) -> dict[str, Any]:
    vocabulary = engine.vocabulary
    return {"vocabulary": {"entries": _encode(vocabulary.entries), "derived_order": _encode(vocabulary.derived_order),
                           "files": _encode(vocabulary.files)},
            "thresholds": _encode(engine.thresholds), "rules": _encode(engine.rules),
            "derive_order": [rule.id for rule in engine.derive_order], "digest": engine.digest,
            "rules_dirs": _encode(engine.rules_dirs)}


def _decode_engine(document: dict[str, Any]) -> dict[str, Any]:
    """The Engine's constructor arguments (the engine builds itself: this module does not import it)."""
    types = _TYPES
    vocab = document["vocabulary"]
    entries = _decode(vocab["entries"], types)
    rules = _decode(document["rules"], types)
    thresholds = _decode(document["thresholds"], types)
    if not (isinstance(entries, dict) and all(isinstance(e, Entry) for e in entries.values())
            and isinstance(rules, list) and all(isinstance(r, Rule) for r in rules)
            and isinstance(thresholds, Thresholds)):
        raise TypeError("cached engine of the wrong shape")
    by_id = {rule.id: rule for rule in rules}
    vocabulary = Vocabulary(entries, _decode(vocab["derived_order"], types), _decode(vocab["files"], types))
    return {"vocabulary": vocabulary, "thresholds": thresholds, "rules": rules,
            "derive_order": [by_id[i] for i in document["derive_order"]], "digest": document["digest"],
            "rules_dirs": _decode(document["rules_dirs"], types)}
