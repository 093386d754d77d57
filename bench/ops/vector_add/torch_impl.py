"""vector_add: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.add into c.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def vector_add(a, b, c, n):
    torch.add(a, b, out=c)
