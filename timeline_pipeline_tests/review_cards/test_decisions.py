"""A reviewer's decision on a card is applied as made, or refused (docs/review-cards.md), on
SQLite and PostgreSQL: a click names the revision its card showed, a click on an older one is
refused with a toast that shows the draft as it is now, decisions admitted after one that
failed fail with it, every title goes through the curation rules' text check, and a database
that fails in any way still answers Lark with a 200 and a toast."""

from __future__ import annotations

import string
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, func, select, text

from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.db.schema import audit_events, interaction_admissions
from timeline_pipeline.domain import entries as domain_entries
from timeline_pipeline.domain.interactions import CardAction
from timeline_pipeline.review_cards.callbacks import (
    Admissible,
    CallbackRefused,
    parse,
)
from timeline_pipeline.store import entries
from timeline_pipeline_tests.review_cards.harness import (
    Harness,
    button,
    harness,
    plan_card,
    seed_entries,
)


def _ready(h: Harness, count: int = 1) -> tuple[int, list[int]]:
    ids = seed_entries(h.engine, h.workspace_id, count)
    card_id = plan_card(h.engine, h.workspace_id, ids, ttl=timedelta(hours=1))
    h.drain()
    return card_id, ids


def _entry(engine: Engine, entry_id: int) -> domain_entries.EntryRow:
    with engine.connect() as conn:
        row = entries.get(conn, entry_id)
    assert row is not None
    return row


