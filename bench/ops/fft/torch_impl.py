"""fft: the PyTorch implementation (eager; the bench also runs it through torch.compile).

torch.fft.fft over the last axis of the interleaved complex data (cuFFT underneath).
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def fft(x, y, work, batch, n):
    y.copy_(torch.view_as_real(torch.fft.fft(torch.view_as_complex(x), dim=-1)))
