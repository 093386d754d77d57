"""spmv_csc: the PyTorch implementation (eager; the bench also runs it through torch.compile).

scatter-add with torch ops: each nonzero's column from colptr (repeat_interleave with the known nnz,
so no host read), then y.index_add_ of vals * x[col] at its row; torch's own CSC product is no
option here: its CSC support is beta and converts to CSR before a product.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def spmv_csc(colptr, rowind, vals, x, y, acc, M, R):
    cols = torch.repeat_interleave(torch.arange(M, device=x.device), torch.diff(colptr), output_size=rowind.numel())
    y.zero_().index_add_(0, rowind, vals * x[cols])
