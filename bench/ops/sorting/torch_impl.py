"""sorting: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.sort (ascending), values only.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def sorting(x, y, work, n):
    y.copy_(torch.sort(x).values)
