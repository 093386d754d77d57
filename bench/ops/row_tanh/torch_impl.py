"""row_tanh: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.tanh.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def row_tanh(x, y, M, N):
    torch.tanh(x, out=y)
