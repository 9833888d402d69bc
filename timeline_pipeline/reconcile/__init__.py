"""Bounded, paginated Lark history reconciliation (seed 000 §8): pure range planning in
`planning`, the I/O in `runner`, target selection in `targets`."""
