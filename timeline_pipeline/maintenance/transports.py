"""The driver talking to the job service in the same process (the Dagster job), with the
listener's replies, so the driver's rules are the same as over HTTP (`http_client`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from timeline_pipeline.db.engine import DatabaseUnavailable
from timeline_pipeline.domain.errors import Refused
from timeline_pipeline.maintenance.driver import Reply, TransportError
from timeline_pipeline.maintenance.errors import MaintenanceError
from timeline_pipeline.maintenance.limits import parse_limits
from timeline_pipeline.maintenance.routes import refusal_body, refusal_status
from timeline_pipeline.maintenance.service import UNATTRIBUTED, JobService, job_json


class ServiceTransport:
    """The job service called directly, its refusals turned into the listener's replies;
    `actor` is who the transitions are audited as (a Dagster run: `dagster:<run id>`), as the
    listener reads it from the driver's header (docs/maintenance.md, "Who did it")."""

    def __init__(self, service: JobService, *, actor: str = UNATTRIBUTED) -> None:
        self._service = service
        self._actor = actor

    def get(self, job_id: str) -> Reply:
        return self._answer(lambda: job_json(self._service.get(job_id)))

    def post(
        self, job_id: str, action: str, body: Mapping[str, Any], *, timeout: float | None = None
    ) -> Reply:
        """`timeout` is ignored: in process, the answer cannot be lost on the way."""
        options = body.get("options")
        limits = parse_limits(options) if isinstance(options, Mapping) else None

        def act() -> dict[str, Any]:
            revision = body.get("revision")
            if not isinstance(revision, int):
                raise MaintenanceError("revision must be an integer")
            return job_json(
                self._service.act(
                    job_id, action, revision=revision, limits=limits, actor=self._actor
                )
            )

        return self._answer(act)

    @staticmethod
    def _answer(call: Any) -> Reply:
        try:
            return Reply(200, call())
        except Refused as exc:
            return Reply(refusal_status(exc), refusal_body(exc))
        except DatabaseUnavailable:
            raise TransportError("database unavailable") from None
