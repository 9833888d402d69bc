"""The web core: what every router of the product shares, below the routers and the apps that
compose them (docs/design.md, "Layers"): the one JSON response class (`responses`), bounded
body reading (`body`), signed paging cursors (`cursors`) and the request dependencies (`deps`).
"""
