"""The workspace timeline HTTP API, mounted into `timeline-pipeline serve`.

    app.include_router(api_router(engine, settings))

See `routes` for the endpoints, `auth` for the bearer tokens and `cursors` for keyset paging.
"""

from timeline_pipeline.api.routes import API_PREFIX, OPENAPI_PATH, api_router

__all__ = ["API_PREFIX", "OPENAPI_PATH", "api_router"]
