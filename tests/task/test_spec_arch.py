"""A task spec's `arch:` (issue 23): the architecture its kernel needs, from a fixed list of nvcc's names;
a wrong name is one line naming the file and field, with the closest valid name as the hint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from skillbase.errors import InputError
from skillbase.task import load_task
from skillbase.task.spec import ARCHS

REPO = Path(__file__).resolve().parents[2]
VECTOR_ADD = REPO / "examples" / "vector_add" / "vector_add.cu"


def with_arch(tmp_path: Path, arch) -> Path:
    (tmp_path / "vector_add.cu").write_text(VECTOR_ADD.read_text())
    spec = yaml.safe_load(VECTOR_ADD.with_name("vector_add.task.yaml").read_text())
    spec["arch"] = arch
    (tmp_path / "vector_add.task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return tmp_path / "vector_add.cu"


def test_without_arch_the_device_decides():
    assert load_task(VECTOR_ADD).arch is None


@pytest.mark.parametrize("arch", ["sm_90a", "sm_90", "sm_100a", "sm_120f"])
def test_a_named_arch_loads(tmp_path, arch):
    assert load_task(with_arch(tmp_path, arch)).arch == arch


@pytest.mark.parametrize("wrong, meant", [("sm90a", "sm_90a"), ("sm_90A", "sm_90a"), ("compute_90a", "sm_90a"),
                                          ("sm_91a", "sm_90a"), ("hopper", None)])
def test_a_wrong_arch_name_is_one_line_with_a_did_you_mean(tmp_path, wrong, meant):
    with pytest.raises(InputError) as caught:
        load_task(with_arch(tmp_path, wrong))
    message = caught.value.message
    assert message.endswith(f"vector_add.task.yaml: arch: '{wrong}' is not a CUDA architecture nvcc builds for "
                            "(e.g. sm_90, sm_90a, sm_100a)")
    assert (caught.value.hint == f"did you mean '{meant}'?") if meant else caught.value.hint is None


@pytest.mark.parametrize("wrong", [90, ["sm_90a"], None])
def test_arch_is_a_name_not_a_number_or_list(tmp_path, wrong):
    with pytest.raises(InputError, match=r"vector_add.task.yaml: arch: "):
        load_task(with_arch(tmp_path, wrong))


def test_the_schema_lists_exactly_the_archs_the_loader_knows():
    schema = json.loads((REPO / "skillbase" / "schemas" / "task.schema.json").read_text())
    assert tuple(schema["properties"]["arch"]["enum"]) == ARCHS
