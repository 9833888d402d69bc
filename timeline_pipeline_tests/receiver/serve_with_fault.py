"""`timeline-pipeline <args>` with one extra route that raises, for the log privacy test.

Run as `python -m timeline_pipeline_tests.receiver.serve_with_fault serve ...`: the real CLI,
the real logging configuration and the real uvicorn, plus `GET /test-only/raise`, added here
(not in the product) by wrapping the app factory that `serve` calls. The route raises an
exception whose message quotes the request's Authorization header, with that header and the
query string in its frame's locals: the worst an unforeseen bug could do.
"""

from __future__ import annotations

import sys
from typing import Any, Final

from fastapi import FastAPI, Request

from timeline_pipeline.cli.main import cli
from timeline_pipeline.http import app as http_app

RAISE_PATH: Final = "/test-only/raise"
_create_app = http_app.create_app


class InjectedFault(RuntimeError):
    pass


def _with_fault(*args: Any, **kwargs: Any) -> FastAPI:
    application = _create_app(*args, **kwargs)

    async def raise_with_payload(request: Request) -> None:
        authorization = request.headers.get("authorization", "")
        query = request.url.query
        raise InjectedFault(f"failed for {authorization} {query}")

    application.add_route(RAISE_PATH, raise_with_payload, methods=["GET"])
    return application


if __name__ == "__main__":
    http_app.create_app = _with_fault
    sys.exit(cli(sys.argv[1:], prog_name="timeline-pipeline"))
