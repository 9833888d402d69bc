"""Curation of entries: `POST .../entries` (add), `GET|PATCH .../entries/{entry_id}` (read,
edit), `POST .../entries/{entry_id}/{confirm,hide,restore}`.

Every change names the revision it was based on (`revision` in the body or the ETag in
`If-Match`); a mismatch is 409 with the entry as it is now (`detail.current`) and nothing
changes. Handlers are plain `def` (thread pool).
No `from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated

from fastapi import APIRouter, Body, HTTPException, Path, Response, status

from timeline_pipeline.api.auth import AuthorizedWorkspace, RequestActor
from timeline_pipeline.api.errors import ERROR_RESPONSES, curation_errors
from timeline_pipeline.api.gate import GatedRoute
from timeline_pipeline.api.params import (
    API_PREFIX,
    DOC_404,
    DOC_409,
    DOC_428,
    REVISION_RULE,
    IfMatch,
    expected_revision,
)
from timeline_pipeline.api.presenters import entry_out
from timeline_pipeline.api.schemas import MAX_ID, EntryCreate, EntryEdit, EntryOut, RevisionIn
from timeline_pipeline.curation.rules import Action, entry_etag_prefix
from timeline_pipeline.curation.service import CurationService, NewEntry
from timeline_pipeline.curation.timeline import EntryView
from timeline_pipeline.domain.errors import Refused
from timeline_pipeline.web.deps import CurationServiceDep

router = APIRouter(responses=ERROR_RESPONSES, route_class=GatedRoute)

EntryId = Annotated[int, Path(ge=1, le=MAX_ID)]


@contextmanager
def _current_on_conflict(
    service: CurationService, workspace_id: str, entry_id: int
) -> Iterator[None]:
    """A 409 (stale revision, a transition the entry's status no longer allows) carries the
    entry as it is now, read after the refusal."""
    try:
        yield
    except HTTPException as exc:
        if exc.status_code == 409 and isinstance(exc.detail, dict):
            try:
                current = entry_out(service.entry(workspace_id, entry_id))
            except Refused:
                raise exc from None
            exc.detail["current"] = current.model_dump(mode="json")
        raise


@router.get(
    "/workspaces/{workspace_id}/entries/{entry_id}",
    response_model=EntryOut,
    responses=DOC_404,
    tags=["curation"],
    summary="One entry, with its ETag",
)
def get_entry(
    workspace_id: AuthorizedWorkspace,
    entry_id: EntryId,
    response: Response,
    service: CurationServiceDep,
    actor: RequestActor,
) -> EntryOut:
    with curation_errors():
        view = service.entry(workspace_id, entry_id)
    return _with_etag(view, response)


def _with_etag(view: EntryView, response: Response) -> EntryOut:
    response.headers["ETag"] = view.etag
    return entry_out(view)


def _change(
    service: CurationService,
    workspace_id: str,
    entry_id: int,
    revision: int | None,
    if_match: str | None,
    response: Response,
    write: Callable[[int | None], EntryView],
) -> EntryOut:
    """A change based on a named revision (the body's or `If-Match`'s): `write` gets the one to
    check, and a 409 carries the entry as it is now."""
    check, expected = expected_revision(
        revision, if_match, entry_etag_prefix(entry_id), required=True
    )
    with _current_on_conflict(service, workspace_id, entry_id), curation_errors():
        view = write(expected if check else None)
    return _with_etag(view, response)


def _transition(
    service: CurationService,
    action: Action,
    workspace_id: str,
    entry_id: int,
    body: RevisionIn | None,
    if_match: str | None,
    response: Response,
    actor: str,
) -> EntryOut:
    return _change(
        service,
        workspace_id,
        entry_id,
        body.revision if body else None,
        if_match,
        response,
        lambda expected: service.transition(
            workspace_id, entry_id, action, expected_revision=expected, actor=actor
        ),
    )


def _add_transition_route(action: Action) -> None:
    """One POST route per status action, sharing the handler (FastAPI needs real signatures)."""

    def route(
        workspace_id: AuthorizedWorkspace,
        entry_id: EntryId,
        response: Response,
        service: CurationServiceDep,
        actor: RequestActor,
        if_match: IfMatch = None,
        body: Annotated[RevisionIn | None, Body()] = None,
    ) -> EntryOut:
        return _transition(service, action, workspace_id, entry_id, body, if_match, response, actor)

    router.add_api_route(
        f"/workspaces/{{workspace_id}}/entries/{{entry_id}}/{action.value}",
        route,
        methods=["POST"],
        response_model=EntryOut,
        responses={**DOC_404, **DOC_409, **DOC_428},
        tags=["curation"],
        name=f"{action.value}_entry",
        summary=f"{action.value.capitalize()} an entry",
        description=REVISION_RULE,
    )


for _action in Action:
    _add_transition_route(_action)


@router.patch(
    "/workspaces/{workspace_id}/entries/{entry_id}",
    response_model=EntryOut,
    responses={**DOC_404, **DOC_409, **DOC_428},
    tags=["curation"],
    summary="Edit an entry's title, detail, category or time (it becomes human-edited)",
    description=REVISION_RULE,
)
def edit_entry(
    workspace_id: AuthorizedWorkspace,
    entry_id: EntryId,
    body: EntryEdit,
    response: Response,
    service: CurationServiceDep,
    actor: RequestActor,
    if_match: IfMatch = None,
) -> EntryOut:
    changes = body.model_dump(exclude_unset=True, exclude={"revision"})
    if "category" in changes and changes["category"] is not None:
        changes["category"] = str(changes["category"])
    return _change(
        service,
        workspace_id,
        entry_id,
        body.revision,
        if_match,
        response,
        lambda expected: service.edit(
            workspace_id, entry_id, changes, expected_revision=expected, actor=actor
        ),
    )


@router.post(
    "/workspaces/{workspace_id}/entries",
    response_model=EntryOut,
    status_code=status.HTTP_201_CREATED,
    tags=["curation"],
    summary="Add a curator's own entry (source human, confirmed)",
)
def add_entry(
    workspace_id: AuthorizedWorkspace,
    body: EntryCreate,
    response: Response,
    service: CurationServiceDep,
    actor: RequestActor,
) -> EntryOut:
    with curation_errors():
        view = service.add(
            workspace_id,
            NewEntry(
                occurred_at=body.occurred_at,
                title=body.title,
                category=str(body.category),
                detail=body.detail,
                evidence_ids=body.evidence_ids,
            ),
            actor=actor,
        )
    response.headers["ETag"] = view.etag
    response.headers["Location"] = f"{API_PREFIX}/workspaces/{workspace_id}/entries/{view.id}"
    return entry_out(view)
