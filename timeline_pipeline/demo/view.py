"""The demo's printable timeline: entries in time order with their messages' links."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from timeline_pipeline.curation.links import evidence_link
from timeline_pipeline.store import entries, evidence, summaries


def demo_timeline(conn: Connection, workspace_id: str) -> dict[str, Any]:
    rows = entries.list_for_workspace(conn, workspace_id, limit=1000)
    bound_ids = sorted({i for row in rows for i in row.evidence_ids})
    by_id = {e.id: e for e in evidence.get_many(conn, workspace_id, bound_ids)}
    items: list[dict[str, Any]] = []
    for row in rows:
        cited = [by_id[i] for i in row.evidence_ids if i in by_id]
        items.append(
            {
                "id": row.id,
                "occurred_at": row.occurred_at.isoformat(),
                "category": row.category,
                "title": row.title,
                "status": row.status,
                "source": row.source,
                "evidence": [
                    {
                        "id": e.id,
                        "source_key": e.source_key,
                        "occurred_at": e.occurred_at.isoformat(),
                        "actor": e.actor_display_name or e.actor_id,
                        "link": evidence_link(e.source, e.source_type, e.source_key),
                    }
                    for e in cited
                ],
            }
        )
    summary = summaries.get_summary(conn, workspace_id)
    return {"entries": items, "summary": summary.content if summary is not None else None}
