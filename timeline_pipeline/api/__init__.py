"""The workspace timeline HTTP API, mounted into `timeline-pipeline serve` by http/app.py.

See `router` for how the resource routers (`routers/`) are mounted, `auth` and `gate` for the
bearer tokens; keyset paging's cursors are the web core's (web/cursors.py). Nothing is imported
here, so that the routers can import the API's modules in any order.
"""
