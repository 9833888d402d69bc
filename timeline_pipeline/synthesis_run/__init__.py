"""Running one synthesis window: claim, read, chunk, synthesize, commit, finish (seed 000 §12)."""
