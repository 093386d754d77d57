"""reverse_array: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.flip.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def reverse_array(x, y, n):
    y.copy_(torch.flip(x, (0,)))
