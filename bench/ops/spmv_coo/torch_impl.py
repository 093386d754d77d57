"""spmv_coo: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.sparse COO (int64 indices) tensor over the given arrays (indices as torch needs them), then a
sparse-dense product (cuSPARSE underneath).
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def spmv_coo(rows, cols, vals, x, y, M, R):
    A = torch.sparse_coo_tensor(torch.stack((rows, cols)).long(), vals, (M, M))
    y.copy_(torch.mv(A, x))
