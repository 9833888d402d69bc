"""The preview of a versioned rerun: what a `window_rerun` dry-run runs and records per window
(docs/maintenance.md, "Preview a rerun").

For each window the rerun would create, the preview synthesizes the window as the rerun's own
run will (the shared core `synthesis_run.core`: the same evidence, context, chunk bounds,
synthesizer and attempts) and decides each proposal's fate with the write path's own pure
duplicate-draft policy (`synthesis_run.draft_matching`): added, changed (old and new title
and category), unchanged, or left alone because a person owns the entry. It plans against the
timeline overlaid with what its earlier windows would have written (the scratch images of
`store.rerun_previews`), since the rerun's later windows see the drafts of its earlier ones;
`window_rerun` hands it the windows in the order the sensor will run them, oldest first across
chats (`rerun_walk`), so that "earlier" means what it will mean in the apply.
Entries the window's evidence already supports are listed as `prior` rows: the machine drafts
the new version does not restate anywhere in the preview are reported `dropped` (the rerun
never deletes: they stay on the timeline until a curator hides them), and the ones a person
confirmed, edited, hid or wrote are reported as left alone.

Everything is written to the scratch table only, in the job's batch transaction; the report is
built from it when the walk ends and kept in the job's result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import Connection

from timeline_pipeline.db.synthesis_slots import hold_synthesis_slot
from timeline_pipeline.domain import entries as domain_entries
from timeline_pipeline.domain.entries import DraftWrite, EntryRow, EntrySource, EntryStatus
from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.maintenance.preview_report import build_report
from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import entries, rerun_previews
from timeline_pipeline.store.rerun_previews import PRIOR, PROPOSAL, PreviewRow
from timeline_pipeline.synthesis.contract import Synthesizer
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline.synthesis.token_estimate import estimate_total_tokens
from timeline_pipeline.synthesis_run import draft_matching, draft_writes
from timeline_pipeline.synthesis_run.core import (
    ModelUnavailable,
    call_synthesizer,
    context_candidates,
    read_window,
    window_chunks,
    window_locale,
)
from timeline_pipeline.synthesis_run.draft_matching import DraftOutcome
from timeline_pipeline.synthesis_run.drafts import draft_write, evidence_item
from timeline_pipeline.synthesis_run.failures import ChunkFailure

__all__ = ["PREVIEW_COUNTERS", "RerunPreview", "SynthesizerFactory"]

SynthesizerFactory = Callable[[], Synthesizer]
PREVIEW_COUNTERS: Final = (
    "windows",
    "chunks",
    "synthesizer_calls",
    "model_calls",
    "estimated_input_tokens",
    "input_tokens",
    "output_tokens",
    "proposals",
    "failed_windows",
)
MAX_REPORT_ROWS: Final = 5000
MAX_FAILURES: Final = 20
RULES: Final = RuleSynthesizer.name


@dataclass
class _Tally:
    """What the shared chunk call counts (`core.CallTally`)."""

    model_calls: int = 0
    chunk_retries: int = 0
    validation_errors: int = 0
    model_seconds: float = 0.0


def _reason(entry: EntryRow) -> str:
    """Why synthesis leaves the entry's text alone: who decided on it."""
    if entry.source not in domain_entries.MACHINE_SOURCES:
        return "human"
    if entry.status in (EntryStatus.HIDDEN, EntryStatus.CONFIRMED):
        return entry.status.value
    return "human_edited"


def _image(row: PreviewRow, latest: PreviewRow | None) -> EntryRow:
    """An entry the preview would create, as the rerun would have left it by now."""
    current = latest or row
    return EntryRow(
        id=-row.id,
        workspace_id=row.workspace_id,
        occurred_at=current.occurred_at,
        title=current.title,
        detail=current.detail,
        category=current.category,
        source=EntrySource(current.source or EntrySource.AI),
        status=EntryStatus.DRAFT,
        fingerprint=row.fingerprint,
        human_edited=False,
        revision=1,
        window_state_id=None,
        metadata={
            draft_matching.FIRST_PROPOSED_AT: row.occurred_at.astimezone(UTC).isoformat(),
            draft_matching.CITED_EVIDENCE: [int(i) for i in row.evidence.get("cited", [])],
        },
        created_at=row.created_at,
        updated_at=current.created_at,
        evidence_ids=tuple(int(i) for i in current.evidence.get("bound", [])),
    )


def _overlaid(entry: EntryRow, latest: PreviewRow | None) -> EntryRow:
    """A stored entry as the preview's earlier proposals would have changed it."""
    if latest is None:
        return entry
    return replace(
        entry,
        occurred_at=latest.occurred_at,
        title=latest.title,
        detail=latest.detail,
        category=latest.category,
        evidence_ids=tuple(int(i) for i in latest.evidence.get("bound", [])),
    )


