"""gelu: the PyTorch implementation (eager; the bench also runs it through torch.compile).

F.gelu, exact (erf) form.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch.nn.functional as F


def gelu(x, y, n):
    y.copy_(F.gelu(x))
