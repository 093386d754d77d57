"""hinge_loss: the PyTorch implementation (eager; the bench also runs it through torch.compile).

mean(clamp(1 - y * pred, min=0)) in FP32 (torch's hinge_embedding_loss is another loss).
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def hinge_loss(pred, y, out, partial, n):
    out.copy_(torch.clamp_min(1 - y.float() * pred.float(), 0).mean().reshape(1))
