"""matrix_power: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.linalg.matrix_power (repeated squaring: 3 GEMMs for p = 5, where the baseline does 4).
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def matrix_power(A, out, tmp, N, p):
    out.copy_(torch.linalg.matrix_power(A, p))
