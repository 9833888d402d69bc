"""The timeline API routes (mounted by `timeline-pipeline serve`).

* `GET  /api/workspaces/{id}/timeline`: entries (status filter, keyset pages) with their
  evidence ids and Lark links, and the summary.
* `GET  /api/workspaces/{id}/evidence`: evidence in (occurred_at, id) order; keyset pages
  through an opaque signed `after` cursor; `limit` capped; body `{"items", "next_cursor"}`.
* Curation: `POST .../entries` (add), `GET|PATCH .../entries/{entry_id}` (read, edit),
  `POST .../entries/{entry_id}/{confirm,hide,restore}`, `GET|PUT .../summary`.
  Every change names the revision it was based on (`revision` in the body or the ETag in
  `If-Match`); a mismatch is 409 and nothing changes.
* `GET /api/openapi.json` (and `/api/docs`): the schema of these routes, the contract.

Handlers are plain `def`: they run in the thread pool, where blocking database calls belong.

No `from __future__ import annotations`: FastAPI reads the annotations of the handlers, some of
which name dependencies built inside `api_router`, at route definition time.
"""

from datetime import datetime
from typing import Annotated, Any, Final

from fastapi import APIRouter, Body, Depends, Header, Path, Query, Request, Response, status
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.routing import APIRoute
from pydantic import WithJsonSchema
from sqlalchemy import Engine

from timeline_pipeline.api.auth import workspace_guard
from timeline_pipeline.api.cursors import CursorCodec, InvalidCursor
from timeline_pipeline.api.cursors import cursor_secret as secret_from_setting
from timeline_pipeline.api.errors import (
    ERROR_RESPONSES,
    ProblemResponse,
    curation_errors,
    database_errors,
    problem,
    problem_body,
)
from timeline_pipeline.api.gate import gated_route_class
from timeline_pipeline.api.lifecycle_routes import add_lifecycle_routes
from timeline_pipeline.api.models import (
    MAX_ID,
    EntryCreate,
    EntryEdit,
    EntryOut,
    EntryStatus,
    ErrorOut,
    EvidenceItemOut,
    EvidenceLinkOut,
    EvidencePage,
    RevisionIn,
    SummaryIn,
    SummaryOut,
    TimelineOut,
)
from timeline_pipeline.curation.errors import InvalidInput, StaleRevision
from timeline_pipeline.curation.links import evidence_link
from timeline_pipeline.curation.rules import (
    VISIBLE_STATUSES,
    Action,
    entry_etag_prefix,
    revision_from_if_match,
    summary_etag_prefix,
)
from timeline_pipeline.curation.service import CurationService, NewEntry
from timeline_pipeline.curation.timeline import EntryView, SummaryView
from timeline_pipeline.db.engine import connection
from timeline_pipeline.domain.evidence import EvidenceCursor
from timeline_pipeline.settings import Settings
from timeline_pipeline.store import evidence as evidence_store

__all__ = ["API_PREFIX", "MAX_LIMIT", "OPENAPI_PATH", "api_router"]

API_PREFIX: Final = "/api"
OPENAPI_PATH: Final = "/api/openapi.json"
MAX_LIMIT: Final = 500
DEFAULT_LIMIT: Final = 100
API_VERSION: Final = "1"
_ACTOR: Final = "api"

Responses = dict[int | str, dict[str, Any]]


def _doc(code: int, description: str) -> Responses:
    return {code: {"model": ErrorOut, "description": description}}


_DOC_404 = _doc(404, "No such entry in this workspace.")
_DOC_409 = _doc(409, "Stale revision/ETag, or an invalid transition.")
_DOC_428 = _doc(428, "Neither `revision` nor If-Match given.")
_DOC_400 = _doc(400, "Malformed, forged or foreign cursor.")

IfMatch = Annotated[
    str | None,
    # The pattern is documented, not enforced by FastAPI: a malformed tag is this API's 400.
    WithJsonSchema(
        {
            "type": "string",
            "maxLength": 300,
            "pattern": r'^(\*|"[A-Za-z0-9._-]{1,200}\.r[0-9]{1,10}")$',
        }
    ),
    Header(
        alias="If-Match",
        max_length=300,
        description="The entry's (or summary's) ETag, or `*`; alternative to `revision` in "
        "the body. One strong tag only: a weak or a list of tags is 400.",
    ),
]


CursorSchema = WithJsonSchema(
    {"type": "string", "maxLength": 200, "pattern": r"^[A-Za-z0-9_-]{1,150}\.[A-Za-z0-9_-]{22}$"}
)
Cursor = Query(
    max_length=200,
    description="`next_cursor` of the previous page, as given: a cursor is signed by the "
    "server, so one not issued for this listing of this workspace (or by a server with another "
    "TIMELINE_API_CURSOR_SECRET) is 400 `invalid_cursor`.",
)

