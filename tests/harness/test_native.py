"""ctypes calling convention of the launcher, on a real shared library built with gcc (no GPU needed)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from dataclasses import dataclass

import numpy as np
import pytest

from skillbase.harness.native import LoadError, NativeLauncher, argtypes_for, scalar_to_ctypes

SOURCE = r"""
#include <stdint.h>
const void* got_a; void* got_b; int32_t got_n; double got_alpha; uint16_t got_h; int64_t got_big; float got_f;
int calls;
void launch(const void* a, void* b, int32_t n, double alpha, uint16_t h, int64_t big, float f) {
    got_a = a; got_b = b; got_n = n; got_alpha = alpha; got_h = h; got_big = big; got_f = f; ++calls;
}
"""


@dataclass
class Arg:
    name: str
    dtype: str
    pointer: bool


ARGS = [Arg("a", "f32", True), Arg("b", "f32", True), Arg("n", "i32", False), Arg("alpha", "f64", False),
        Arg("h", "f16", False), Arg("big", "i64", False), Arg("f", "f32", False)]


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    folder = tmp_path_factory.mktemp("native")
    (folder / "k.c").write_text(SOURCE)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / "libk.so"), str(folder / "k.c")], check=True)
    return folder / "libk.so"


def test_arguments_arrive_typed(library):
    launcher = NativeLauncher(library, "launch", ARGS)
    args = launcher.arguments({"a": 0x7F0000001000, "b": 0x7F0000002000},
                              {"n": 1000003, "alpha": 0.25, "h": 1.5, "big": 1 << 40, "f": -2.5})
    launcher(args)
    lib = launcher.lib
    assert ctypes.c_void_p.in_dll(lib, "got_a").value == 0x7F0000001000
    assert ctypes.c_void_p.in_dll(lib, "got_b").value == 0x7F0000002000
    assert ctypes.c_int32.in_dll(lib, "got_n").value == 1000003
    assert ctypes.c_double.in_dll(lib, "got_alpha").value == 0.25
    assert ctypes.c_uint16.in_dll(lib, "got_h").value == int(np.array([1.5], np.float16).view(np.uint16)[0])
    assert ctypes.c_int64.in_dll(lib, "got_big").value == 1 << 40
    assert ctypes.c_float.in_dll(lib, "got_f").value == -2.5
    assert launcher.calls == 1
    launcher.close()


def test_each_load_is_a_private_instance(library):
    """Reference and candidate never share static state, even when built from one source."""
    one, two = NativeLauncher(library, "launch", ARGS, "reference"), NativeLauncher(library, "launch", ARGS)
    one(one.arguments({"a": 1, "b": 2}, {"n": 1, "alpha": 0, "h": 0, "big": 0, "f": 0}))
    assert ctypes.c_int.in_dll(one.lib, "calls").value == 1
    assert ctypes.c_int.in_dll(two.lib, "calls").value == 0
    one.close()
    two.close()


def test_missing_launcher_is_a_load_error(library):
    with pytest.raises(LoadError, match="no extern \"C\" function 'sgemm'"):
        NativeLauncher(library, "sgemm", ARGS)


def test_unresolved_symbols_fail_at_load(tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    (tmp_path / "u.c").write_text("int cublasCreate_v2(void*); void launch(void){ cublasCreate_v2(0); }")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "libu.so"), str(tmp_path / "u.c")], check=True)
    with pytest.raises(LoadError, match="cublasCreate_v2"):
        NativeLauncher(tmp_path / "libu.so", "launch", [])


def test_ctypes_mapping():
    assert argtypes_for([Arg("x", "bf16", True), Arg("y", "u8", False)]) == [ctypes.c_void_p, ctypes.c_uint8]
    assert scalar_to_ctypes(1.0, "bf16").value == 0x3F80
