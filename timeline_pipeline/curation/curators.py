"""Who may decide a workspace's drafts from a review card (docs/review-cards.md).

The card callback counts an action only from a curator of the card's workspace, so adding or
removing one changes who can confirm what the chat sees: each change is audited, with ids only,
in the change's own transaction. The CLI (`workspace add-curator`, `workspace remove-curator`)
and the API (`/api/workspaces/{id}/curators`) both come through here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine

from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.store import audit, workspaces

__all__ = ["CuratorService"]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class CuratorService:
    def __init__(self, engine: Engine, *, clock: Callable[[], datetime] = _utcnow) -> None:
        self._engine = engine
        self._clock = clock

    def curators(self, workspace_id: str) -> list[str]:
        """The workspace's curators' open_ids, sorted; WorkspaceNotFound for no workspace."""
        with connection(self._engine) as conn:
            workspaces.require(conn, workspace_id)
            return workspaces.curators_of(conn, workspace_id)

    def add(self, workspace_id: str, open_id: str, *, actor: str) -> bool:
        """True when `open_id` became a curator (False: already one, nothing written)."""
        return self._change(workspaces.add_curator, "curator.add", workspace_id, open_id, actor)

    def remove(self, workspace_id: str, open_id: str, *, actor: str) -> bool:
        """True when `open_id` was a curator and no longer is."""
        return self._change(
            workspaces.remove_curator, "curator.remove", workspace_id, open_id, actor
        )

    def _change(
        self,
        change: Callable[[Connection, str, str], bool],
        action: str,
        workspace_id: str,
        open_id: str,
        actor: str,
    ) -> bool:
        """Applies `change` and, when it changed anything, audits it in the same transaction."""
        with transaction(self._engine) as conn:
            changed = change(conn, workspace_id, open_id)
            if changed:
                audit.audit_curation(
                    conn,
                    actor=actor,
                    action=action,
                    subject_type="curator",
                    subject_id=open_id,
                    workspace_id=workspace_id,
                    details={},
                    now=self._clock(),
                )
        return changed
