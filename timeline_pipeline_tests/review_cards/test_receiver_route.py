"""`POST /lark/events` answers card callbacks itself: verified like every event, then a toast
with HTTP 200 for a refusal (so Lark does not redeliver it), counted on `/metrics`."""

from __future__ import annotations

import secrets
from datetime import timedelta
from pathlib import Path

import httpx
from pydantic import SecretStr

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.http.app import create_app
from timeline_pipeline.lark.simulator.pusher import send_signed
from timeline_pipeline.lark.simulator.runner import LoopbackUvicorn
from timeline_pipeline.settings import Settings, load_runtime_environment
from timeline_pipeline_tests.review_cards.harness import harness, plan_card, seed_entries

TOKEN = "route-verification-token"
KEY = "route-encrypt-key"


def test_card_callbacks_over_http_get_a_toast_and_a_200_even_when_refused(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'timeline.db'}"
    engine = make_engine(url)
    upgrade(engine)
    with harness(engine) as h:
        ids = seed_entries(engine, h.workspace_id, 1)
        card = plan_card(engine, h.workspace_id, ids, ttl=timedelta(hours=1))
        h.drain()
        runtime = load_runtime_environment().model_copy(
            update={
                "lark_verification_token": SecretStr(TOKEN),
                "lark_encrypt_key": SecretStr(KEY),
                "lark_app_id": h.app_id,
            }
        )
        app = create_app(Settings(h.settings, runtime), engine, card_worker=False)
        with LoopbackUvicorn(app) as server:
            events = f"{server.base_url}/lark/events"

            def post(payload: dict[str, object]) -> httpx.Response | object:
                payload["header"]["token"] = TOKEN  # type: ignore[index]
                return send_signed(events, payload, encrypt_key=KEY)

            refused = post(h.payload(card, ids[0], "confirm", value={"t": "x", "e": ids[0]}))
            admitted = post(h.payload(card, ids[0], "confirm"))
            forged = post(
                h.payload(
                    card,
                    ids[0],
                    "confirm",
                    value={"t": secrets.token_hex(8), "e": ids[0], "a": "confirm"},
                )
            )
            metrics = httpx.get(f"{server.base_url}/metrics").text
    assert (refused.status, refused.body["toast"]["type"]) == (200, "error")  # type: ignore[attr-defined]
    assert (admitted.status, admitted.body["toast"]["type"]) == (200, "success")  # type: ignore[attr-defined]
    assert admitted.body["card"]["type"] == "raw"  # type: ignore[attr-defined]
    assert (forged.status, forged.body["toast"]["type"]) == (200, "error")  # type: ignore[attr-defined]
    assert 'timeline_review_card_callbacks_refused_total{reason="malformed_value"} 1.0' in metrics
    assert 'timeline_review_card_callbacks_refused_total{reason="forged_token"} 1.0' in metrics
    assert 'timeline_review_card_callbacks_total{outcome="admitted"} 1.0' in metrics
    assert h.admissions() == 1
    engine.dispose()
