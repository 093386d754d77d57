"""The advice development set: its steps (devset.yaml) and their evidence fixtures.

Each labelled step is version k of a progression, profiled on the H200, with the technique that
separates it from version k+1. Its evidence (metrics, ncu's own rule results, static features of
the version's source) is committed as `tests/fixtures/devset/<prog>/<version>.evidence.json.gz`;
the third-party sources and the .ncu-rep files are not (see README.md): `build_fixtures.py`
rebuilds the evidence from a local copy in `.devset/`.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
DEVSET = HERE / "devset.yaml"
FIXTURES = REPO / "tests" / "fixtures" / "devset"
LOCAL = REPO / ".devset"


@dataclass(frozen=True)
class Step:
    prog: str
    family: str
    half: str                  # tune | test
    version: str
    kernel: str
    path: str                  # the version's source file in the author's repository
    label: str                 # the technique of the next version (the author's words, our id)
    also: tuple[str, ...]
    repo: str
    commit: str
    index: int                 # 0-based position in the progression

    @property
    def key(self) -> str:
        return f"{self.prog}/{self.version}"

    @property
    def fixture(self) -> Path:
        return FIXTURES / self.prog / f"{self.version}.evidence.json.gz"

    @property
    def previous_labels(self) -> tuple[str, ...]:
        """What the author did before this version (the run's history, as the steps went)."""
        return tuple(s.label for s in steps() if s.prog == self.prog and s.index < self.index)


def _load() -> dict:
    return yaml.safe_load(DEVSET.read_text())


def split() -> dict[str, list[str]]:
    data = _load()["split"]
    return {"tune": list(data["tune"]), "test": list(data["test"])}


def steps(half: str | None = None) -> list[Step]:
    data = _load()
    halves = split()
    which = {prog: name for name, progs in halves.items() for prog in progs}
    found = []
    for prog in data["progressions"]:
        for index, step in enumerate(prog["steps"]):
            if not step.get("next_label"):
                continue                       # the last version: nothing follows it
            s = Step(prog=prog["id"], family=prog["family"], half=which[prog["id"]], version=step["version"],
                     kernel=step["kernel"], path=step["path"], label=step["next_label"],
                     also=tuple(step.get("also") or ()), repo=prog["repo"], commit=prog["commit"], index=index)
            if half in (None, "all", s.half):
                found.append(s)
    return found


def read_fixture(step: Step) -> str:
    return gzip.decompress(step.fixture.read_bytes()).decode()


def write_fixture(step: Step, text: str) -> None:
    step.fixture.parent.mkdir(parents=True, exist_ok=True)
    step.fixture.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))
