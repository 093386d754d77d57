"""merge_attn_states: the PyTorch implementation (eager; the bench also runs it through torch.compile).

the log-sum-exp merge written with torch ops, in FP32.
Called by the harness like the launcher (skillbase.harness.torch_launcher): tensors over the
harness's buffers for the pointer arguments, numbers for the scalars; outputs written in place.
"""

import torch


def merge_attn_states(prefix_out, prefix_lse, suffix_out, suffix_lse, out, out_lse, Tk, H, D):
    m = torch.maximum(prefix_lse, suffix_lse)
    pe, se = torch.exp(prefix_lse - m), torch.exp(suffix_lse - m)
    total = pe + se
    wp, ws = (pe / total).t().unsqueeze(-1), (se / total).t().unsqueeze(-1)     # Tk x H x 1
    out.copy_(prefix_out.float() * wp + suffix_out.float() * ws)
    torch.add(m, torch.log(total), out=out_lse)
