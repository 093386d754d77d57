"""matrix_transpose: the PyTorch implementation (eager; the bench also runs it through torch.compile).

a contiguous copy of A.t().
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""


def matrix_transpose(A, B, M, N):
    B.copy_(A.t())
