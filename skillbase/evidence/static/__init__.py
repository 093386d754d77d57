"""Static features of a CUDA source (tree-sitter), per kernel: what the rules read from the code."""

from skillbase.evidence.static.features import static_features

__all__ = ["static_features"]