_REVISION_RULE = (
    "Say which revision you are changing: `revision` in the body or the ETag in If-Match "
    "(`*` for any); with neither the answer is 428, with a stale one 409."
)


_HTTP_METHODS = frozenset(
    {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "QUERY"}
)


def _answer_other_methods(router: APIRouter) -> None:
    """A 405 naming every method of the resource, for any method it does not have.

    FastAPI makes one route per method, and Starlette's own 405 lists the methods of the first
    route whose path matched only. One more route per path takes every other method.
    """
    allowed: dict[str, set[str]] = {}
    for route in router.routes:
        if isinstance(route, APIRoute):
            allowed.setdefault(route.path, set()).update(route.methods or ())
    for path, methods in allowed.items():
        allow = ", ".join(sorted(methods))

        async def refuse(_request: Request, allow: str = allow) -> Response:
            body = problem_body("method_not_allowed", f"this resource allows {allow}")
            return ProblemResponse(body, 405, headers={"Allow": allow})

        others = sorted(_HTTP_METHODS - methods)
        router.add_route(path, refuse, methods=others, include_in_schema=False)


def _entry_out(view: EntryView) -> EntryOut:
    return EntryOut(
        id=view.id,
        occurred_at=view.occurred_at,
        title=view.title,
        detail=view.detail,
        category=view.category,
        source=view.source,
        status=view.status,
        human_edited=view.human_edited,
        revision=view.revision,
        etag=view.etag,
        evidence_ids=view.evidence_ids,
        links=[
            EvidenceLinkOut(
                evidence_id=link.evidence_id, occurred_at=link.occurred_at, url=link.url
            )
            for link in view.evidence
        ],
        created_at=view.created_at,
        updated_at=view.updated_at,
    )


def _summary_out(view: SummaryView | None) -> SummaryOut | None:
    if view is None:
        return None
    return SummaryOut(
        content=view.content,
        source=view.source,
        revision=view.revision,
        etag=view.etag,
        updated_at=view.updated_at,
    )


def _expected_revision(
    body_revision: int | None, if_match: str | None, etag_prefix: str, *, required: bool
) -> tuple[bool, int | None]:
    """(check, revision) from the body's `revision` and the If-Match header.

    Either names the revision the client saw; both must agree when both are given. `If-Match: *`
    alone asks for no check. Neither: 428 when `required`, else (True, None), which for the
    summary means "there was no summary".
    """
    header: int | None = None
    if if_match is not None:
        try:
            header = revision_from_if_match(if_match, etag_prefix)
        except InvalidInput as exc:
            raise problem(400, "invalid_if_match", str(exc)) from None
        except StaleRevision as exc:
            raise problem(409, exc.code, str(exc)) from None
    if header is not None and body_revision is not None and header != body_revision:
        raise problem(400, "invalid_if_match", "the body's revision and If-Match disagree")
    revision = body_revision if body_revision is not None else header
    if revision is not None:
        return True, revision
    if if_match is not None:  # `*`: any current revision
        return False, None
    if required:
        raise problem(
            status.HTTP_428_PRECONDITION_REQUIRED,
            "revision_required",
            "say which revision you are changing: `revision` in the body or If-Match",
        )
    return True, None


