"""Benchmarks: runnable with `python -m bench.<name>.run` from the repository root."""
