"""Who is looking at the timeline page: sign-in links redeemed into sessions, sessions looked up
and ended, and how a workspace is read (its `Presentation`: language and zone, docs/i18n.md)
(docs/timeline-page.md). The routes ask this service, not the stores, so that the HTTP layer
only translates."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import Engine

from timeline_pipeline.curation.presentation import presentation_of
from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import ui_sessions, workspaces
from timeline_pipeline.store.ui_sessions import IssuedSession, SessionInfo

__all__ = ["PageAccess"]


class PageAccess:
    def __init__(
        self,
        engine: Engine,
        *,
        session_ttl: timedelta,
        clock: Callable[[], datetime],
        settings: LarkTimelineSettings,
    ) -> None:
        self._engine = engine
        self._ttl = session_ttl
        self._clock = clock
        self._settings = settings

    def link_workspace(self, token: str) -> str | None:
        """The workspace of a sign-in link that still works, without spending it."""
        with connection(self._engine) as conn:
            return ui_sessions.link_workspace(conn, token, now=self._clock())

    def redeem(self, token: str) -> IssuedSession | None:
        """A new session for an unused, unexpired link (now used), else None; one transaction."""
        now = self._clock()
        with transaction(self._engine) as conn:
            redeemed = ui_sessions.redeem_link(conn, token, now=now)
            if redeemed is None:
                return None
            link_id, workspace_id = redeemed
            return ui_sessions.open_session(
                conn, workspace_id, link_id=link_id, now=now, ttl=self._ttl
            )

    def session(self, secret: str) -> SessionInfo | None:
        with connection(self._engine) as conn:
            return ui_sessions.session_for(conn, secret, now=self._clock())

    def sign_out(self, secret: str) -> None:
        with transaction(self._engine) as conn:
            ui_sessions.end_session(conn, secret, now=self._clock())

    def workspace(self, workspace_id: str) -> Workspace:
        """Raises WorkspaceNotFound."""
        with connection(self._engine) as conn:
            return workspaces.require(conn, workspace_id)

    def presentation(self, workspace_id: str) -> Presentation:
        """The workspace's language and zone, by the one seam every surface asks
        (`curation.presentation`). Raises WorkspaceNotFound."""
        with connection(self._engine) as conn:
            return presentation_of(conn, workspace_id, self._settings)
