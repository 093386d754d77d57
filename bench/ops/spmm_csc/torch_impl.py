"""spmm_csc: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.sparse CSC tensor over the given arrays (indices as torch needs them), then a sparse-dense
product (cuSPARSE underneath).
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def spmm_csc(colptr, rowind, vals, B, C, acc, M, R, Nc):
    A = torch.sparse_csc_tensor(colptr, rowind, vals, (M, M))
    C.copy_(torch.mm(A, B))
