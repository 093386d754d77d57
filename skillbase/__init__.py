"""skillbase: profile a CUDA kernel, map the evidence to expert optimization skills, apply and verify them."""

__version__ = "0.1.0"
