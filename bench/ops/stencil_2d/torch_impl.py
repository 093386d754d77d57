"""stencil_2d: the PyTorch implementation (eager; the bench also runs it through torch.compile).

interior by shifted slices; the boundary copied.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""


def stencil_2d(in_, out, ny, nx):
    out.copy_(in_)
    c = in_[1:-1, 1:-1]
    out[1:-1, 1:-1] = 0.2 * (c + in_[:-2, 1:-1] + in_[2:, 1:-1] + in_[1:-1, :-2] + in_[1:-1, 2:])
