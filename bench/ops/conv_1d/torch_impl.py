"""conv_1d: the PyTorch implementation (eager; the bench also runs it through torch.compile).

F.conv1d with 'same' zero padding (cross-correlation, cuDNN underneath), TF32 off.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch
import torch.nn.functional as F

# FP32 math: torch lets cuDNN use TF32 by default, outside the task's FP32 tolerance.
torch.backends.cudnn.allow_tf32 = False


def conv_1d(x, w, y, n, K):
    y.copy_(F.conv1d(x.view(1, 1, n), w.view(1, 1, K), padding=K // 2).view(n))
