"""spmv_coo: the PyTorch implementation (eager; the bench also runs it through torch.compile).

scatter-add with torch ops: y.index_add_ of vals * x[cols] at rows; torch's own COO product is no
option here: its sparse COO tensors are coalesced before a product, which reads the merged nnz back
to the host (a synchronising launcher, which the harness refuses).
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""


def spmv_coo(rows, cols, vals, x, y, M, R):
    y.zero_().index_add_(0, rows, vals * x[cols])
