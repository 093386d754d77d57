"""rope: the PyTorch implementation (eager; the bench also runs it through torch.compile).

rotate-half RoPE written with torch ops (torch has no fused RoPE).
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def rope(x, cos_t, sin_t, out, Tk, H, D):
    h = D // 2
    c, s = cos_t[:, None, :], sin_t[:, None, :]
    x1, x2 = x[..., :h], x[..., h:]
    torch.sub(x1 * c, x2 * s, out=out[..., :h])
    torch.add(x2 * c, x1 * s, out=out[..., h:])