class RerunPreview:
    """Previews windows into the scratch table and reports on them."""

    def __init__(
        self, settings: LarkTimelineSettings, synthesizer: SynthesizerFactory | None = None
    ) -> None:
        self._settings = settings
        self._factory = synthesizer or RuleSynthesizer
        self._synthesizer: Synthesizer | None = None
        self._retry = RetryPolicy.for_model_calls(settings)

    @property
    def synthesizer(self) -> Synthesizer:
        if self._synthesizer is None:
            self._synthesizer = self._factory()
        return self._synthesizer

    # --- one window ------------------------------------------------------------------------

    def window(
        self,
        conn: Connection,
        ref: WindowRef,
        *,
        job_id: str,
        now: datetime,
        totals: dict[str, Any],
    ) -> None:
        """Synthesize `ref` as the rerun would and record the outcomes; counts into `totals`."""
        rows = read_window(conn, ref, self._settings.synthesis_window)
        if not rows:
            return
        totals["windows"] += 1
        items = [evidence_item(row) for row in rows]
        base = {
            "workspace_id": ref.workspace_id,
            "job_id": job_id,
            "chat_id": ref.chat_id,
            "window_start": ref.window_start,
            "created_at": now,
        }
        self._priors(conn, base, job_id, [row.id for row in rows])
        synthesizer = self.synthesizer
        candidates = context_candidates(conn, ref, items, self._settings)
        chunks = window_chunks(
            ref,
            items,
            candidates,
            self._settings,
            self._settings.synthesis_window,
            locale=window_locale(conn, ref, self._settings),
        )
        if synthesizer.name != RULES and chunks:
            # Model calls hold a synthesis slot to the batch's end (db/synthesis_slots.py).
            hold_synthesis_slot(conn, self._settings.max_concurrent_synthesis, holder=job_id)
        for number, chunk in enumerate(chunks, start=1):
            totals["chunks"] += 1
            totals["estimated_input_tokens"] += estimate_total_tokens(
                [*chunk.evidence, *chunk.context]
            )
            tally = _Tally()
            outcome = call_synthesizer(
                synthesizer,
                chunk,
                self._retry,
                tally,
                sleep=time.sleep,
                rng=_half,
                timer=time.monotonic,
                label=ref.partition_key,
            )
            totals["synthesizer_calls"] += tally.model_calls
            if synthesizer.name != RULES:
                totals["model_calls"] += tally.model_calls
            if isinstance(outcome, ChunkFailure | ModelUnavailable):
                totals["failed_windows"] += 1
                failures = totals.setdefault("failures", [])
                if len(failures) < MAX_FAILURES:
                    failures.append(
                        {
                            "chat_id": ref.chat_id,
                            "window_start": ref.window_start.isoformat(),
                            "chunk": number,
                            "reason": outcome.reason,
                        }
                    )
                return
            totals["input_tokens"] += outcome.usage.input_tokens
            totals["output_tokens"] += outcome.usage.output_tokens
            batch_id = f"preview.{job_id[:8]}.c{number}"
            # What this answer already wrote is never re-found by evidence (as the rerun's own
            # write path: draft_writes.upsert_drafts): two drafts citing one message are two facts.
            written: set[int] = set()
            for entry in outcome.entries:
                draft = draft_write(
                    ref, chunk, entry, outcome, processor=synthesizer.name, batch_id=batch_id
                )
                totals["proposals"] += 1
                written.add(self._propose(conn, base, job_id, draft, written))

    def _priors(
        self, conn: Connection, base: Mapping[str, Any], job_id: str, evidence_ids: list[int]
    ) -> None:
        """The entries the window's evidence supports now, each listed once per preview."""
        for entry in entries.bound_to_evidence(conn, str(base["workspace_id"]), evidence_ids):
            if rerun_previews.has_prior(conn, job_id, entry.id):
                continue
            owned = entry.curator_owned
            rerun_previews.add(
                conn,
                {
                    **base,
                    "kind": PRIOR,
                    "outcome": "protected" if owned else "draft",
                    "entry_id": entry.id,
                    "fingerprint": entry.fingerprint,
                    "occurred_at": entry.occurred_at,
                    "title": entry.title,
                    "category": entry.category,
                    "detail": entry.detail,
                    "status": entry.status,
                    "source": entry.source,
                    "reason": _reason(entry) if owned else None,
                    "evidence_json": {"bound": list(entry.evidence_ids)},
                },
            )

    def _candidates(self, conn: Connection, job_id: str, draft: DraftWrite) -> list[EntryRow]:
        """Stored entries under the draft's keys as this preview would have left them, and the
        entries it would have created under them."""
        found = [
            _overlaid(entry, rerun_previews.latest_change(conn, job_id, entry_id=entry.id))
            for entry in entries.restated_candidates(conn, draft)
        ]
        for image in rerun_previews.images(
            conn, job_id, [draft.fingerprint, *draft.nearby_fingerprints]
        ):
            found.append(
                _image(image, rerun_previews.latest_change(conn, job_id, image_id=image.id))
            )
        return found

    def _same_evidence(
        self, conn: Connection, job_id: str, draft: DraftWrite, written: set[int]
    ) -> EntryRow | None:
        """The entry the rerun would re-find by `draft`'s evidence when no fingerprint matches
        (`draft_writes.find_restated`): a stored one first, as this preview left it, then one
        the preview would create, in creation order; never one the same answer wrote."""
        stored = draft_writes.find_same_evidence(conn, draft, exclude={i for i in written if i > 0})
        if stored is not None:
            return _overlaid(stored, rerun_previews.latest_change(conn, job_id, entry_id=stored.id))
        images = (
            _image(image, rerun_previews.latest_change(conn, job_id, image_id=image.id))
            for image in rerun_previews.images_of_job(conn, job_id)
        )
        return draft_matching.first_same_evidence(images, draft, exclude=written)

    def _propose(
        self,
        conn: Connection,
        base: Mapping[str, Any],
        job_id: str,
        draft: DraftWrite,
        written: set[int],
    ) -> int:
        """Record what the rerun would do with `draft`; returns the entry it would write (a
        stored entry's id, or minus the scratch row's id of one it would create)."""
        existing = draft_matching.nearest_entry(self._candidates(conn, job_id, draft), draft)
        if existing is None:
            existing = self._same_evidence(conn, job_id, draft, written)
        plan = draft_matching.plan_draft_write(existing, draft)
        cited = sorted({ref.id for ref in draft.evidence})
        values: dict[str, Any] = {
            **base,
            "kind": PROPOSAL,
            "fingerprint": draft.fingerprint,
            "occurred_at": draft.occurred_at,
            "title": draft.title,
            "category": draft.category,
            "detail": draft.detail,
            "source": draft.source,
        }
        if existing is None:
            return -rerun_previews.add(
                conn,
                {**values, "outcome": "added", "evidence_json": {"cited": cited, "bound": cited}},
            )
        is_image = existing.id < 0
        target = {
            "entry_id": None if is_image else existing.id,
            "image_id": -existing.id if is_image else None,
            "old_title": existing.title,
            "old_category": existing.category,
            "status": existing.status,
        }
        bound = sorted({*existing.evidence_ids, *plan.bind})
        evidence = {"cited": cited, "bound": bound, "new": list(plan.bind)}
        if plan.outcome is DraftOutcome.UPDATED:
            changed = {
                "occurred_at": plan.values.get("occurred_at", existing.occurred_at),
                "title": plan.values.get("title", existing.title),
                "detail": plan.values.get("detail", existing.detail),
                "category": plan.values.get("category", existing.category),
            }
            visible = any(
                changed[key] != getattr(existing, key)
                for key in ("occurred_at", "title", "detail", "category")
            )
            rerun_previews.add(
                conn,
                {
                    **values,
                    **changed,
                    **target,
                    # Only new evidence: the text stays; the image still moves on.
                    "outcome": "changed",
                    "reason": None if visible else "evidence",
                    "evidence_json": evidence,
                },
            )
            return existing.id
        outcome = {
            DraftOutcome.UNCHANGED: "unchanged",
            DraftOutcome.SUPPORTED: "supported",
            DraftOutcome.UNTOUCHED: "untouched",
        }[plan.outcome]
        reason = _reason(existing) if plan.outcome is not DraftOutcome.UNCHANGED else None
        rerun_previews.add(
            conn,
            {**values, **target, "outcome": outcome, "reason": reason, "evidence_json": evidence},
        )
        return existing.id

    # --- the report ------------------------------------------------------------------------

    def report(
        self,
        conn: Connection,
        job_id: str,
        totals: Mapping[str, Any],
        *,
        processor_version: str,
    ) -> dict[str, Any]:
        """The report kept in the job's result: per window and in total (`preview_report`)."""
        rows = rerun_previews.rows_for_job(conn, job_id, limit=MAX_REPORT_ROWS)
        restated = rerun_previews.proposal_entry_ids(conn, job_id)
        total_rows = rerun_previews.count_for_job(conn, job_id)
        synthesizer = self.synthesizer
        prices = (
            self._settings.synthesis_price_input_per_mtok,
            (self._settings.synthesis_price_output_per_mtok),
        )
        return build_report(
            rows,
            restated,
            totals,
            job_id=job_id,
            processor_version=processor_version,
            synthesizer=synthesizer.name,
            prompt_version=synthesizer.prompt_version,
            prices=prices,
            omitted_rows=max(0, total_rows - len(rows)),
        )


def _half() -> float:
    """Backoff jitter of the preview's chunk attempts: the middle of the range, so a preview's
    waits are predictable (the run's own attempts keep full jitter)."""
    return 0.5
