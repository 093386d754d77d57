"""triangle_attention: the PyTorch implementation (eager; the bench also runs it through torch.compile).

F.scaled_dot_product_attention per (h, i) with bias[h] as an additive mask.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch.nn.functional as F


def triangle_attention(Q, K, V, bias, O, H, N, D):
    O.copy_(F.scaled_dot_product_attention(Q, K, V, attn_mask=bias.unsqueeze(1)))