def _count(engine: Engine, table: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_two_curators_choosing_on_the_same_revision_the_second_is_refused_and_shown_the_first(
    engine: Engine,
) -> None:
    with harness(engine) as h:
        card_id, ids = _ready(h)
        seen = button(h.shown(card_id), ids[0], "category")  # both curators' card: revision 1
        assert seen["r"] == 1
        first = h.click(card_id, ids[0], "category", option="impact", value=seen)
        assert first.outcome == "admitted"
        second = h.click(
            card_id, ids[0], "category", option="mitigation", value=seen, operator="ou_curator"
        )
        assert (second.outcome, second.reason) == ("refused", "stale_revision")
        assert "changed meanwhile" in second.body["toast"]["content"]
        assert "impact" in second.body["toast"]["content"]  # what the draft now reads
        assert "card" in second.body  # and the card as it stands
        assert h.admissions() == 1
        h.drain()
        row = _entry(engine, ids[0])
        assert (row.category, row.revision) == ("impact", 2)
        assert h.audits(ids[0], "entry.edit") == 1
        # After the worker, the old drawing is still stale; the current one decides.
        late = h.click(card_id, ids[0], "category", option="mitigation", value=seen)
        assert (late.outcome, late.reason) == ("refused", "stale_revision")
        current = button(h.shown(card_id), ids[0], "category")
        assert current["r"] == 2
        assert h.click(card_id, ids[0], "category", option="mitigation", value=current).outcome == (
            "admitted"
        )
        h.drain()
        assert _entry(engine, ids[0]).category == "mitigation"


def test_a_decision_is_applied_at_the_revision_it_was_made_on_and_its_followers_fail_with_it(
    engine: Engine,
) -> None:
    with harness(engine) as h:
        card_id, ids = _ready(h)
        edited = h.click(card_id, ids[0], "edit", title="Checkout recovered")
        assert edited.outcome == "admitted"
        card = edited.body["card"]["data"]
        confirmed = h.click(card_id, ids[0], "confirm", value=button(card, ids[0], "confirm"))
        assert confirmed.outcome == "admitted"
        # The page changes the draft before the worker gets to the card's decisions.
        CurationService(engine).edit(
            h.workspace_id, ids[0], {"title": "Edited on the page"}, expected_revision=1, actor="ui"
        )
        h.drain()
        row = _entry(engine, ids[0])
        # Neither the edit nor the confirm (made on the edited title) touched the page's change.
        assert (row.title, row.status, row.revision) == ("Edited on the page", "draft", 2)
        assert h.audits(ids[0], "entry.confirm") == 0
        shown = str(h.shown(card_id))
        assert shown.count("not applied: the draft changed meanwhile") == 2
        assert "Edited on the page" in shown
        # The redrawn card stands for the draft as stored, and a click on it is applied.
        again = h.click(card_id, ids[0], "confirm")
        assert again.outcome == "admitted"
        h.drain()
        assert _entry(engine, ids[0]).status == "confirmed"


def test_a_click_from_a_card_drawn_without_a_revision_is_refused_as_stale_with_the_card(
    engine: Engine,
) -> None:
    with harness(engine) as h:
        card_id, ids = _ready(h)
        value = button(h.shown(card_id), ids[0], "confirm")
        del value["r"]
        answer = h.click(card_id, ids[0], "confirm", value=value)
        assert (answer.outcome, answer.reason) == ("refused", "stale_revision")
        assert button(answer.body["card"]["data"], ids[0], "confirm")["r"] == 1
        assert h.admissions() == 0


def test_the_decision_key_holds_the_whole_value() -> None:
    prefix = "Checkout latency " * 20
    one = Admissible(5, 1, CardAction.EDIT, prefix + "recovered at 10:40")
    other = Admissible(5, 1, CardAction.EDIT, prefix + "recovered at 10:45")
    assert len(prefix) > 128
    assert one.decision_key(7) != other.decision_key(7)
    assert one.decision_key(7) == Admissible(5, 1, CardAction.EDIT, one.value).decision_key(7)
    longest = Admissible(2**63 - 1, 2**31 - 1, CardAction.CATEGORY, "x" * 512)
    assert len(longest.decision_key(2**63 - 1)) <= 256  # the column's width


def test_two_long_titles_sharing_a_prefix_are_two_decisions(engine: Engine) -> None:
    with harness(engine) as h:
        card_id, ids = _ready(h)
        prefix = "Checkout latency " * 20
        first = h.click(card_id, ids[0], "edit", title=prefix + "one")
        assert first.outcome == "admitted"
        card = first.body["card"]["data"]
        second = h.click(
            card_id, ids[0], "edit", title=prefix + "two", value=button(card, ids[0], "edit")
        )
        assert second.outcome == "admitted"
        assert h.admissions() == 2
        h.drain()
        assert _entry(engine, ids[0]).title == prefix + "two"


@pytest.mark.parametrize(
    "title", ["nul\x00inside", "lone \ud800 surrogate", "bell\x07", "  ", "x" * 513]
)
def test_a_title_the_curation_rules_refuse_is_refused_with_a_toast_and_nothing_written(
    engine: Engine, title: str
) -> None:
    with harness(engine) as h:
        card_id, ids = _ready(h)
        answer = h.click(card_id, ids[0], "edit", title=title)
        assert (answer.outcome, answer.reason) == ("refused", "invalid_title")
        assert "control characters" in answer.body["toast"]["content"]
        assert h.admissions() == 0
        assert _entry(engine, ids[0]).revision == 1


def test_an_unexpected_database_error_is_a_toast_and_a_count_never_an_exception(
    engine: Engine,
) -> None:
    with harness(engine) as h:
        card_id, ids = _ready(h)
        with engine.begin() as conn:  # a database that refuses every admission, as a fault
            if engine.dialect.name == "postgresql":
                conn.execute(
                    text(
                        "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN "
                        "RAISE EXCEPTION 'refused'; END $$ LANGUAGE plpgsql"
                    )
                )
                conn.execute(
                    text(
                        "CREATE TRIGGER refuse BEFORE INSERT ON interaction_admissions "
                        "FOR EACH ROW EXECUTE FUNCTION refuse()"
                    )
                )
            else:
                conn.execute(
                    text(
                        "CREATE TRIGGER refuse BEFORE INSERT ON interaction_admissions "
                        "BEGIN SELECT RAISE(ABORT, 'refused'); END"
                    )
                )
        answer = h.click(card_id, ids[0], "confirm")
        assert (answer.outcome, answer.reason) == ("refused", "unavailable")
        assert answer.body["toast"]["type"] == "error"
        sample = h.metrics.registry.get_sample_value(
            "timeline_review_card_callbacks_refused_total", {"reason": "unavailable"}
        )
        assert sample == 1
        assert _count(engine, interaction_admissions) == 0
        assert _count(engine, audit_events) == 0


_ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(max_size=30),
    st.lists(st.text(max_size=5), max_size=2),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
)
_FIELDS = (
    ("header", "event_id"),
    ("header", "app_id"),
    ("action", "value"),
    ("action", "option"),
    ("action", "form_value"),
    ("context", "open_message_id"),
    ("context", "open_chat_id"),
    ("operator", "open_id"),
)
_VALUE_KEYS = ("t", "e", "a", "r")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fields=st.dictionaries(st.sampled_from(_FIELDS), _ANY),
    value=st.dictionaries(st.sampled_from(_VALUE_KEYS), _ANY),
    title=st.text(max_size=20),
)
def test_the_callback_parser_reads_any_payload_or_refuses_it(
    fields: dict[tuple[str, str], Any], value: dict[str, Any], title: str
) -> None:
    payload: dict[str, Any] = {
        "header": {"event_id": "ev_1", "app_id": "cli_1"},
        "event": {
            "action": {"value": {"t": "tok", "e": 1, "a": "edit", "r": 1, **value}},
            "context": {"open_message_id": "om_1", "open_chat_id": "oc_1"},
            "operator": {"open_id": "ou_1"},
        },
    }
    payload["event"]["action"]["form_value"] = {"title": title}
    for (part, key), chosen in fields.items():
        target = payload["header"] if part == "header" else payload["event"][part]
        target[key] = chosen
    try:
        parsed = parse(payload)
    except CallbackRefused as refused:
        assert refused.reason.value == "malformed_value"
    else:
        assert parsed.revision is None or 0 < parsed.revision < 2**31


_ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40) | st.text(
    string.printable, max_size=20
)


def test_any_unicode_in_a_callback_is_answered_with_a_toast_never_an_error(engine: Engine) -> None:
    with harness(engine) as h:
        card_id, ids = _ready(h)

        @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(title=_ANY_TEXT, option=_ANY_TEXT, revision=st.integers(-2, 3) | _ANY_TEXT)
        def click(title: str, option: str, revision: object) -> None:
            for action, extra in (("edit", {"title": title}), ("category", {"option": option})):
                value = {**button(h.shown(card_id), ids[0], action), "r": revision}
                answer = h.click(card_id, ids[0], action, value=value, **extra)
                assert answer.outcome in ("admitted", "refused", "duplicate")
                assert answer.body["toast"]["content"]
                assert answer.reason != "unavailable"

        click()
