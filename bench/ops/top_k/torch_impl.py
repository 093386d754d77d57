"""top_k: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.topk (largest, sorted), values only.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def top_k(x, values, B, N, K):
    values.copy_(torch.topk(x, K, dim=1).values)
