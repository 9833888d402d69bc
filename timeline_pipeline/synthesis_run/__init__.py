"""One synthesis window: claim, read, chunk, synthesize, commit, finish (docs/design.md §7)."""
