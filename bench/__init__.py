"""Benchmarks: `python -m bench` runs them all into one table; `python -m bench.<name>.run` one."""
