"""swiglu: the PyTorch implementation (eager; the bench also runs it through torch.compile).

F.silu(gate) * up.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch
import torch.nn.functional as F


def swiglu(gate, up, out, M, N):
    torch.mul(F.silu(gate), up, out=out)
