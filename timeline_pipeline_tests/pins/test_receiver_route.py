"""`POST /lark/events` with reaction events over HTTP to a real `serve`: verified like every
event (a bad signature is refused before anything is read), a pin that changed something is
`accepted`, one that did not is a 200 `ignored` with its reason, a malformed reaction is a 400,
a message Lark has no answer for is a 503 (Lark delivers it again), and `/metrics` counts pins."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
from pydantic import SecretStr
from sqlalchemy import Engine

from timeline_pipeline.http.app import create_app
from timeline_pipeline.lark.simulator.pusher import send_signed
from timeline_pipeline.lark.simulator.runner import LoopbackUvicorn
from timeline_pipeline.settings import Settings, load_runtime_environment
from timeline_pipeline_tests.pins.harness import CHAT, PinHarness, pin_harness

TOKEN = "pins-verification-token"
KEY = "pins-encrypt-key"


def _serve(h: PinHarness, **timeline: Any) -> LoopbackUvicorn:
    runtime = load_runtime_environment().model_copy(
        update={
            "lark_verification_token": SecretStr(TOKEN),
            "lark_encrypt_key": SecretStr(KEY),
            "lark_app_id": h.app_id,
            "lark_app_secret": SecretStr(h.lark.app_secret),
            "lark_base_url": h.lark.base_url,
        }
    )
    settings = Settings(h.settings.model_copy(update=timeline), runtime)
    return LoopbackUvicorn(create_app(settings, h.engine, card_worker=False))


def _post(url: str, payload: dict[str, Any], *, key: str = KEY) -> Any:
    payload["header"]["token"] = TOKEN
    return send_signed(f"{url}/lark/events", payload, encrypt_key=key)


def test_reaction_events_over_http_pin_unpin_and_are_counted(engine: Engine) -> None:
    with pin_harness(engine) as h:
        stored = h.say("gateway pool exhausted at 12:40, raised max connections")
        fetched = h.say("second region is healthy, shifting traffic", stored=False)
        with _serve(h) as server:
            pinned = _post(server.base_url, h.event(stored))
            again = _post(server.base_url, h.event(stored))
            collected = _post(server.base_url, h.event(fetched))
            bystander = _post(server.base_url, h.event(stored, operator="ou_someone"))
            unpinned = _post(server.base_url, h.event(stored, removed=True))
            malformed = h.event(stored)
            malformed["event"]["reaction_type"] = {"emoji_type": ""}
            bad = _post(server.base_url, malformed)
            forged = _post(server.base_url, h.event(stored), key="not-the-key")
            metrics = httpx.get(f"{server.base_url}/metrics").text
    assert (pinned.status, pinned.body) == (200, {"status": "accepted"})
    assert (again.status, again.body) == (200, {"status": "ignored", "reason": "duplicate"})
    assert (collected.status, collected.body) == (200, {"status": "accepted"})
    assert bystander.body == {"status": "ignored", "reason": "not_curator"}
    assert (unpinned.status, unpinned.body) == (200, {"status": "accepted"})
    assert (bad.status, bad.body["reason"]) == (400, "bad_emoji_type")
    assert (forged.status, forged.body["reason"]) == (401, "bad_signature")
    assert "timeline_pins_created_total 2.0" in metrics
    assert "timeline_pins_removed_total 1.0" in metrics
    assert 'timeline_pins_refused_total{reason="not_curator"} 1.0' in metrics
    assert (
        'timeline_lark_events_accepted_total{event_type="im.message.reaction.created_v1"}'
        in metrics
    )
    fetched_entry = h.pin_entry(fetched)
    stored_entry = h.pin_entry(stored)
    assert fetched_entry is not None and fetched_entry.status == "confirmed"
    assert stored_entry is not None and stored_entry.status == "hidden"
    assert len(h.replies()) == 2 and {r.chat_id for r in h.replies()} == {CHAT}


def test_reactions_are_ignored_while_pins_are_off_and_retried_while_lark_is_down(
    engine: Engine,
) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("noted", stored=False)
        with _serve(h, pin_from_chat_enabled=False) as server:
            off = _post(server.base_url, h.event(message_id))
        assert off.body == {"status": "ignored", "reason": "pins_disabled"}
        # Every Lark call answers 429 (the message lookup included): the client gives up.
        h.lark.faults.update(rate_limit_every=1, retry_after_seconds=0)
        with _serve(h, lark_max_attempts=1) as server:
            down = _post(server.base_url, h.event(message_id, at=datetime.now(UTC)))
        assert (down.status, down.body["reason"]) == (503, "lark_unavailable")
        assert h.pin_entry(message_id) is None
