"""matrix_copy: the PyTorch implementation (eager; the bench also runs it through torch.compile).

Tensor.copy_.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""


def matrix_copy(a, b, M, N):
    b.copy_(a)
