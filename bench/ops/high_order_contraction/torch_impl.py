"""high_order_contraction: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.einsum('bjik,jkl->bil') (a permute and a GEMM).
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def high_order_contraction(X, W, C, Bt, J, I, Kd, L):
    C.copy_(torch.einsum("bjik,jkl->bil", X, W))
