"""The demo's printable timeline (entries in time order with their messages' links) and its
incident report (the newest revision and its Lark document), read back from the database."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from timeline_pipeline.curation.links import evidence_link
from timeline_pipeline.store import entries, evidence, incident_reports, report_documents, summaries


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


def demo_report(conn: Connection, workspace_id: str) -> dict[str, Any] | None:
    """The newest report revision as the demo shows it: its milestones, durations and counts
    (the stored JSON of `report/render.py`, times in UTC), how many entries each section holds,
    the follow-ups' owners, its Markdown and its Lark document's link. None before a build."""
    report = incident_reports.latest(conn, workspace_id)
    if report is None:
        return None
    content = report.content
    sections = content.get("sections") or []
    owners: list[str] = []
    for section in sections:
        if section.get("key") == "follow_ups":
            for item in section.get("items") or []:
                owners.extend(o for o in item.get("owners") or [] if o not in owners)
    document = report_documents.get(conn, workspace_id)
    return {
        "revision": report.revision,
        "withdrawn": report.withdrawn,
        "status": content.get("status"),
        "drafts_pending": bool(content.get("drafts_pending")),
        "milestones": content.get("milestones") or {},
        "durations": content.get("durations") or {},
        "counts": content.get("counts") or {},
        "sections": {
            str(section.get("key")): len(section.get("items") or []) for section in sections
        },
        "owners": owners,
        "markdown": report.markdown,
        "document_url": document.document_url if document is not None else None,
        "document_revision": document.written_revision if document is not None else None,
    }
