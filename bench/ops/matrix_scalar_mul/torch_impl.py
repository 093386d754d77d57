"""matrix_scalar_mul: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.mul by the scalar.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def matrix_scalar_mul(a, b, alpha, M, N):
    torch.mul(a, alpha, out=b)
