"""Reading CUDA sources: the one tree-sitter reader and the `extern "C"` launcher signatures."""
