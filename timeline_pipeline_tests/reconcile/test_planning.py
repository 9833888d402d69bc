"""Range planning (docs/design.md §3): which range a run reads, as a table of cases."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from timeline_pipeline.domain.sync_states import (
    CHECKPOINT_MARKER_KEY,
    encode_message_cursor,
)
from timeline_pipeline.reconcile.planning import (
    CheckpointView,
    MessageKey,
    Mode,
    Progress,
    RangeBounds,
    RangeKind,
    ReconcileRange,
    newest_within,
    next_high_water,
    plan_range,
)

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)
M = timedelta(minutes=1)
BOUNDS = RangeBounds(lookback=72 * H, overlap=10 * M, refresh_lookback=24 * H)


def key(at: datetime, message_id: str = "om_x") -> MessageKey:
    return MessageKey.of(at, message_id)


def marker(kind: RangeKind, start: datetime, after: datetime | None) -> Progress:
    return Progress(kind, start, NOW - 5 * M, key(after) if after else None, 3, NOW - 5 * M)


@dataclass(frozen=True)
class Case:
    name: str
    created: datetime
    view: CheckpointView
    expected: ReconcileRange | None
    mode: Mode = Mode.INCREMENTAL


def backfill(start: datetime, floor: datetime | None = None) -> ReconcileRange:
    return ReconcileRange(RangeKind.BACKFILL, start, NOW, floor or start)


CASES = [
    Case(
        "first run backfills from the workspace creation",
        NOW - 6 * H,
        CheckpointView(),
        backfill(NOW - 6 * H),
    ),
    Case(
        "first run of an old workspace backfills only the 72-hour lookback",
        NOW - 100 * H,
        CheckpointView(),
        backfill(NOW - 72 * H),
    ),
    Case(
        "a refresh before any checkpoint is the backfill",
        NOW - 6 * H,
        CheckpointView(),
        backfill(NOW - 6 * H),
        Mode.REFRESH,
    ),
    Case(
        "incremental starts one overlap before the high-water mark",
        NOW - 6 * H,
        CheckpointView(high_water=key(NOW - H)),
        ReconcileRange(RangeKind.INCREMENTAL, NOW - H - 10 * M, NOW, NOW - 6 * H),
    ),
    Case(
        "the overlap never reaches before the workspace creation",
        NOW - 6 * H,
        CheckpointView(high_water=key(NOW - 6 * H + 5 * M)),
        ReconcileRange(RangeKind.INCREMENTAL, NOW - 6 * H, NOW, NOW - 6 * H),
    ),
    Case(
        "a mark older than the lookback is capped by the ingestion lookback",
        NOW - 100 * H,
        CheckpointView(high_water=key(NOW - 80 * H)),
        ReconcileRange(RangeKind.INCREMENTAL, NOW - 72 * H, NOW, NOW - 72 * H),
    ),
    Case(
        "a chat without messages continues from the end of its last complete range",
        NOW - 6 * H,
        CheckpointView(covered_until=NOW - 5 * M),
        ReconcileRange(RangeKind.INCREMENTAL, NOW - 15 * M, NOW, NOW - 6 * H),
    ),
    Case(
        "refresh re-reads the refresh lookback",
        NOW - 48 * H,
        CheckpointView(high_water=key(NOW - H)),
        ReconcileRange(RangeKind.REFRESH, NOW - 24 * H, NOW, NOW - 48 * H),
        Mode.REFRESH,
    ),
    Case(
        "refresh is capped by the workspace creation",
        NOW - 6 * H,
        CheckpointView(high_water=key(NOW - H)),
        ReconcileRange(RangeKind.REFRESH, NOW - 6 * H, NOW, NOW - 6 * H),
        Mode.REFRESH,
    ),
    Case(
        "refresh never covers less than the incremental run would",
        NOW - 48 * H,
        CheckpointView(high_water=key(NOW - 30 * H)),
        ReconcileRange(RangeKind.REFRESH, NOW - 30 * H - 10 * M, NOW, NOW - 48 * H),
        Mode.REFRESH,
    ),
    Case(
        "a workspace created in the future has nothing to read",
        NOW + H,
        CheckpointView(),
        None,
    ),
    Case(
        "an interrupted backfill resumes one overlap before its committed progress",
        NOW - 6 * H,
        CheckpointView(progress=marker(RangeKind.BACKFILL, NOW - 6 * H, NOW - 4 * H)),
        ReconcileRange(
            RangeKind.BACKFILL,
            NOW - 4 * H - 10 * M,
            NOW,
            NOW - 6 * H,
            key(NOW - 4 * H),
            marker_start=NOW - 6 * H,
        ),
    ),
    Case(
        "an interrupted incremental run resumes from its progress, not its mark",
        NOW - 6 * H,
        CheckpointView(
            high_water=key(NOW - 3 * H),
            progress=marker(RangeKind.INCREMENTAL, NOW - 3 * H - 10 * M, NOW - H),
        ),
        ReconcileRange(
            RangeKind.INCREMENTAL,
            NOW - H - 10 * M,
            NOW,
            NOW - 6 * H,
            key(NOW - H),
            marker_start=NOW - 3 * H - 10 * M,
        ),
    ),
    Case(
        "a refresh does not skip on the progress of a shorter incremental range",
        NOW - 48 * H,
        CheckpointView(
            high_water=key(NOW - 3 * H),
            progress=marker(RangeKind.INCREMENTAL, NOW - 3 * H - 10 * M, NOW - H),
        ),
        ReconcileRange(RangeKind.REFRESH, NOW - 24 * H, NOW, NOW - 48 * H),
        Mode.REFRESH,
    ),
    Case(
        "progress behind the planned start gains nothing",
        NOW - 6 * H,
        CheckpointView(
            high_water=key(NOW - H),
            progress=marker(RangeKind.BACKFILL, NOW - 6 * H, NOW - 5 * H),
        ),
        ReconcileRange(RangeKind.INCREMENTAL, NOW - H - 10 * M, NOW, NOW - 6 * H),
    ),
    Case(
        "a marker that committed no page yet does not move the start",
        NOW - 6 * H,
        CheckpointView(progress=marker(RangeKind.BACKFILL, NOW - 6 * H, None)),
        backfill(NOW - 6 * H),
    ),
    Case(
        "a mark stamped ahead of our clock still reads up to now",
        NOW - 6 * H,
        CheckpointView(high_water=key(NOW + H)),
        ReconcileRange(RangeKind.INCREMENTAL, NOW, NOW, NOW - 6 * H),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_plan_range(case: Case) -> None:
    planned = plan_range(
        mode=case.mode,
        workspace_created_at=case.created,
        checkpoint=case.view,
        bounds=BOUNDS,
        now=NOW,
    )
    assert planned == case.expected


def test_a_resumed_run_interrupted_again_still_resumes_from_the_original_span() -> None:
    """The marker a resumed run writes must claim the whole committed span, from the first
    run's start, or a second interruption would send the third run back to the floor."""
    first = plan_range(
        mode=Mode.INCREMENTAL,
        workspace_created_at=NOW - 6 * H,
        checkpoint=CheckpointView(progress=marker(RangeKind.BACKFILL, NOW - 6 * H, NOW - 4 * H)),
        bounds=BOUNDS,
        now=NOW,
    )
    assert first is not None
    second_marker = Progress(first.kind, first.committed_from, first.end, key(NOW - 2 * H), 5, NOW)
    second = plan_range(
        mode=Mode.INCREMENTAL,
        workspace_created_at=NOW - 6 * H,
        checkpoint=CheckpointView(progress=second_marker),
        bounds=BOUNDS,
        now=NOW + M,
    )
    assert second is not None
    assert (second.start, second.resumed_from) == (NOW - 2 * H - 10 * M, key(NOW - 2 * H))
    assert second.committed_from == NOW - 6 * H


