"""Legal-hold routes of the API (docs/lifecycle.md, "Legal holds").

* `POST /api/workspaces/{id}/lifecycle/holds`: place a hold; scope `lifecycle:hold:create`.
* `POST /api/workspaces/{id}/lifecycle/holds/{hold_id}/release`: release it; scope
  `lifecycle:hold:release`.

Create and release are separate scopes: a token with one is 403 `insufficient_scope` on the
other, and the timeline scopes give neither. Both need an `Idempotency-Key` header: the same key
with the same body answers the first result again, with another body 409. A release needs a
reason of at least 10 characters. Both write an audit event.

No `from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Final

from fastapi import APIRouter, Depends, Header, Path, Request, Response, status
from sqlalchemy import Connection, Engine

from timeline_pipeline.api.auth import request_actor, workspace_guard
from timeline_pipeline.api.errors import ERROR_RESPONSES, problem, workspace_errors
from timeline_pipeline.api.gate import GatedRoute
from timeline_pipeline.api.params import doc
from timeline_pipeline.api.schemas import HoldCreateIn, HoldOut, HoldReleaseIn
from timeline_pipeline.db.engine import transaction
from timeline_pipeline.domain.errors import Refused
from timeline_pipeline.lifecycle.holds import create_hold, release_hold
from timeline_pipeline.lifecycle.registry import load_registry
from timeline_pipeline.store import legal_holds
from timeline_pipeline.store.api_tokens import SCOPE_HOLD_CREATE, SCOPE_HOLD_RELEASE
from timeline_pipeline.store.legal_holds import HoldRow
from timeline_pipeline.web.deps import EngineDep

_KEY_PATTERN: Final = r"^[A-Za-z0-9._:-]{1,256}$"
IdempotencyKey = Annotated[
    str,
    Header(
        alias="Idempotency-Key",
        max_length=256,
        pattern=_KEY_PATTERN,
        description="Required (422 without it): the same key with the same body gives the "
        "first answer again, with another body 409.",
    ),
]
HoldId = Annotated[str, Path(max_length=64, pattern=r"^hold_[0-9a-f]{1,59}$")]


def _out(hold: HoldRow) -> HoldOut:
    """The hold's fields of the same names; the idempotency keys and hashes stay inside."""
    return HoldOut.model_validate(hold, from_attributes=True)


@contextmanager
def _lifecycle_change(engine: Engine) -> Iterator[Connection]:
    """A hold's change in one transaction; a refusal is its own status and code."""
    with workspace_errors(Refused), transaction(engine) as conn:
        yield conn


router = APIRouter(responses=ERROR_RESPONSES, route_class=GatedRoute)
Creator = Annotated[str, Depends(workspace_guard(SCOPE_HOLD_CREATE))]
Releaser = Annotated[str, Depends(workspace_guard(SCOPE_HOLD_RELEASE))]


@router.post(
    "/workspaces/{workspace_id}/lifecycle/holds",
    response_model=HoldOut,
    status_code=status.HTTP_201_CREATED,
    responses={
        **doc(404, "No such workspace."),
        **doc(409, "The Idempotency-Key was used with another body."),
        422: {
            **ERROR_RESPONSES[422],
            "description": "The body does not match the schema (a list of issues), or the "
            "descriptor has no workspace column, so the hold would hold nothing "
            "(`hold_holds_nothing`).",
        },
    },
    tags=["lifecycle"],
    summary="Place a legal hold (scope lifecycle:hold:create)",
)
def create_hold_route(
    request: Request,
    workspace_id: Creator,
    body: HoldCreateIn,
    response: Response,
    engine: EngineDep,
    idempotency_key: IdempotencyKey,
) -> HoldOut:
    with _lifecycle_change(engine) as conn:
        result = create_hold(
            conn,
            load_registry(),
            workspace_id=workspace_id,
            descriptor_key=body.descriptor_key,
            reason=body.reason,
            idempotency_key=idempotency_key,
            actor=request_actor(request),
            review_at=body.review_at,
        )
    if not result.changed:
        response.status_code = status.HTTP_200_OK
    return _out(result.hold)


@router.post(
    "/workspaces/{workspace_id}/lifecycle/holds/{hold_id}/release",
    response_model=HoldOut,
    responses={
        **doc(404, "No such hold in this workspace."),
        **doc(409, "Already released, or the Idempotency-Key was used with another body."),
    },
    tags=["lifecycle"],
    summary="Release a legal hold (scope lifecycle:hold:release)",
)
def release_hold_route(
    request: Request,
    workspace_id: Releaser,
    hold_id: HoldId,
    body: HoldReleaseIn,
    engine: EngineDep,
    idempotency_key: IdempotencyKey,
) -> HoldOut:
    with _lifecycle_change(engine) as conn:
        found = legal_holds.get(conn, hold_id)
        if found is None or found.workspace_id != workspace_id:
            raise problem(404, "hold_not_found", f"no hold {hold_id!r} in this workspace")
        result = release_hold(
            conn,
            hold_id=hold_id,
            reason=body.reason,
            idempotency_key=idempotency_key,
            actor=request_actor(request),
        )
    return _out(result.hold)