def api_router(
    engine: Engine, settings: Settings, *, cursor_secret: bytes | None = None
) -> APIRouter:
    """The API's routes over `engine`; include it in the `serve` app.

    `cursor_secret` signs evidence and timeline cursors; by default TIMELINE_API_CURSOR_SECRET
    or a random key per process (see api/cursors.py).
    """
    service = CurationService(engine)
    configured = settings.runtime.api_cursor_secret.get_secret_value()
    cursors = CursorCodec(cursor_secret or secret_from_setting(configured))
    authorized = workspace_guard()
    Workspace = Annotated[str, Depends(authorized)]
    router = APIRouter(
        prefix=API_PREFIX, responses=ERROR_RESPONSES, route_class=gated_route_class(engine)
    )
    schema_cache: dict[int, dict[str, Any]] = {}

    def decode(listing: str, workspace_id: str, after: str | None) -> tuple[datetime, int] | None:
        if after is None:
            return None
        try:
            return cursors.decode(listing, workspace_id, after)
        except InvalidCursor as exc:
            raise problem(400, "invalid_cursor", str(exc)) from None

    # --- reads -------------------------------------------------------------------------------

    @router.get(
        "/workspaces/{workspace_id}/timeline",
        response_model=TimelineOut,
        responses=_DOC_400,
        tags=["timeline"],
        summary="The curated timeline: entries with evidence links, and the summary",
    )
    def get_timeline(
        workspace_id: Workspace,
        status_: Annotated[
            list[EntryStatus] | None,
            Query(alias="status", description="Statuses to include; default draft, confirmed."),
        ] = None,
        after: Annotated[str | None, CursorSchema, Cursor] = None,
        limit: Annotated[
            int, Query(ge=1, description=f"Page size; values above {MAX_LIMIT} mean {MAX_LIMIT}.")
        ] = DEFAULT_LIMIT,
    ) -> TimelineOut:
        statuses = tuple(dict.fromkeys(status_ or VISIBLE_STATUSES))
        position = decode("timeline:" + ",".join(sorted(statuses)), workspace_id, after)
        with curation_errors():
            view = service.timeline(
                workspace_id, statuses=statuses, after=position, limit=min(limit, MAX_LIMIT)
            )
        next_cursor = (
            cursors.encode("timeline:" + ",".join(sorted(statuses)), workspace_id, *view.next_after)
            if view.next_after
            else None
        )
        return TimelineOut(
            workspace_id=workspace_id,
            statuses=list(view.statuses),
            entries=[_entry_out(e) for e in view.entries],
            summary=_summary_out(view.summary),
            next_cursor=next_cursor,
        )

    @router.get(
        "/workspaces/{workspace_id}/evidence",
        response_model=EvidencePage,
        responses=_DOC_400,
        tags=["evidence"],
        summary="Evidence rows in (occurred_at, id) order, by keyset pages",
    )
    def get_evidence(
        workspace_id: Workspace,
        after: Annotated[str | None, CursorSchema, Cursor] = None,
        limit: Annotated[
            int, Query(ge=1, description=f"Page size; values above {MAX_LIMIT} mean {MAX_LIMIT}.")
        ] = DEFAULT_LIMIT,
    ) -> EvidencePage:
        position = decode("evidence", workspace_id, after)
        size = min(limit, MAX_LIMIT)
        with database_errors(), connection(engine) as conn:
            rows = evidence_store.page(
                conn,
                workspace_id,
                after=EvidenceCursor(*position) if position else None,
                limit=size + 1,
            )
        more = len(rows) > size
        rows = rows[:size]
        items = [
            EvidenceItemOut(
                id=row.id,
                source=row.source,
                source_type=row.source_type,
                source_key=row.source_key,
                occurred_at=row.occurred_at,
                source_updated_at=row.source_updated_at,
                actor_id=row.actor_id,
                actor_display_name=row.actor_display_name,
                content=row.content,
                deleted=row.deleted,
                ai_eligible=row.ai_eligible,
                link=None
                if row.deleted
                else evidence_link(row.source, row.source_type, row.source_key),
            )
            for row in rows
        ]
        next_cursor = (
            cursors.encode("evidence", workspace_id, rows[-1].occurred_at, rows[-1].id)
            if more
            else None
        )
        return EvidencePage(items=items, next_cursor=next_cursor)

    @router.get(
        "/workspaces/{workspace_id}/entries/{entry_id}",
        response_model=EntryOut,
        responses=_DOC_404,
        tags=["curation"],
        summary="One entry, with its ETag",
    )
    def get_entry(
        workspace_id: Workspace,
        entry_id: Annotated[int, Path(ge=1, le=MAX_ID)],
        response: Response,
    ) -> EntryOut:
        with curation_errors():
            view = service.entry(workspace_id, entry_id)
        response.headers["ETag"] = view.etag
        return _entry_out(view)

    # --- curation ------------------------------------------------------------------------------

    def transition(
        action: Action,
        workspace_id: str,
        entry_id: int,
        body: RevisionIn | None,
        if_match: str | None,
        response: Response,
    ) -> EntryOut:
        check, revision = _expected_revision(
            body.revision if body else None,
            if_match,
            entry_etag_prefix(entry_id),
            required=True,
        )
        with curation_errors():
            view = service.transition(
                workspace_id,
                entry_id,
                action,
                expected_revision=revision if check else None,
                actor=_ACTOR,
            )
        response.headers["ETag"] = view.etag
        return _entry_out(view)

    for action in Action:
        _add_transition_route(router, action, transition, Workspace)

    @router.patch(
        "/workspaces/{workspace_id}/entries/{entry_id}",
        response_model=EntryOut,
        responses={**_DOC_404, **_DOC_409, **_DOC_428},
        tags=["curation"],
        summary="Edit an entry's title, detail, category or time (it becomes human-edited)",
        description=_REVISION_RULE,
    )
    def edit_entry(
        workspace_id: Workspace,
        entry_id: Annotated[int, Path(ge=1, le=MAX_ID)],
        body: EntryEdit,
        response: Response,
        if_match: IfMatch = None,
    ) -> EntryOut:
        check, revision = _expected_revision(
            body.revision, if_match, entry_etag_prefix(entry_id), required=True
        )
        changes = body.model_dump(exclude_unset=True, exclude={"revision"})
        if "category" in changes and changes["category"] is not None:
            changes["category"] = str(changes["category"])
        with curation_errors():
            view = service.edit(
                workspace_id,
                entry_id,
                changes,
                expected_revision=revision if check else None,
                actor=_ACTOR,
            )
        response.headers["ETag"] = view.etag
        return _entry_out(view)

    @router.post(
        "/workspaces/{workspace_id}/entries",
        response_model=EntryOut,
        status_code=status.HTTP_201_CREATED,
        tags=["curation"],
        summary="Add a curator's own entry (source human, confirmed)",
    )
    def add_entry(workspace_id: Workspace, body: EntryCreate, response: Response) -> EntryOut:
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
                actor=_ACTOR,
            )
        response.headers["ETag"] = view.etag
        response.headers["Location"] = f"{API_PREFIX}/workspaces/{workspace_id}/entries/{view.id}"
        return _entry_out(view)

    @router.get(
        "/workspaces/{workspace_id}/summary",
        response_model=SummaryOut,
        responses=_doc(404, "No summary yet."),
        tags=["curation"],
        summary="The workspace summary, with its ETag",
    )
    def get_summary(workspace_id: Workspace, response: Response) -> SummaryOut:
        with curation_errors():
            view = service.summary(workspace_id)
        response.headers["ETag"] = view.etag
        out = _summary_out(view)
        assert out is not None
        return out

    @router.put(
        "/workspaces/{workspace_id}/summary",
        response_model=SummaryOut,
        responses=_DOC_409,
        tags=["curation"],
        summary="Write the human summary (never overwritten automatically afterwards)",
    )
    def put_summary(
        workspace_id: Workspace, body: SummaryIn, response: Response, if_match: IfMatch = None
    ) -> SummaryOut:
        check, revision = _expected_revision(
            body.revision, if_match, summary_etag_prefix(workspace_id), required=False
        )
        with curation_errors():
            view = service.write_summary(
                workspace_id,
                body.content,
                expected_revision=revision,
                check=check,
                actor=_ACTOR,
            )
        response.headers["ETag"] = view.etag
        out = _summary_out(view)
        assert out is not None
        return out

    # --- the contract ---------------------------------------------------------------------------

    add_lifecycle_routes(router, engine)

    @router.get("/openapi.json", include_in_schema=False)
    def openapi(request: Request) -> JSONResponse:
        key = id(request.app)
        if key not in schema_cache:
            # The whole app's schema, narrowed to this API: the paths as actually mounted.
            schema = get_openapi(
                title="timeline-pipeline API",
                version=API_VERSION,
                description="The curated incident timeline of a workspace, with its evidence.",
                routes=request.app.routes,
            )
            schema["paths"] = {
                path: item
                for path, item in schema.get("paths", {}).items()
                if path.startswith(API_PREFIX + "/")
            }
            schema_cache[key] = schema
        return JSONResponse(schema_cache[key])

    @router.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=OPENAPI_PATH, title="timeline-pipeline API")

    _answer_other_methods(router)
    return router


def _add_transition_route(router: APIRouter, action: Action, handler: Any, workspace: Any) -> None:
    """One POST route per status action, sharing the handler (FastAPI needs real signatures)."""

    def route(
        workspace_id: workspace,
        entry_id: Annotated[int, Path(ge=1, le=MAX_ID)],
        response: Response,
        if_match: IfMatch = None,
        body: Annotated[RevisionIn | None, Body()] = None,
    ) -> EntryOut:
        result: EntryOut = handler(action, workspace_id, entry_id, body, if_match, response)
        return result

    router.add_api_route(
        f"/workspaces/{{workspace_id}}/entries/{{entry_id}}/{action.value}",
        route,
        methods=["POST"],
        response_model=EntryOut,
        responses={**_DOC_404, **_DOC_409, **_DOC_428},
        tags=["curation"],
        name=f"{action.value}_entry",
        summary=f"{action.value.capitalize()} an entry",
        description=_REVISION_RULE,
    )
