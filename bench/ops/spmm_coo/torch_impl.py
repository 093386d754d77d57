"""spmm_coo: the PyTorch implementation (eager; the bench also runs it through torch.compile).

scatter-add with torch ops: C.index_add_ of vals * B[cols] at rows; torch's own COO product is no
option here: its sparse COO tensors are coalesced before a product, which reads the merged nnz back
to the host (a synchronising launcher, which the harness refuses).
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""


def spmm_coo(rows, cols, vals, B, C, M, R, Nc):
    C.zero_().index_add_(0, rows, vals.unsqueeze(1) * B[cols])
