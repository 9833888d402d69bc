"""One module per table, the only place with its SQL (docs/design.md, "Layers").

Each store owns its table: it reads and writes it, declares the table's lifecycle descriptor and,
where the table holds a copy of message text, its content lineage beside it, so that the
lifecycle registry and the recall and hold gates find every table from here (docs/lifecycle.md).
"""
