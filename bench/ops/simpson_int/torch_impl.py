"""simpson_int: the PyTorch implementation (eager; the bench also runs it through torch.compile).

Simpson weights and the integrand on torch.arange, then a sum.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def simpson_int(out, partial, n, a, b):
    h = (b - a) / n
    i = torch.arange(n + 1, device=out.device)
    x = a + h * i.float()
    # The end weights by where(), not `w[0] = 1.0`: on the H200 that setitem made the launcher wait for the
    # stream (the harness rejects a launcher that synchronises), as a host-to-device scalar copy would.
    w = torch.where((i == 0) | (i == n), 1.0, torch.where(i % 2 == 1, 4.0, 2.0))
    out.copy_((h / 3 * torch.sum(w * torch.exp(-x * x) * torch.cos(3 * x))).reshape(1))
