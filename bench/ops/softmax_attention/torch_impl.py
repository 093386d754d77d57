"""softmax_attention: the PyTorch implementation (eager; the bench also runs it through torch.compile).

F.scaled_dot_product_attention (non-causal, scale 1/sqrt(D); torch picks the backend).
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch.nn.functional as F


def softmax_attention(Q, K, V, O, BH, S, D):
    O.copy_(F.scaled_dot_product_attention(Q.unsqueeze(0), K.unsqueeze(0), V.unsqueeze(0))[0])
