"""stencil_3d: the PyTorch implementation (eager; the bench also runs it through torch.compile).

interior by shifted slices; the boundary copied.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""


def stencil_3d(in_, out, nz, ny, nx):
    out.copy_(in_)
    c = in_[1:-1, 1:-1, 1:-1]
    six = (in_[:-2, 1:-1, 1:-1] + in_[2:, 1:-1, 1:-1] + in_[1:-1, :-2, 1:-1] + in_[1:-1, 2:, 1:-1]
           + in_[1:-1, 1:-1, :-2] + in_[1:-1, 1:-1, 2:])
    out[1:-1, 1:-1, 1:-1] = 0.4 * c + 0.1 * six
