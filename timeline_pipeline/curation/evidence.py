"""Reading a workspace's evidence for the API: keyset pages in (occurred_at, id) order.

The route asks this service, not the store, so that the HTTP layer only translates (docs/http.md,
"Timeline API"); the page is read one row past `limit` to learn whether another page follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine

from timeline_pipeline.db.engine import connection
from timeline_pipeline.domain.evidence import EvidenceCursor, EvidenceRow
from timeline_pipeline.store import evidence as evidence_store

__all__ = ["EvidencePageView", "EvidenceService"]


@dataclass(frozen=True)
class EvidencePageView:
    rows: list[EvidenceRow]
    next_after: tuple[datetime, int] | None
    """(occurred_at, id) of the last row when another page follows, else None."""


class EvidenceService:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def page(
        self, workspace_id: str, *, after: tuple[datetime, int] | None, limit: int
    ) -> EvidencePageView:
        """Up to `limit` rows after `after`; raises DatabaseUnavailable when the database is."""
        with connection(self._engine) as conn:
            rows = evidence_store.page(
                conn,
                workspace_id,
                after=EvidenceCursor(*after) if after else None,
                limit=limit + 1,
            )
        more = len(rows) > limit
        rows = rows[:limit]
        return EvidencePageView(rows, (rows[-1].occurred_at, rows[-1].id) if more else None)

    def rows(self, workspace_id: str, ids: list[int]) -> list[EvidenceRow]:
        """The workspace's rows among `ids` (one bounded page of an entry's evidence, for the
        timeline page); rows of other workspaces are never returned."""
        with connection(self._engine) as conn:
            return evidence_store.get_many(conn, workspace_id, ids)
