"""The examples shipped with skillbase: small kernels with their task specs, and saved H200 profiles.

They live inside the installed package (read-only), so a user copies one out to work on it:

    skillbase examples copy naive_sgemm          # -> ./naive_sgemm/ (the kernel, its spec, its profile)
    skillbase advise --report naive_sgemm/naive_sgemm.h200.ncu-rep.xz --source naive_sgemm/naive_sgemm.cu
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from skillbase.config import builtin_examples_dir
from skillbase.datafile.problems import did_you_mean
from skillbase.errors import InputError


@dataclass(frozen=True)
class Example:
    name: str
    folder: Path          # inside the installed package: copy it before editing
    summary: str          # the kernel's first comment line
    files: tuple[str, ...]

    @property
    def kernel(self) -> Path:
        return self.folder / f"{self.name}.cu"

    @property
    def saved_profiles(self) -> tuple[str, ...]:
        return tuple(f for f in self.files if f.endswith((".ncu-rep", ".ncu-rep.xz")))   # committed xz-compressed

    def to_dict(self) -> dict:
        return {"name": self.name, "summary": self.summary, "folder": str(self.folder), "files": list(self.files),
                "saved_profiles": list(self.saved_profiles)}


def _summary(kernel: Path) -> str:
    for line in kernel.read_text().splitlines():
        text = line.strip().lstrip("/").strip()
        if text:
            return text.split(":", 1)[1].strip() if text.startswith(kernel.stem + ":") else text
    return ""


def examples_json(examples: list[Example]) -> dict:
    """`examples list --json`."""
    from skillbase.documents import versioned

    return versioned("examples-list", {"examples": [e.to_dict() for e in examples]})


def copied_json(example: Example, folder: Path) -> dict:
    """`examples copy --json`: where EXAMPLE's files now are."""
    from skillbase.documents import versioned

    return versioned("examples-copy", {"name": example.name, "folder": str(folder), "files": list(example.files)})


def list_examples() -> list[Example]:
    """Every bundled example, by name."""
    root = builtin_examples_dir()
    found = []
    for folder in sorted(p for p in root.iterdir() if (p / f"{p.name}.cu").is_file()):
        files = tuple(sorted(f.name for f in folder.iterdir() if f.is_file() and not f.name.startswith(".")))
        found.append(Example(folder.name, folder, _summary(folder / f"{folder.name}.cu"), files))
    return found


def get_example(name: str) -> Example:
    examples = {e.name: e for e in list_examples()}
    if name not in examples:
        hint = did_you_mean(name, examples) or f"bundled examples: {', '.join(examples)}"
        raise InputError(f"no bundled example named {name!r}", hint=hint)
    return examples[name]


def copy_example(name: str, destination: str | Path = ".", force: bool = False) -> Path:
    """Copy example `name` into `destination/name/` and return that folder; an existing file there is
    never overwritten unless `force`."""
    example = get_example(name)
    target = Path(destination) / name
    clashes = [f for f in example.files if (target / f).exists()]
    if clashes and not force:
        raise InputError(f"{target}/{clashes[0]} already exists; not overwriting it",
                         hint="pass --force to replace the example's files, or copy it elsewhere")
    target.mkdir(parents=True, exist_ok=True)
    for name_ in example.files:
        shutil.copyfile(example.folder / name_, target / name_)
    return target
