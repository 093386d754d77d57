"""KernelBench problems as skillbase tasks (docs/kernelbench.md): import, spec derivation, scoring."""
