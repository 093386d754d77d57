"""spmv_ell: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch has no ELL format: a gather of x by colind (padding, colind < 0, masked), products and a sum
over the R slots.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def spmv_ell(colind, vals, x, y, M, R):
    valid = colind >= 0
    gathered = x[colind.clamp_min(0).long()]                     # R x M
    y.copy_(torch.where(valid, vals.float() * gathered.float(), 0.0).sum(0))
