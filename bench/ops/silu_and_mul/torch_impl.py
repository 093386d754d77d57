"""silu_and_mul: the PyTorch implementation (eager; the bench also runs it through torch.compile).

F.silu of the gate half times the up half.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch
import torch.nn.functional as F


def silu_and_mul(x, out, M, N):
    torch.mul(F.silu(x[:, :N]), x[:, N:], out=out)
