"""What the API's routers share: paths, paging bounds, documented parameters and error docs,
and the revision rule (docs/http.md, "Timeline API").

No `from __future__ import annotations`: FastAPI reads these annotations at route definition.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Final

from fastapi import Depends, Header, Query, status
from pydantic import WithJsonSchema

from timeline_pipeline.api.errors import problem
from timeline_pipeline.api.schemas import ErrorOut
from timeline_pipeline.curation.rules import revision_from_if_match
from timeline_pipeline.domain.errors import InvalidInput, StaleRevision
from timeline_pipeline.web.cursors import CursorCodec, InvalidCursor
from timeline_pipeline.web.deps import CursorsDep

API_PREFIX: Final = "/api"
OPENAPI_PATH: Final = "/api/openapi.json"
MAX_LIMIT: Final = 500
DEFAULT_LIMIT: Final = 100
API_VERSION: Final = "1"

Responses = dict[int | str, dict[str, Any]]


def doc(code: int, description: str) -> Responses:
    return {code: {"model": ErrorOut, "description": description}}


DOC_404 = doc(404, "No such entry in this workspace.")
DOC_409 = doc(409, "Stale revision/ETag, or an invalid transition.")
DOC_428 = doc(428, "Neither `revision` nor If-Match given.")
DOC_400 = doc(400, "Malformed, forged or foreign cursor.")

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
After = Annotated[str | None, CursorSchema, Cursor]
Limit = Annotated[
    int, Query(ge=1, description=f"Page size; values above {MAX_LIMIT} mean {MAX_LIMIT}.")
]

REVISION_RULE: Final = (
    "Say which revision you are changing: `revision` in the body or the ETag in If-Match "
    "(`*` for any); with neither the answer is 428, with a stale one 409."
)


def decode_cursor(
    cursors: CursorCodec, listing: str, workspace_id: str, after: str | None
) -> tuple[datetime, int] | None:
    """The position an `after` cursor names; 400 `invalid_cursor` for one this server did not
    issue for this listing of this workspace."""
    if after is None:
        return None
    try:
        return cursors.decode(listing, workspace_id, after)
    except InvalidCursor as exc:
        raise problem(400, "invalid_cursor", str(exc)) from None


@dataclass(frozen=True, slots=True)
class KeysetPage:
    """The page of a listing a request asks for: the rows after its signed `after` cursor, at
    most `limit` of them (capped at MAX_LIMIT)."""

    cursors: CursorCodec
    after: str | None
    limit: int

    def position(self, listing: str, workspace_id: str) -> tuple[datetime, int] | None:
        """Where the page starts (`decode_cursor`): None for the first page."""
        return decode_cursor(self.cursors, listing, workspace_id, self.after)

    def next_cursor(
        self, listing: str, workspace_id: str, next_after: tuple[datetime, int] | None
    ) -> str | None:
        """The cursor of the page after this one, or None when this one is the last."""
        if next_after is None:
            return None
        return self.cursors.encode(listing, workspace_id, *next_after)


def keyset_page(
    cursors: CursorsDep, after: After = None, limit: Limit = DEFAULT_LIMIT
) -> KeysetPage:
    return KeysetPage(cursors, after, min(limit, MAX_LIMIT))


PageQuery = Annotated[KeysetPage, Depends(keyset_page)]
"""A listing's `after` and `limit` query parameters, with the codec of its cursors."""


def expected_revision(
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
