"""The dry-run on both databases: read-only, repeatable, holds first."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import Engine

from timeline_pipeline.domain.lifecycle import LegalHoldNote
from timeline_pipeline.lifecycle.dry_run import DescriptorReport, dry_run, read_only
from timeline_pipeline.lifecycle.errors import RetentionOverrideOutOfRange
from timeline_pipeline.lifecycle.holds import create_hold
from timeline_pipeline.lifecycle.registry import Registry, load_registry
from timeline_pipeline_tests.lifecycle.support import (
    AS_OF,
    BINDINGS,
    ENTRIES,
    EVIDENCE,
    OLD,
    WINDOWS,
    YOUNG,
    entry,
    evidence,
    snapshot,
    window,
    workspace,
)
from timeline_pipeline_tests.support.windows import WINDOW


@pytest.fixture
def populated(engine: Engine) -> Engine:
    for ws in ("inc-1", "inc-2"):
        workspace(engine, ws)
        old = evidence(engine, ws, [OLD] * 3 + [OLD + timedelta(seconds=1)] * 2)
        evidence(engine, ws, [YOUNG] * 2, prefix="y")
        entry(engine, ws, OLD, old[:2])
        window(engine, ws, OLD, "completed")
        window(engine, ws, OLD + WINDOW, "pending")
    return engine


def report_of(
    engine: Engine, registry: Registry | None = None, **kw: object
) -> list[DescriptorReport]:
    with read_only(engine) as conn:
        return dry_run(conn, registry or load_registry(), as_of=AS_OF, **kw).descriptors  # type: ignore[arg-type]


def hold(engine: Engine, ws: str, descriptor: str | None = None, key: str = "h1") -> str:
    with engine.begin() as conn:
        return create_hold(
            conn,
            load_registry(),
            workspace_id=ws,
            descriptor_key=descriptor,
            reason="preservation notice 17",
            idempotency_key=key,
            actor="counsel",
        ).hold.id


def by_key(reports: list[DescriptorReport]) -> dict[str, DescriptorReport]:
    return {r.descriptor: r for r in reports}


def test_two_dry_runs_with_the_same_input_are_identical_and_change_nothing(
    populated: Engine,
) -> None:
    hold(populated, "inc-2", ENTRIES)
    before = snapshot(populated)
    first = report_of(populated)
    second = report_of(populated)
    assert first == second
    assert snapshot(populated) == before


def test_the_dry_run_counts_eligible_purgeable_and_blocked_rows_per_workspace(
    populated: Engine,
) -> None:
    reports = by_key(report_of(populated))
    ev = reports[EVIDENCE]
    assert [w.workspace for w in ev.workspaces] == ["inc-1", "inc-2"]
    first = ev.workspaces[0]
    # Five old rows; two are bound to an entry that has aged out too, so their bindings go
    # first and they follow in a later pass: blocked now, never purgeable before their leaves.
    assert (first.eligible, first.held, first.purgeable, first.blocked) == (5, 0, 3, 2)
    assert first.oldest_cursor == OLD.isoformat()
    assert reports[BINDINGS].purgeable == 4
    # Only the finished window is eligible; the pending one never is.
    assert (reports[WINDOWS].eligible, reports[WINDOWS].purgeable) == (2, 2)


def test_with_an_active_hold_every_eligible_row_is_held_under_the_most_aggressive_override(
    populated: Engine,
) -> None:
    hold(populated, "inc-1")
    registry = load_registry()
    for d in registry.descriptors.values():
        (report,) = report_of(
            populated,
            descriptor_key=d.key,
            retention_days_override=d.retention_min_days,
            workspace_id="inc-1",
        )
        (counts,) = report.workspaces
        assert counts.held == counts.eligible, d.key
        assert counts.purgeable == 0, d.key


def test_a_hold_on_one_link_holds_the_whole_chain_and_only_its_workspace(
    populated: Engine,
) -> None:
    hold_id = hold(populated, "inc-1", BINDINGS)
    reports = by_key(report_of(populated))
    for key in (EVIDENCE, ENTRIES, BINDINGS):
        held, free = reports[key].workspaces
        assert (held.workspace, held.purgeable, held.held) == ("inc-1", 0, held.eligible)
        assert held.holds == [hold_id]
        assert (free.workspace, free.held, free.holds) == ("inc-2", 0, []), key
        assert free.eligible > 0, key
    assert reports[WINDOWS].held == 0  # not a link of that chain


def test_a_descriptor_declaring_holds_not_applicable_is_held_all_the_same(
    populated: Engine,
) -> None:
    registry = load_registry()
    immune = replace(registry.get(EVIDENCE), legal_hold=LegalHoldNote(applicable=False))
    patched = Registry({**registry.descriptors, EVIDENCE: immune})
    hold(populated, "inc-1")
    (report,) = report_of(populated, patched, descriptor_key=EVIDENCE, workspace_id="inc-1")
    assert (report.eligible, report.held, report.purgeable) == (5, 5, 0)


def test_as_of_previews_what_a_later_date_will_purge(populated: Engine) -> None:
    with read_only(populated) as conn:
        now = dry_run(conn, load_registry(), descriptor_key=EVIDENCE, as_of=AS_OF)
        later = dry_run(
            conn, load_registry(), descriptor_key=EVIDENCE, as_of=AS_OF + timedelta(days=40)
        )
    assert now.descriptors[0].eligible == 10
    assert later.descriptors[0].eligible == 14  # the young rows have aged out by then


def test_an_override_outside_a_descriptors_bounds_is_refused_naming_the_bound(
    populated: Engine,
) -> None:
    with pytest.raises(RetentionOverrideOutOfRange, match="below the minimum retention_min_days=7"):
        report_of(populated, descriptor_key=EVIDENCE, retention_days_override=1)
