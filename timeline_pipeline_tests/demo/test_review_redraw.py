"""How the demo tells that the commander's card was redrawn with the confirmation, in any
language the card speaks (docs/review-cards.md)."""

from __future__ import annotations

from typing import Any

from timeline_pipeline.demo.review import shows_confirmed
from timeline_pipeline.review_cards.drawing import VALUE_ACTION, VALUE_ENTRY

CURATOR = "ou_commander"


def _card(note: str, *, confirm_for: int | None = None) -> dict[str, Any]:
    elements: list[dict[str, Any]] = [
        {"tag": "div", "text": {"tag": "lark_md", "content": note}},
    ]
    if confirm_for is not None:
        value = {VALUE_ENTRY: confirm_for, VALUE_ACTION: "confirm"}
        elements.append({"tag": "action", "actions": [{"tag": "button", "value": value}]})
    return {"elements": elements}


def test_a_redrawn_card_names_the_curator_and_offers_no_confirm_in_any_language() -> None:
    english = _card(f"Confirmed by <at id={CURATOR}></at> at 08:31 UTC")
    chinese = _card(f"<at id={CURATOR}></at> 于 16:31 UTC+8 确认")
    assert shows_confirmed(english, 7, CURATOR)
    assert shows_confirmed(chinese, 7, CURATOR)


def test_a_card_still_offering_confirm_or_naming_someone_else_is_not_redrawn() -> None:
    assert not shows_confirmed(_card("1 message(s)", confirm_for=7), 7, CURATOR)
    assert not shows_confirmed(_card("<at id=ou_other></at> 确认"), 7, CURATOR)
    still_open = _card(f"<at id={CURATOR}></at> 隐藏了 8", confirm_for=7)
    assert not shows_confirmed(still_open, 7, CURATOR)
