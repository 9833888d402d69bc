"""`GET /healthz` (the database answers) and `GET /metrics` (Prometheus text of this app).

No `from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from timeline_pipeline.db.engine import DatabaseUnavailable, connection
from timeline_pipeline.web.deps import EngineDep, MetricsDep
from timeline_pipeline.web.responses import SafeJSONResponse

router = APIRouter()


@router.get("/healthz")
def healthz(engine: EngineDep) -> Response:
    try:
        with connection(engine) as conn:
            conn.execute(text("SELECT 1"))
    except (DatabaseUnavailable, PoolTimeoutError):
        return SafeJSONResponse({"status": "unavailable", "database": "down"}, status_code=503)
    return SafeJSONResponse({"status": "ok", "database": "ok"})


@router.get("/metrics")
def prometheus_metrics(metrics: MetricsDep) -> Response:
    return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)
