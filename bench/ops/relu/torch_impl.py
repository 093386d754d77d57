"""relu: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.relu.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def relu(x, y, n):
    torch.clamp_min(x, 0, out=y)
