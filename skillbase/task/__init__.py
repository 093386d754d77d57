"""Task specs: what the harness needs to call, feed, check and score a kernel (K.cu + K.task.yaml).

    from skillbase.task import load_task
    spec = load_task("sgemm.cu")              # finds sgemm.task.yaml beside it, validates everything
    resolved = spec.resolve("default")        # shapes, scalar values, work (flops, bytes)
    inputs = spec.make_inputs("default", seed=0)
    rtol, atol = spec.tolerance_for("C", ref=reference_output)
"""

from skillbase.task.dtypes import DTYPES, bf16_bits_to_float32, float32_to_bf16_bits
from skillbase.task.expr import Expr, ExprError, parse_expr
from skillbase.task.spec import (
                                 DEFAULT_TOLERANCES,
                                 ArgSpec,
                                 ResolvedArg,
                                 ResolvedTask,
                                 TaskSpec,
                                 Tolerance,
                                 load_task,
                                 spec_path_for,
)

__all__ = ["load_task", "TaskSpec", "ArgSpec", "ResolvedTask", "ResolvedArg", "Tolerance", "DEFAULT_TOLERANCES",
           "spec_path_for", "parse_expr", "Expr", "ExprError", "DTYPES", "float32_to_bf16_bits",
           "bf16_bits_to_float32"]
