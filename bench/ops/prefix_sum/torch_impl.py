"""prefix_sum: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.cumsum with an FP32 accumulator.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def prefix_sum(x, y, tile_sums, n):
    y.copy_(torch.cumsum(x, 0, dtype=torch.float32))
