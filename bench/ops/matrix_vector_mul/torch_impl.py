"""matrix_vector_mul: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.mv.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def matrix_vector_mul(A, x, y, M, N):
    torch.mv(A, x, out=y)
