"""matrix_mul: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.matmul (FP32: TF32 off, torch's default for matmul; BF16: tensor cores, FP32 accumulation).
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def matrix_mul(A, B, C, M, N, K):
    torch.matmul(A, B, out=C)
