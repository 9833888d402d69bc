"""The workspace timeline HTTP API, mounted into `timeline-pipeline serve` by http/app.py.

See `router` for how the resource routers (`routers/`) are mounted, `auth` and `gate` for the
bearer tokens and `cursors` for keyset paging. Nothing is imported here, so that the
dependencies (http/deps.py) and the routers can import the API's modules in any order.
"""
