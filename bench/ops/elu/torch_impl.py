"""elu: the PyTorch implementation (eager; the bench also runs it through torch.compile).

F.elu.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch.nn.functional as F


def elu(x, y, n, alpha):
    y.copy_(F.elu(x, alpha))
