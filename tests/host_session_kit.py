"""What the CPU tests of the harness session share (test_case_reuse.py, test_reference_on_device.py): a
small matmul task whose reference each test names, its empty launcher, and a numpy stand-in for
harness.device.Device."""

from __future__ import annotations

import types

import numpy as np

# A task spec without its `reference`: each test adds the python reference it studies.
MATMUL_SPEC = {
    "launcher": "mm",
    "args": [
        {"name": "A", "dtype": "f32", "shape": ["M", "K"], "role": "in"},
        {"name": "B", "dtype": "f32", "shape": ["K", "N"], "role": "in"},
        {"name": "C", "dtype": "f32", "shape": ["M", "N"], "role": "out"},
        {"name": "M", "dtype": "i32", "value": "M"},
        {"name": "N", "dtype": "i32", "value": "N"},
        {"name": "K", "dtype": "i32", "value": "K"},
    ],
    "sizes": {"presets": {"default": {"M": 32, "N": 24, "K": 16}}, "scored": ["default"],
              "irregular": {"M": 31, "N": 23, "K": 15}},
    "work": {"flops": "2*M*N*K", "bytes": "4*(M*K + K*N + M*N)"},
}
MATMUL_CU = 'extern "C" void mm(const float* A, const float* B, float* C, int M, int N, int K) {}\n'


class FakeDevice:
    """A numpy stand-in for harness.device.Device: the 'device' arrays are numpy arrays, an upload is a
    copy, a memset writes every byte; `room` is what `mem_available` reports."""

    room = 1 << 40

    def __init__(self, index: int = 0):
        self.index = index
        self.cp = types.SimpleNamespace(ndarray=np.ndarray, asarray=lambda a: np.array(a, copy=True),
                                        asnumpy=lambda a: np.array(a, copy=True), empty=np.empty,
                                        cuda=types.SimpleNamespace(Stream=lambda **_: None))

    def limits(self):
        return {}

    def memset(self, array, byte: int) -> None:
        array.reshape(-1).view(np.uint8)[...] = byte

    def sync(self) -> None:
        pass

    def mem_available(self) -> int:
        return self.room
