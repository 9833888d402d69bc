"""Bounded, paginated Lark history reconciliation (docs/design.md §3): pure range planning in
`planning`, the I/O in `runner`, target selection in `targets`."""
