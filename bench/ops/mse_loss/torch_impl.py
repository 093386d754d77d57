"""mse_loss: the PyTorch implementation (eager; the bench also runs it through torch.compile).

F.mse_loss (mean reduction) in FP32.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch.nn.functional as F


def mse_loss(pred, target, out, partial, n):
    out.copy_(F.mse_loss(pred.float(), target.float()).reshape(1))
