"""Content-addressed artifact folder: kernels, build logs, ncu reports, prompts and responses.

An artifact is stored once under `objects/<2 hex>/<sha256>` and referred to by its digest from the
run store, so identical kernels across rounds and runs cost nothing and nothing is ever overwritten.
Writes go through a temporary file and an atomic rename, so a crash never leaves half an artifact.
"""

from __future__ import annotations

import errno
import hashlib
from pathlib import Path

from skillbase.errors import EnvironmentProblem, InputError
from skillbase.files import write_bytes_atomically


def digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ArtifactStore:
    """A folder of immutable blobs addressed by their SHA-256."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.objects = self.root / "objects"

    def path_for(self, digest: str) -> Path:
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise InputError(f"not an artifact digest: {digest!r}")
        return self.objects / digest[:2] / digest

    def put_bytes(self, data: bytes) -> str:
        digest = digest_bytes(data)
        target = self.path_for(digest)
        if target.exists():
            return digest
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            # readable by the user alone, as artifacts have always been
            write_bytes_atomically(target, data, mode=0o600, fsync=True)
        except OSError as error:
            raise _unwritable(self.root, error) from None
        return digest

    def put_text(self, text: str) -> str:
        return self.put_bytes(text.encode("utf-8"))

    def get_bytes(self, digest: str) -> bytes:
        target = self.path_for(digest)
        try:
            data = target.read_bytes()
        except FileNotFoundError:
            raise InputError(f"artifact {digest[:12]} is missing from {self.objects}",
                             hint="the store's artifact folder was moved or pruned") from None
        if digest_bytes(data) != digest:
            raise InputError(f"artifact {digest[:12]} is corrupt (its content no longer matches its digest)")
        return data

    def get_text(self, digest: str) -> str:
        return self.get_bytes(digest).decode("utf-8")


def _unwritable(root: Path, error: OSError) -> EnvironmentProblem:
    """A full disk (or a read-only folder) while writing an artifact: nothing half-written is kept,
    and the run's last finished step stays in the database."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return EnvironmentProblem(f"cannot write to the run store's artifacts at {root}: the disk is full",
                                  hint="free some space; the last finished step is kept and `skillbase resume` "
                                       "continues from it")
    return EnvironmentProblem(f"cannot write to the run store's artifacts at {root} ({error.strerror or error})",
                              hint="make the folder writable, or pass --store")
