"""dot_product: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.dot in FP32 (the BF16 variant's inputs upcast, like the baseline's math).
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def dot_product(a, b, out, partial, n):
    out.copy_(torch.dot(a.float(), b.float()).reshape(1))
