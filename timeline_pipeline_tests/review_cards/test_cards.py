"""The card drawing and the token rules, pure: what the card offers follows the stored state."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from timeline_pipeline.domain.card_requests import CardEntry, CardRequest, Decision
from timeline_pipeline.domain.interactions import CardAction, CardStatus
from timeline_pipeline.review_cards.drawing import render_card
from timeline_pipeline.security.callback_tokens import card_uuid, new_token, token_hash

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
REQUEST = CardRequest(
    (
        CardEntry(1, 1, T0, "Checkout <b>errors</b> [x](http://evil)", "impact", 3),
        CardEntry(2, 4, T0 + timedelta(minutes=2), "Rolled back", "mitigation", 1),
    ),
    ("impact", "mitigation"),
    512,
)


def _controls(card: dict[str, object]) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for element in card["elements"]:  # type: ignore[attr-defined]
        for control in element.get("actions", []) + element.get("elements", []):
            if isinstance(control.get("value"), dict):
                found.append(control)
    return found


def test_an_open_card_offers_every_undecided_draft_its_controls_with_the_token() -> None:
    card = render_card(
        REQUEST, {}, token="tok", status="pending", expires_at=T0, workspace_id="inc-1"
    )
    values = [c["value"] for c in _controls(card)]
    assert {(v["e"], v["a"]) for v in values} == {  # type: ignore[index]
        (e, a) for e in (1, 2) for a in ("confirm", "hide", "category", "edit")
    }
    assert all(v["t"] == "tok" for v in values)  # type: ignore[index]


def test_model_text_goes_into_plain_text_only() -> None:
    card = render_card(
        REQUEST, {}, token="tok", status="pending", expires_at=T0, workspace_id="inc-1"
    )
    holders = [e for e in card["elements"] if "evil" in json.dumps(e)]
    assert holders and all(e["text"]["tag"] == "plain_text" for e in holders if "text" in e)


def test_a_decided_draft_shows_who_decided_and_no_longer_offers_controls() -> None:
    decided = {1: [Decision(CardAction.CONFIRM, "ou_ic", T0, "applied")]}
    card = render_card(
        REQUEST, decided, token="tok", status="pending", expires_at=T0, workspace_id="inc-1"
    )
    assert {c["value"]["e"] for c in _controls(card)} == {2}  # type: ignore[index]
    assert "Confirmed by <at id=ou_ic></at>" in json.dumps(card)


def test_an_expired_card_shows_its_state_without_any_control() -> None:
    card = render_card(
        REQUEST, {}, token=None, status=CardStatus.EXPIRED, expires_at=T0, workspace_id="inc-1"
    )
    assert _controls(card) == []
    assert "expired" in json.dumps(card)


def test_tokens_are_random_and_stored_as_hashes_and_card_uuids_fit_lark() -> None:
    first, second = new_token(), new_token()
    assert first != second
    assert token_hash(first) != first
    assert len(token_hash(first)) == 64
    assert card_uuid(7, "rules-v4") == card_uuid(7, "rules-v4")
    assert card_uuid(7, "rules-v4") != card_uuid(7, "rules-v5") != card_uuid(8, "rules-v4")
    assert len(card_uuid(2**62, "x" * 64)) <= 50
