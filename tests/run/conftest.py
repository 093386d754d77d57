"""The run tests' shared fixture: `task`, the naive-GEMM fixture kernel in a temporary folder (tests/loop_kit.py)."""

from loop_kit import task  # noqa: F401  (a fixture: pytest finds it in this module)
