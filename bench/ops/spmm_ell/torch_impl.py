"""spmm_ell: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch has no ELL format: a gather of B's rows by colind (padding, colind < 0, masked), products and
a sum over the R slots.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def spmm_ell(colind, vals, B, C, M, R, Nc):
    valid = (colind >= 0).unsqueeze(-1)
    gathered = B[colind.clamp_min(0).long()]                     # R x M x Nc
    C.copy_(torch.where(valid, vals.float().unsqueeze(-1) * gathered.float(), 0.0).sum(0))