def test_zero_overlap_resumes_exactly_at_the_committed_progress() -> None:
    view = CheckpointView(progress=marker(RangeKind.BACKFILL, NOW - 6 * H, NOW - 2 * H))
    planned = plan_range(
        mode=Mode.INCREMENTAL,
        workspace_created_at=NOW - 6 * H,
        checkpoint=view,
        bounds=RangeBounds(72 * H, timedelta(0), 24 * H),
        now=NOW,
    )
    assert planned is not None
    assert planned.start == NOW - 2 * H


def test_checkpoint_view_reads_the_row_and_tolerates_damage() -> None:
    good = marker(RangeKind.BACKFILL, NOW - 6 * H, NOW - 4 * H)
    view = CheckpointView.from_row(
        encode_message_cursor(1_700_000_000_000, "om_a"),
        NOW,
        {CHECKPOINT_MARKER_KEY: good.to_json()},
    )
    assert view == CheckpointView(MessageKey(1_700_000_000_000, "om_a"), NOW, good)

    damaged = CheckpointView.from_row(
        "not-a-cursor", None, {CHECKPOINT_MARKER_KEY: {"kind": "nope"}}
    )
    assert damaged == CheckpointView()


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "text",
        {},
        {"kind": "backfill"},
        {"kind": "backfill", "range_start": "2026-11-29T10:00:00", "range_end": "x"},
        {
            "kind": "backfill",
            "range_start": NOW.isoformat(),
            "range_end": NOW.isoformat(),
            "started_at": NOW.isoformat(),
            "after": "999/",
        },
    ],
)
def test_an_unreadable_marker_is_absent(raw: object) -> None:
    assert Progress.from_json(raw) is None


def test_progress_never_moves_backwards_and_counts_pages() -> None:
    start = Progress(RangeKind.BACKFILL, NOW - H, NOW, None, 0, NOW)
    one = start.advanced(key(NOW - 30 * M))
    two = one.advanced(key(NOW - 40 * M))
    three = two.advanced(None)
    assert (one.after, one.pages) == (key(NOW - 30 * M), 1)
    assert (two.after, two.pages) == (key(NOW - 30 * M), 2)
    assert (three.after, three.pages) == (key(NOW - 30 * M), 3)
    assert Progress.from_json(three.to_json()) == three


def test_message_keys_order_like_lark_history_and_like_their_cursor_text() -> None:
    keys = [key(NOW, "om_b"), key(NOW, "om_a"), key(NOW - M, "om_z")]
    assert sorted(keys) == [key(NOW - M, "om_z"), key(NOW, "om_a"), key(NOW, "om_b")]
    assert sorted(k.encode() for k in keys) == [k.encode() for k in sorted(keys)]
    assert MessageKey.decode(keys[0].encode()) == keys[0]
    assert keys[0].created_at == NOW


def test_the_high_water_mark_ignores_messages_after_the_range_end_and_never_falls() -> None:
    inside, later = key(NOW - M), key(NOW + M)
    assert newest_within([inside, later], NOW) == inside
    assert newest_within([later], NOW) is None
    assert next_high_water(None, inside) == inside
    assert next_high_water(key(NOW), inside) == key(NOW)
    assert next_high_water(inside, None) == inside
    assert next_high_water(None, None) is None
