"""Bearer-token authorization for `/api/workspaces/{workspace_id}/...`.

Tokens are scoped to one workspace and stored hashed (store/api_tokens.py). The check runs
before anything else of the request is looked at, its body included (api/gate.py), so that a
caller without a valid token learns nothing, not even whether a workspace or an entry exists,
and costs the server no body: no or an unknown or revoked token is 401 with a
`WWW-Authenticate: Bearer` challenge, a valid token of another workspace is 403, and neither
reads any timeline data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Final

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from sqlalchemy import Engine

from timeline_pipeline.api.errors import database_errors
from timeline_pipeline.db.engine import connection
from timeline_pipeline.store import api_tokens

__all__ = [
    "AUTHORIZED_STATE",
    "SCOPES_STATE",
    "TOKEN_STATE",
    "AuthorizedWorkspace",
    "RequestActor",
    "check_token",
    "request_actor",
    "workspace_guard",
]

AUTHORIZED_STATE: Final = "api_authorized_workspace"
"""Where the gate leaves the workspace the request's token was checked for."""
SCOPES_STATE: Final = "api_token_scopes"
"""Where the gate leaves the scopes of the request's token."""
TOKEN_STATE: Final = "api_token_id"  # noqa: S105 - a state attribute name, not a secret
"""Where the gate leaves the id of the request's token: who acts, for the audit trail."""
_READ_METHODS: Final = frozenset({"GET", "HEAD"})

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="WorkspaceToken",
    description="A workspace token from `timeline-pipeline token create --workspace W`.",
)


def _refuse(code: int, reason: str, message: str) -> HTTPException:
    headers = {"WWW-Authenticate": "Bearer"} if code == status.HTTP_401_UNAUTHORIZED else None
    return HTTPException(code, detail={"code": reason, "message": message}, headers=headers)


def check_token(
    engine: Engine, authorization: str | None, workspace_id: str
) -> HTTPException | None:
    """The refusal for this Authorization header on this workspace, or None when it may pass.

    A missing or non-Bearer header is refused without touching the database."""
    refusal, _scopes = check_token_scopes(engine, authorization, workspace_id)
    return refusal


def check_token_scopes(
    engine: Engine, authorization: str | None, workspace_id: str
) -> tuple[HTTPException | None, frozenset[str]]:
    """Like `check_token`, with the scopes of a token that may pass."""
    refusal, grant = check_token_grant(engine, authorization, workspace_id)
    return refusal, grant.scopes if grant is not None else frozenset()


def check_token_grant(
    engine: Engine, authorization: str | None, workspace_id: str
) -> tuple[HTTPException | None, api_tokens.Grant | None]:
    """Like `check_token`, with the grant (scopes and token id) of a token that may pass."""
    scheme, token = get_authorization_scheme_param(authorization)
    if not authorization or scheme.lower() != "bearer" or not token:
        return (
            _refuse(401, "unauthenticated", "send Authorization: Bearer <workspace token>"),
            None,
        )
    try:
        with database_errors(), connection(engine) as conn:
            verdict = api_tokens.authorize_scoped(conn, token, workspace_id)
    except HTTPException as unavailable:
        return unavailable, None
    if verdict is None:
        return _refuse(401, "invalid_token", "the token is unknown or revoked"), None
    if verdict is False or verdict is True:
        return _refuse(403, "forbidden", "the token is not valid for this workspace"), None
    return None, verdict


def request_actor(request: Request) -> str:
    """Who makes this API request, for the audit trail: `token:<id>` of the token the gate
    checked (docs/design.md and docs/lifecycle.md, "Who did it"). A request the gate did not
    pass has no token and names no one: it is refused, never recorded as a bare `api`."""
    token_id = getattr(request.state, TOKEN_STATE, None)
    if not token_id:
        raise _refuse(401, "unauthenticated", "send Authorization: Bearer <workspace token>")
    return f"token:{token_id}"


def workspace_guard(scope: str | None = None) -> Callable[..., str]:
    """A dependency returning the path's workspace id once the gate let its token pass and the
    token holds the route's scope: `scope`, or by default `timeline:read` for reads and
    `timeline:curate` for changes. A token without it is 403 `insufficient_scope`.

    It declares the bearer scheme, so the schema documents it; the check itself ran before the
    body was read (api/gate.py). A route reached without the gate is refused."""

    def authorized_workspace(
        workspace_id: str,
        request: Request,
        _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> str:
        if getattr(request.state, AUTHORIZED_STATE, None) != workspace_id:
            raise _refuse(401, "unauthenticated", "send Authorization: Bearer <workspace token>")
        needed = scope or (
            api_tokens.SCOPE_TIMELINE_READ
            if request.method in _READ_METHODS
            else api_tokens.SCOPE_TIMELINE_CURATE
        )
        if needed not in getattr(request.state, SCOPES_STATE, frozenset()):
            raise _refuse(403, "insufficient_scope", f"the token lacks the scope {needed}")
        return workspace_id

    return authorized_workspace


AuthorizedWorkspace = Annotated[str, Depends(workspace_guard())]
"""The path's workspace id, once the API's gate let its bearer token pass."""
RequestActor = Annotated[str, Depends(request_actor)]
"""Who a change through the API is audited as: `token:<id>` of the request's token."""
