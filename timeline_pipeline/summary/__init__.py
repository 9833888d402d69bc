"""The workspace summary (docs/design.md §8): when to regenerate it, from what, and how.

`policy` decides (pure), `deterministic` and `claude` write the text, `runner` applies the
policy to the database: at most one attempt per completed window, never over a human summary,
and only hidden-free input.
"""
