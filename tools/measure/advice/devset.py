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


def load() -> dict:
    """devset.yaml as data."""
    return yaml.safe_load(DEVSET.read_text())


def progression(prog: str) -> dict:
    """One progression's entry in devset.yaml."""
    return next(p for p in load()["progressions"] if p["id"] == prog)


def drawn_split(data: dict | None = None) -> dict[str, list[str]]:
    """The halves as drawn once (seed 20261201) over the first 20 progressions; never changed."""
    drawn = (data or load())["split"]
    return {"tune": list(drawn["tune"]), "test": list(drawn["test"])}


def split(data: dict | None = None) -> dict[str, list[str]]:
    """Both halves: the drawn split, plus the progressions added later with their own `split: tune`.

    A progression added after the draw may only join the tune half (the test half is for reporting
    and never grows or changes), and a drawn progression may not carry a split of its own.
    """
    data = data or load()
    halves = drawn_split(data)
    drawn = {prog for progs in halves.values() for prog in progs}
    for prog in data["progressions"]:
        own = prog.get("split")
        if own is None:
            if prog["id"] not in drawn:
                raise ValueError(f"devset: progression {prog['id']} is in neither half (give it `split: tune`)")
            continue
        if prog["id"] in drawn:
            raise ValueError(f"devset: {prog['id']} was drawn into a half; it cannot carry `split: {own}`")
        if own != "tune":
            raise ValueError(f"devset: {prog['id']} has `split: {own}`; progressions added after the draw "
                             "join the tune half only")
        halves["tune"].append(prog["id"])
    return halves


def steps(half: str | None = None) -> list[Step]:
    data = load()
    halves = split(data)
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
