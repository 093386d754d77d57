"""square_matrix_mul: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.matmul.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def square_matrix_mul(A, B, C, N):
    torch.matmul(A, B, out=C)
