"""conv_2d: the PyTorch implementation (eager; the bench also runs it through torch.compile).

F.conv2d, stride 1, padding 1 (cuDNN underneath), TF32 off.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch
import torch.nn.functional as F

# FP32 math: torch lets cuDNN use TF32 by default, outside the task's FP32 tolerance.
torch.backends.cudnn.allow_tf32 = False


def conv_2d(x, w, y, Nb, Ci, H, W, Co):
    y.copy_(F.conv2d(x, w, padding=1))
