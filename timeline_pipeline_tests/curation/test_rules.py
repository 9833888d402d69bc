"""The curation rules as tables: status transitions, acceptable text, revisions and ETags."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from timeline_pipeline.curation.rules import (
    Action,
    check_category,
    check_revision,
    check_text,
    check_time,
    entry_etag,
    entry_etag_prefix,
    revision_from_if_match,
    summary_etag,
    summary_etag_prefix,
    target_status,
)
from timeline_pipeline.domain.errors import InvalidInput, InvalidTransition, StaleRevision


@pytest.mark.parametrize(
    ("action", "status", "source", "expected"),
    [
        (Action.CONFIRM, "draft", "ai", "confirmed"),
        (Action.CONFIRM, "draft", "rule", "confirmed"),
        (Action.HIDE, "draft", "ai", "hidden"),
        (Action.HIDE, "confirmed", "ai", "hidden"),
        (Action.HIDE, "confirmed", "human", "hidden"),
        (Action.RESTORE, "hidden", "ai", "draft"),
        # A curator's own entry comes back as they left it, not as a machine proposal.
        (Action.RESTORE, "hidden", "human", "confirmed"),
    ],
)
def test_allowed_transitions(action: Action, status: str, source: str, expected: str) -> None:
    assert target_status(action, status, source) == expected


@pytest.mark.parametrize(
    ("action", "status"),
    [
        (Action.CONFIRM, "confirmed"),  # a client acting on a stale view must re-read
        (Action.CONFIRM, "hidden"),  # restore first: hiding was a decision
        (Action.HIDE, "hidden"),
        (Action.RESTORE, "draft"),
        (Action.RESTORE, "confirmed"),
    ],
)
def test_every_other_transition_is_refused(action: Action, status: str) -> None:
    with pytest.raises(InvalidTransition, match=f"cannot {action.value} an entry that is {status}"):
        target_status(action, status, "ai")


def test_text_is_trimmed_and_bounded() -> None:
    assert check_text("  Rolled back v41  ", "title", 20, multiline=False) == "Rolled back v41"
    assert check_text("line one\nline two", "detail", 100) == "line one\nline two"


@pytest.mark.parametrize(
    ("value", "multiline", "message"),
    [
        ("   ", True, "must not be blank"),
        ("x" * 21, True, "21 characters; at most 20"),
        ("nul\x00byte", True, "control characters"),
        ("bell\x07", True, "control characters"),
        ("two\nlines", False, "control characters"),
        ("lone \ud800 surrogate", True, "not valid Unicode"),
    ],
)
def test_text_that_cannot_be_stored_or_shown_is_refused(
    value: str, multiline: bool, message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        check_text(value, "title", 20, multiline=multiline)


def test_categories_are_the_synthesis_categories() -> None:
    assert check_category("root_cause") == "root_cause"
    with pytest.raises(InvalidInput, match="unknown category 'gossip'"):
        check_category("gossip")


def test_times_need_a_zone_and_a_plausible_year_and_come_back_in_utc() -> None:
    tokyo = datetime(2026, 11, 29, 19, 0, tzinfo=timezone(timedelta(hours=9)))
    assert check_time(tokyo) == datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
    with pytest.raises(InvalidInput, match="needs a timezone"):
        check_time(datetime(2026, 11, 29, 10, 0))
    with pytest.raises(InvalidInput, match="between 2000 and 2100"):
        check_time(datetime(1999, 12, 31, tzinfo=UTC))
    with pytest.raises(InvalidInput, match=r"out of range|between"):
        check_time(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5))))


def test_a_revision_check_passes_only_on_the_current_revision() -> None:
    check_revision(3, 3)
    check_revision(None, 3)  # an operator acting on the current state
    with pytest.raises(StaleRevision) as stale:
        check_revision(2, 3)
    assert stale.value.current_revision == 3


def test_etags_name_the_resource_and_its_revision_and_if_match_reads_them_back() -> None:
    assert entry_etag(12, 3) == '"e12.r3"'
    assert summary_etag("inc.r5", 2) == '"s.inc.r5.r2"'
    assert revision_from_if_match('"e12.r3"', entry_etag_prefix(12)) == 3
    assert revision_from_if_match(summary_etag("inc.r5", 2), summary_etag_prefix("inc.r5")) == 2
    assert revision_from_if_match(" * ", entry_etag_prefix(12)) is None


@pytest.mark.parametrize(
    ("header", "error"),
    [
        ('"e13.r3"', StaleRevision),  # another entry's tag can never match: 409, not 400
        ('W/"e12.r3"', InvalidInput),  # If-Match compares strong tags only
        ('"e12.r3", "e12.r4"', InvalidInput),  # one tag: no hedging between versions
        ("e12.r3", InvalidInput),
        ('"e12.rx"', InvalidInput),
        ("", InvalidInput),
    ],
)
def test_if_match_that_cannot_name_this_entry_is_refused(
    header: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        revision_from_if_match(header, entry_etag_prefix(12))
