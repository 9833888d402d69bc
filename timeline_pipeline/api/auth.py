"""Bearer-token authorization for `/api/workspaces/{workspace_id}/...`.

Tokens are scoped to one workspace and stored hashed (store/api_tokens.py). The check runs
before anything else of the request is looked at, so that a caller without a valid token
learns nothing, not even whether a workspace or an entry exists: no or an unknown or revoked
token is 401 with a `WWW-Authenticate: Bearer` challenge, a valid token of another workspace
is 403, and neither reads any timeline data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, HTTPException, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import Engine

from timeline_pipeline.api.errors import database_errors
from timeline_pipeline.db.engine import connection
from timeline_pipeline.store import api_tokens

__all__ = ["workspace_guard"]

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="WorkspaceToken",
    description="A workspace token from `timeline-pipeline token create --workspace W`.",
)


def _refuse(code: int, reason: str, message: str) -> HTTPException:
    headers = {"WWW-Authenticate": "Bearer"} if code == status.HTTP_401_UNAUTHORIZED else None
    return HTTPException(code, detail={"code": reason, "message": message}, headers=headers)


def workspace_guard(engine: Engine) -> Callable[..., str]:
    """A dependency returning the path's workspace id once the bearer token may use it."""

    def authorized_workspace(
        workspace_id: str,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> str:
        if credentials is None:
            raise _refuse(401, "unauthenticated", "send Authorization: Bearer <workspace token>")
        with database_errors(), connection(engine) as conn:
            verdict = api_tokens.authorize(conn, credentials.credentials, workspace_id)
        if verdict is None:
            raise _refuse(401, "invalid_token", "the token is unknown or revoked")
        if verdict is False:
            raise _refuse(403, "forbidden", "the token is not valid for this workspace")
        return workspace_id

    return authorized_workspace
