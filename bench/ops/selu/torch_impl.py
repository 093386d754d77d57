"""selu: the PyTorch implementation (eager; the bench also runs it through torch.compile).

F.selu (the same SELU constants).
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch.nn.functional as F


def selu(x, y, n):
    y.copy_(F.selu(x))
