"""Optimization runs: the loop, its session wiring, judges, appliers' contracts and the run store."""
