"""spmv_csr: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.sparse CSR tensor over the given arrays (indices as torch needs them), then a sparse-dense
product (cuSPARSE underneath).
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def spmv_csr(rowptr, colind, vals, x, y, M, R):
    A = torch.sparse_csr_tensor(rowptr, colind, vals, (M, M))
    y.copy_(torch.mv(A, x))
