"""Synthesis windows: keys and partition keys, discovery planning, and the discovery tick."""
