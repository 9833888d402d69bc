"""Curation on top of the entries and summaries tables: the one place the API and the CLI
change the timeline through.

Each operation is one transaction that validates first, then writes with a compare-and-set on
the revision the caller saw, then records an audit event; any refusal raises before the
commit, so a refused request changes nothing. A curator's change is what automation must
respect afterwards: a confirmed or hidden entry is no longer a draft, an edited one is
`human_edited`, an added one is `source=human`, and synthesis leaves all of them as they are
(store/entries.py); a written summary is `source=human` and the summary runner never replaces
it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine

from timeline_pipeline.curation.errors import EntryNotFound, SummaryNotFound
from timeline_pipeline.curation.rules import (
    DETAIL_MAX_CHARS,
    MAX_EVIDENCE_PER_ENTRY,
    SUMMARY_MAX_CHARS,
    TITLE_MAX_CHARS,
    Action,
    check_category,
    check_revision,
    check_text,
    check_time,
    target_status,
)
from timeline_pipeline.curation.timeline import (
    EntryView,
    SummaryView,
    TimelineView,
    entry_views,
    summary_view,
)
from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.domain.entries import ENTRY_STATUSES, VISIBLE_STATUSES, EntryRow, EntryStatus
from timeline_pipeline.domain.errors import InvalidInput, StaleRevision
from timeline_pipeline.store import (
    audit,
    entries,
    evidence,
    follow_up_tasks,
    summaries,
    workspaces,
)
from timeline_pipeline.synthesis.contract import Category

__all__ = ["MAX_PAGE", "CurationService", "NewEntry", "TimelineOutline"]

MAX_PAGE = 500
MAX_TIMELINE_ENTRIES = 10_000
"""What `full_timeline` reads at most (the CLI table and the export): far above any incident."""


@dataclass(frozen=True, slots=True)
class TimelineOutline:
    """A page of entries as stored (with their evidence ids) and the summary."""

    workspace_id: str
    statuses: tuple[str, ...]
    entries: list[EntryRow]
    summary: SummaryView | None
    next_after: tuple[datetime, int] | None
    title: str | None


@dataclass(frozen=True, slots=True)
class NewEntry:
    """A curator's own entry, before validation."""

    occurred_at: datetime
    title: str
    category: str
    detail: str | None = None
    evidence_ids: Sequence[int] = ()
    fingerprint: str | None = None
    """A key that makes the entry unique in its workspace (a pin's message: docs/pins.md)."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _check_statuses(statuses: Sequence[str]) -> tuple[EntryStatus, ...]:
    chosen = tuple(dict.fromkeys(statuses))
    unknown = [s for s in chosen if s not in ENTRY_STATUSES]
    if unknown or not chosen:
        raise InvalidInput(
            f"unknown status {unknown[0]!r}: expected {', '.join(ENTRY_STATUSES)}"
            if unknown
            else "give at least one status"
        )
    return tuple(EntryStatus(s) for s in chosen)


@dataclass(frozen=True, slots=True)
class _EntryPage:
    rows: list[EntryRow]
    summary: SummaryView | None
    next_after: tuple[datetime, int] | None
    title: str | None


def _entry_page(
    conn: Connection,
    workspace_id: str,
    chosen: tuple[EntryStatus, ...],
    after: tuple[datetime, int] | None,
    limit: int,
) -> _EntryPage:
    """One keyset page of a workspace's entries with its summary: the timeline and its outline
    must page the same way (docs/timeline-page.md)."""
    limit = max(1, min(limit, MAX_PAGE))
    workspace = workspaces.require(conn, workspace_id)
    rows = entries.list_for_workspace(
        conn, workspace_id, statuses=chosen, after=after, limit=limit + 1
    )
    more = len(rows) > limit
    rows = rows[:limit]
    summary = summary_view(summaries.get_summary(conn, workspace_id))
    next_after = (rows[-1].occurred_at, rows[-1].id) if more else None
    return _EntryPage(rows, summary, next_after, workspace.title)


class CurationService:
    """Reads and curates one workspace's timeline; `actor` names who acts, for the audit."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Callable[[], datetime] = _utcnow,
        follow_up_tasks: bool = False,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.follow_up_tasks = follow_up_tasks
        """`followUpTasksEnabled`: a confirmed next step queues its Lark task in the same
        transaction (docs/report.md, "Follow-ups as Lark tasks")."""

    # --- reads ---------------------------------------------------------------------------------

    def timeline(
        self,
        workspace_id: str,
        *,
        statuses: Sequence[str] = VISIBLE_STATUSES,
        after: tuple[datetime, int] | None = None,
        limit: int = 200,
    ) -> TimelineView:
        """One keyset page of entries in (occurred_at, id) order, with the summary."""
        chosen = _check_statuses(statuses)
        with connection(self.engine) as conn:
            page = _entry_page(conn, workspace_id, chosen, after, limit)
            views = entry_views(conn, page.rows)
        return TimelineView(workspace_id, chosen, views, page.summary, page.next_after, page.title)

    def timeline_outline(
        self,
        workspace_id: str,
        *,
        statuses: Sequence[str] = VISIBLE_STATUSES,
        after: tuple[datetime, int] | None = None,
        limit: int = 200,
    ) -> TimelineOutline:
        """The same page as `timeline` with each entry's evidence ids only, not the evidence
        rows behind them: what the timeline page lists before an entry is opened
        (docs/timeline-page.md), one query fewer and no join over the evidence table."""
        chosen = _check_statuses(statuses)
        with connection(self.engine) as conn:
            page = _entry_page(conn, workspace_id, chosen, after, limit)
        return TimelineOutline(
            workspace_id, chosen, page.rows, page.summary, page.next_after, page.title
        )

    def full_timeline(
        self, workspace_id: str, *, statuses: Sequence[str] = VISIBLE_STATUSES
    ) -> TimelineView:
        """Every entry with the given statuses (bounded), for the CLI table and the export."""
        page = self.timeline(workspace_id, statuses=statuses, limit=MAX_PAGE)
        collected = list(page.entries)
        while page.next_after is not None and len(collected) < MAX_TIMELINE_ENTRIES:
            page = self.timeline(
                workspace_id, statuses=statuses, after=page.next_after, limit=MAX_PAGE
            )
            collected.extend(page.entries)
        return TimelineView(
            workspace_id, page.statuses, collected, page.summary, page.next_after, page.title
        )

    def entry(self, workspace_id: str, entry_id: int) -> EntryView:
        with connection(self.engine) as conn:
            return self._view(conn, self._require_entry(conn, workspace_id, entry_id))

    def summary(self, workspace_id: str) -> SummaryView:
        with connection(self.engine) as conn:
            workspaces.require(conn, workspace_id)
            found = summary_view(summaries.get_summary(conn, workspace_id))
        if found is None:
            raise SummaryNotFound(f"workspace {workspace_id!r} has no summary yet")
        return found

    # --- entry changes ---------------------------------------------------------------------------

    def transition(
        self,
        workspace_id: str,
        entry_id: int,
        action: Action,
        *,
        expected_revision: int | None,
        actor: str,
        conn: Connection | None = None,
    ) -> EntryView:
        """Confirm, hide or restore; `expected_revision` None means "whatever is current".

        With `conn`, the change joins the caller's transaction (a review-card decision is applied
        in the same transaction that marks it applied: docs/review-cards.md).
        """
        now = self.clock()
        with self._writing(conn) as conn:
            entry = self._require_entry(conn, workspace_id, entry_id)
            check_revision(expected_revision, entry.revision)
            status = target_status(action, entry.status, entry.source)
            changed = entries.set_status(conn, entry, status, now=now)
            if changed is None:
                raise self._stale(conn, entry)
            self._audit(conn, actor, f"entry.{action.value}", changed, now, {"from": entry.status})
            self._follow_up(conn, changed, actor, now)
            return self._view(conn, changed)

    def edit(
        self,
        workspace_id: str,
        entry_id: int,
        changes: Mapping[str, Any],
        *,
        expected_revision: int | None,
        actor: str,
        conn: Connection | None = None,
    ) -> EntryView:
        """Rewrite title, detail (None or "" clears it), category or time; marks human_edited.

        With `conn`, the change joins the caller's transaction, as in `transition`.
        """
        values = self._edit_values(changes)
        now = self.clock()
        with self._writing(conn) as conn:
            entry = self._require_entry(conn, workspace_id, entry_id)
            check_revision(expected_revision, entry.revision)
            changed = entries.edit_entry(conn, entry, values, now=now)
            if changed is None:
                raise self._stale(conn, entry)
            self._audit(conn, actor, "entry.edit", changed, now, {"fields": sorted(values)})
            return self._view(conn, changed)

    def add(
        self, workspace_id: str, new: NewEntry, *, actor: str, conn: Connection | None = None
    ) -> EntryView:
        """A curator's own entry: `source=human`, confirmed, optionally bound to evidence.

        With `conn`, the entry joins the caller's transaction, as in `transition`."""
        occurred_at = check_time(new.occurred_at)
        title = check_text(new.title, "title", TITLE_MAX_CHARS, multiline=False)
        category = check_category(new.category)
        detail = self._detail(new.detail)
        evidence_ids = sorted(set(new.evidence_ids))
        if len(evidence_ids) > MAX_EVIDENCE_PER_ENTRY:
            raise InvalidInput(f"at most {MAX_EVIDENCE_PER_ENTRY} evidence ids per entry")
        now = self.clock()
        with self._writing(conn) as conn:
            workspaces.require(conn, workspace_id)
            known = evidence.existing_evidence_ids(conn, workspace_id, evidence_ids)
            missing = [i for i in evidence_ids if i not in known]
            if missing:
                raise InvalidInput(
                    f"evidence ids {missing[:10]} are not evidence of workspace {workspace_id!r}"
                )
            created = entries.create_human_entry(
                conn,
                workspace_id,
                occurred_at=occurred_at,
                title=title,
                category=category,
                detail=detail,
                fingerprint=new.fingerprint,
                evidence_ids=evidence_ids,
                now=now,
            )
            self._audit(conn, actor, "entry.add", created, now, {"evidence": len(evidence_ids)})
            self._follow_up(conn, created, actor, now)
            return self._view(conn, created)

    # --- summary -------------------------------------------------------------------------------

    def write_summary(
        self,
        workspace_id: str,
        content: str,
        *,
        expected_revision: int | None,
        check: bool,
        actor: str,
    ) -> SummaryView:
        """Write the human summary.

        With `check`, `expected_revision` is the revision the curator saw, None meaning "there
        was no summary"; without it (an operator at the CLI) the current summary is replaced
        whatever its revision.
        """
        text = check_text(content, "summary", SUMMARY_MAX_CHARS)
        now = self.clock()
        with transaction(self.engine) as conn:
            workspaces.require(conn, workspace_id)
            current = summaries.get_summary(conn, workspace_id)
            held = current.revision if current else None
            if check and expected_revision != held:
                raise StaleRevision(
                    f"the summary is at revision {held}, not {expected_revision}: re-read it"
                    if held is not None
                    else "there is no summary yet: write it without a revision",
                    held,
                )
            written = summaries.write_human_summary(
                conn,
                workspace_id,
                text,
                expected_revision=held,
                now=now,
                metadata={"written_by": actor[:128], "replaced_source": current.source}
                if current
                else {"written_by": actor[:128]},
            )
            if written is None:
                latest = summaries.get_summary(conn, workspace_id)
                raise StaleRevision(
                    "the summary changed while it was written: re-read it",
                    latest.revision if latest else None,
                )
            audit.audit_curation(
                conn,
                actor=actor,
                action="summary.write",
                subject_type="workspace_summary",
                subject_id=workspace_id,
                workspace_id=workspace_id,
                details={"revision": written.revision, "replaced": held},
                now=now,
            )
            view = summary_view(written)
            assert view is not None
            return view

    # --- helpers -------------------------------------------------------------------------------

    def _follow_up(self, conn: Connection, entry: EntryRow, actor: str, now: datetime) -> None:
        """Queue the Lark task of a next step a curator just confirmed (once per entry)."""
        if (
            self.follow_up_tasks
            and entry.status == EntryStatus.CONFIRMED
            and entry.category == Category.NEXT_STEP
        ):
            follow_up_tasks.request(
                conn, workspace_id=entry.workspace_id, entry_id=entry.id, actor=actor, now=now
            )

    @contextmanager
    def _writing(self, conn: Connection | None) -> Iterator[Connection]:
        """A transaction of its own, or a savepoint in the caller's: a refusal changes nothing
        either way."""
        if conn is None:
            with transaction(self.engine) as own:
                yield own
            return
        with conn.begin_nested():
            yield conn

    def _require_entry(self, conn: Connection, workspace_id: str, entry_id: int) -> EntryRow:
        workspaces.require(conn, workspace_id)
        entry = entries.get_entry(conn, workspace_id, entry_id)
        if entry is None:
            raise EntryNotFound(f"entry {entry_id} does not exist in workspace {workspace_id!r}")
        return entry

    @staticmethod
    def _view(conn: Connection, row: EntryRow) -> EntryView:
        return entry_views(conn, [row])[0]

    @staticmethod
    def _stale(conn: Connection, entry: EntryRow) -> StaleRevision:
        latest = entries.get(conn, entry.id)
        current = latest.revision if latest else None
        return StaleRevision(
            f"entry {entry.id} changed while the change was applied (now at revision "
            f"{current}): re-read it and apply the change again",
            current,
        )

    @staticmethod
    def _detail(value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        return check_text(value, "detail", DETAIL_MAX_CHARS)

    def _edit_values(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        allowed = ("title", "detail", "category", "occurred_at")
        unknown = sorted(set(changes) - set(allowed))
        if unknown:
            raise InvalidInput(f"cannot edit {', '.join(unknown)}: only {', '.join(allowed)}")
        if not changes:
            raise InvalidInput("nothing to change: give a title, detail, category or time")
        values: dict[str, Any] = {}
        if "title" in changes:
            if changes["title"] is None:
                raise InvalidInput("title cannot be removed")
            values["title"] = check_text(
                changes["title"], "title", TITLE_MAX_CHARS, multiline=False
            )
        if "detail" in changes:
            values["detail"] = self._detail(changes["detail"])
        if "category" in changes:
            if changes["category"] is None:
                raise InvalidInput("category cannot be removed")
            values["category"] = check_category(str(changes["category"]))
        if "occurred_at" in changes:
            if changes["occurred_at"] is None:
                raise InvalidInput("occurred_at cannot be removed")
            values["occurred_at"] = check_time(changes["occurred_at"])
        return values

    @staticmethod
    def _audit(
        conn: Connection,
        actor: str,
        action: str,
        entry: EntryRow,
        now: datetime,
        details: Mapping[str, Any],
    ) -> None:
        audit.audit_curation(
            conn,
            actor=actor,
            action=action,
            subject_type="timeline_entry",
            subject_id=str(entry.id),
            workspace_id=entry.workspace_id,
            details={"revision": entry.revision, "status": entry.status, **details},
            now=now,
        )
