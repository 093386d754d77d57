"""sigmoid: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.sigmoid.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def sigmoid(x, y, n):
    torch.sigmoid(x, out=y)
