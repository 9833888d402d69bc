"""Every kind of bad or out-of-scope callback: its status, its reason, no row, one metric.

A 4xx is for requests that are not authentic or not well-formed. Authentic callbacks that we
choose not to store get a 200 (Lark would only retry them) and are counted as ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from timeline_pipeline.lark.simulator.signing import encrypt, signature
from timeline_pipeline_tests.receiver.conftest import Receiver
from timeline_pipeline_tests.receiver.lark_events import (
    DEFAULT_SIGNING,
    ENCRYPT_KEY,
    NOW,
    Signing,
    recall,
    receive,
)

TIMESTAMP = str(int(NOW.timestamp()))
NONCE = "nonce-0123456789"


def signed_headers(body: bytes, timestamp: str = TIMESTAMP, nonce: str = NONCE) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-Lark-Request-Timestamp": timestamp,
        "X-Lark-Request-Nonce": nonce,
        "X-Lark-Signature": signature(timestamp, nonce, ENCRYPT_KEY, body),
    }


def raw(body: bytes) -> tuple[bytes, dict[str, str]]:
    """Signed, so that the check under test is the one that fails."""
    return body, signed_headers(body)


def encrypted_raw(plaintext: bytes) -> tuple[bytes, dict[str, str]]:
    return raw(json.dumps({"encrypt": encrypt(plaintext, ENCRYPT_KEY)}).encode())


def event_with(**changes: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def change(payload: dict[str, Any]) -> dict[str, Any]:
        for path, value in changes.items():
            holder = payload
            *parents, leaf = path.split("__")
            for key in parents:
                holder = holder[key]
            if value is None:
                holder.pop(leaf, None)
            else:
                holder[leaf] = value
        return payload

    return change


@dataclass(frozen=True)
class Case:
    name: str
    status: int
    reason: str
    payload: dict[str, Any] | None = None
    signing: Signing = DEFAULT_SIGNING
    request: tuple[bytes, dict[str, str]] | None = None

    @property
    def ignored(self) -> bool:
        return self.status == 200


CASES = [
    Case("malformed json", 400, "malformed_json", request=raw(b'{"schema": "2.0", ')),
    Case("json that is not an object", 400, "malformed_json", request=raw(b"[1, 2, 3]")),
    Case("invalid utf-8", 400, "malformed_json", request=raw(b'{"a": "\xff\xfe"}')),
    Case("undecryptable body", 400, "undecryptable", request=raw(b'{"encrypt": "bm90IGFlcw=="}')),
    Case("encrypted garbage", 400, "malformed_json", request=encrypted_raw(b"not json at all")),
    Case("v1 schema", 400, "unsupported_schema", request=encrypted_raw(b'{"uuid": "x"}')),
    Case(
        "missing event id",
        400,
        "missing_event_id",
        payload=event_with(header__event_id=None)(receive()),
    ),
    Case(
        "missing event type",
        400,
        "missing_event_type",
        payload=event_with(header__event_type=None)(receive()),
    ),
    Case("missing event", 400, "missing_event", payload=event_with(event=None)(receive())),
    Case(
        "missing message id",
        400,
        "missing_message_id",
        payload=event_with(event__message__message_id=None)(receive()),
    ),
    Case(
        "missing chat id",
        400,
        "missing_chat_id",
        payload=event_with(event__message__chat_id=None)(receive()),
    ),
    Case(
        "content that is not json",
        400,
        "bad_content_json",
        payload=event_with(event__message__content="{oops")(receive()),
    ),
    Case(
        "recall without a message id",
        400,
        "missing_message_id",
        payload=event_with(event__message_id=None)(recall()),
    ),
    Case(
        "recall with a bad time",
        400,
        "bad_recall_time",
        payload=event_with(event__recall_time="yesterday")(recall()),
    ),
    Case(
        "wrong verification token",
        401,
        "bad_token",
        payload=event_with(header__token="not-the-token")(receive()),
    ),
    Case(
        "signed with another key",
        401,
        "bad_signature",
        payload=receive(),
        signing=Signing(encrypt_key="someone-else"),
    ),
    Case(
        "unsigned event",
        401,
        "missing_signature",
        request=(json.dumps(receive()).encode(), {"Content-Type": "application/json"}),
    ),
    Case(
        "stale timestamp",
        401,
        "stale_timestamp",
        payload=receive(),
        signing=Signing(timestamp=str(int((NOW - timedelta(minutes=6)).timestamp()))),
    ),
    Case(
        "timestamp from the future",
        401,
        "stale_timestamp",
        payload=receive(),
        signing=Signing(timestamp=str(int((NOW + timedelta(minutes=6)).timestamp()))),
    ),
    Case(
        "timestamp not a number",
        401,
        "bad_timestamp",
        payload=receive(),
        signing=Signing(timestamp="soon"),
    ),
    Case(
        "unknown event type",
        200,
        "unknown_event_type",
        payload=event_with(header__event_type="im.chat.disbanded_v1")(receive()),
    ),
    Case("p2p chat", 200, "not_group_chat", payload=receive(chat_type="p2p")),
    Case("unbound chat", 200, "unbound_chat", payload=receive(chat_id="oc_not_bound")),
    Case(
        "unsupported message type",
        200,
        "unsupported_message_type",
        payload=receive(msg_type="hongbao", content="{}"),
    ),
    Case(
        "message older than the workspace",
        200,
        "before_workspace_created",
        payload=receive(at=NOW - timedelta(hours=2)),
    ),
]


def _send(receiver: Receiver, case: Case) -> Any:
    if case.request is not None:
        return receiver.post_raw(*case.request)
    assert case.payload is not None
    return receiver.post(case.payload, case.signing)


def _counter(receiver: Receiver, case: Case) -> float:
    if case.ignored:
        assert case.payload is not None
        event_type = case.payload["header"]["event_type"]
        label = event_type if event_type.startswith("im.message") else "other"
        return receiver.metric(
            "timeline_lark_events_ignored_total", event_type=label, reason=case.reason
        )
    return receiver.metric("timeline_lark_events_failed_total", reason=case.reason)


def test_every_bad_or_out_of_scope_callback_gets_its_status_and_writes_nothing(
    receiver: Receiver,
) -> None:
    """One receiver for the whole table (cases do not interact: none of them writes)."""
    for case in CASES:
        before = _counter(receiver, case)

        response = _send(receiver, case)

        answer = (response.status_code, response.json())
        verdict = "ignored" if case.ignored else "rejected"
        expected = (case.status, {"status": verdict, "reason": case.reason})
        assert answer == expected, case.name
        assert _counter(receiver, case) == before + 1, case.name
    assert receiver.rows() == []


def test_an_oversized_body_is_refused_before_it_is_read(receiver: Receiver) -> None:
    """The default limit is 1 MiB; declared and chunked bodies are both cut off."""
    body = b"{" + b" " * (1_048_576 + 10) + b"}"

    declared = receiver.post_raw(body, {"Content-Type": "application/json"})
    streamed = receiver.client.post(
        "/lark/events", content=iter([body[:600_000], body[600_000:]]), headers={}
    )

    for response in (declared, streamed):
        assert response.status_code == 413
        assert response.json() == {"status": "rejected", "reason": "body_too_large"}
    assert receiver.metric("timeline_lark_events_failed_total", reason="body_too_large") == 2
    assert receiver.rows() == []


def test_an_unsigned_request_may_only_be_the_url_verification_handshake(
    receiver: Receiver,
) -> None:
    handshake = {"challenge": "c-1", "token": "vt-test-token", "type": "url_verification"}
    encrypted = json.dumps({"encrypt": encrypt(json.dumps(handshake).encode(), ENCRYPT_KEY)})
    wrong_token = json.dumps(
        {"encrypt": encrypt(json.dumps({**handshake, "token": "nope"}).encode(), ENCRYPT_KEY)}
    )

    accepted = receiver.post_raw(encrypted.encode())
    refused = receiver.post_raw(wrong_token.encode())
    garbage = receiver.post_raw(b'{"encrypt": "AAAA"}')

    assert accepted.json() == {"challenge": "c-1"}
    # Every failure without a signature reads the same: no padding oracle on this path.
    assert (refused.status_code, refused.json()["reason"]) == (401, "missing_signature")
    assert (garbage.status_code, garbage.json()["reason"]) == (401, "missing_signature")


def test_a_request_that_changes_nothing_but_its_timestamp_is_a_replay(receiver: Receiver) -> None:
    first = receiver.post(receive("om_1"))
    receiver.clock.advance(timedelta(minutes=5, seconds=1))
    replay = receiver.post(receive("om_2"))  # signed at the original time

    assert first.status_code == 200
    assert (replay.status_code, replay.json()["reason"]) == (401, "stale_timestamp")
    assert [r.source_key.rsplit("/", 1)[1] for r in receiver.rows()] == ["om_1"]
