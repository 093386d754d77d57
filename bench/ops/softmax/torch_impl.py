"""softmax: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.softmax over the rows.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def softmax(x, y, R, C):
    torch.softmax(x, dim=1, out=y)
