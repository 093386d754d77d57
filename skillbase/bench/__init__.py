"""The bench suite: discovery of operators, running them on GPUs, results, scores and reports."""
