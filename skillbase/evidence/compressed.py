"""Profiles kept xz-compressed (`NAME.ncu-rep.xz`; any profile, in fact): ncu reports shrink about 10x
under xz, which keeps the committed population small enough for a trip to the GPU machine.

`ncu_report` reads only a plain file, so a `.xz` profile is decompressed once into the cache folder
(`<cache>/decompressed/<sha256 of the .xz>/<name without .xz>`, private to the user) and read from
there: keyed by the compressed file's content, a changed file is decompressed again and an unchanged
one never twice. The copy is written under a temporary name and renamed, so a reader never sees half
a file.
"""

from __future__ import annotations

import hashlib
import lzma
from pathlib import Path

from skillbase.config import cache_root, private_dir
from skillbase.errors import EnvironmentProblem, InputError
from skillbase.files import write_bytes_atomically, written_aside

XZ_SUFFIX = ".xz"
# Far above any real report (the largest committed one is 14 MB) and far below a full disk: an xz file
# of a few MB can expand to many GB, and it should end in one line, not with the cache's disk filled.
MAX_DECOMPRESSED_BYTES = 4 << 30
_BLOCK = 1 << 20


def is_compressed(path: str | Path) -> bool:
    """Whether PATH names an xz-compressed file (by its suffix, as `xz` names them)."""
    return Path(path).name.lower().endswith(XZ_SUFFIX)


def plain_name(path: str | Path) -> str:
    """`K.before.ncu-rep.xz` -> `K.before.ncu-rep`; a name without `.xz` as it is."""
    name = Path(path).name
    return name[: -len(XZ_SUFFIX)] if is_compressed(name) else name


def plain_file(path: str | Path) -> Path:
    """PATH itself, or for a `.xz` file its decompressed copy in the cache (made on first use).

    A corrupt or truncated `.xz` is an InputError naming PATH; a cache that cannot be written is an
    EnvironmentProblem."""
    path = Path(path)
    if not is_compressed(path):
        return path
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    digest = file_sha256(path)
    target = private_dir(_root()) / digest / plain_name(path)
    if not target.is_file():
        private_dir(target.parent)
        try:
            _decompress(path, target)
        except (InputError, EnvironmentProblem):
            _remove_if_empty(target.parent)   # a damaged file leaves nothing behind
            raise
    return target


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:   # not empty: another process decompressed the same file meanwhile
        pass


def compress_file(plain: str | Path, target: str | Path) -> Path:
    """Write PLAIN xz-compressed to TARGET (what `xz -9` writes), read back and compared before it is
    renamed into place: a report is never replaced by a copy that does not hold it."""
    plain, target = Path(plain), Path(target)
    data = plain.read_bytes()
    packed = lzma.compress(data, format=lzma.FORMAT_XZ, preset=9)
    if lzma.decompress(packed, format=lzma.FORMAT_XZ) != data:
        raise EnvironmentProblem(f"{plain}: its xz copy does not read back the same; nothing written")
    write_bytes_atomically(target, packed, mode=0o644)   # a committed file, not a cache entry
    return target


def _root() -> Path:
    private_dir(cache_root())
    return cache_root() / "decompressed"


def file_sha256(path: Path) -> str:
    """The hex sha256 of PATH's bytes, read in blocks; an unreadable file is an InputError naming it."""
    h = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(_BLOCK), b""):
                h.update(block)
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
    return h.hexdigest()


def _decompress(source: Path, target: Path) -> None:
    try:
        with written_aside(target, mode=0o600) as temporary, temporary.open("wb") as out, \
                lzma.open(source, format=lzma.FORMAT_XZ) as data:
            written = 0
            while block := _read(data, source):
                written += len(block)
                if written > MAX_DECOMPRESSED_BYTES:
                    raise InputError(f"{source}: decompresses to more than {MAX_DECOMPRESSED_BYTES >> 30} GiB; "
                                     "not a profile", hint="give the plain report instead")
                out.write(block)
    except OSError as error:   # reading errors are InputErrors by now: this is the cache's disk
        raise EnvironmentProblem(f"cannot write the decompressed copy of {source} into {target.parent} "
                                 f"({error.strerror or error})",
                                 hint="free disk space, or set SKILLBASE_CACHE to another folder") from None


def _read(data: lzma.LZMAFile, source: Path) -> bytes:
    try:
        return data.read(_BLOCK)
    except (lzma.LZMAError, EOFError, OSError) as error:
        raise InputError(f"{source}: corrupt or truncated .xz file ({error})",
                         hint=f"compress the report again: xz -k {plain_name(source)}") from None
