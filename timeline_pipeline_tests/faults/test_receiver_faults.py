"""The receiver process under attack: killed with SIGKILL mid-burst, and fed forged requests.

A killed receiver loses whatever it had not acknowledged; reconciliation (the product's
Reconciler through the real lark-oapi client against the local Lark) must bring back exactly
that, leaving what was acknowledged untouched. A forged or malformed request must be refused
with a reasoned 4xx, leave the process healthy and write nothing.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from timeline_pipeline.ingest.eligibility import AUTOMATIC
from timeline_pipeline.lark.client_factory import build_client
from timeline_pipeline.lark.simulator import (
    ChatStore,
    SimulatorServer,
    make_chat_messages,
    message_receive_event,
)
from timeline_pipeline.lark.simulator.signing import (
    HEADER_NONCE,
    HEADER_SIGNATURE,
    HEADER_TIMESTAMP,
    SignedRequest,
    encrypt,
    sign_payload,
    signature,
)
from timeline_pipeline.reconcile.planning import Mode
from timeline_pipeline.reconcile.runner import Reconciler
from timeline_pipeline.reconcile.targets import Target
from timeline_pipeline.settings import RuntimeEnvironment, load_timeline_settings
from timeline_pipeline.store import workspaces
from timeline_pipeline_tests.faults.support_evidence import (
    all_evidence,
    bound_workspace,
    expected_records,
    facts,
    message_id_of,
    rows_by_message,
    sync_state_count,
    tally,
)
from timeline_pipeline_tests.faults.support_serve import (
    Answer,
    Burst,
    LarkApp,
    ServeProcess,
    client,
    deliver,
    describe,
    labels,
    metric_value,
    post,
)

WORKSPACE = "inc-receiver"
CHAT = "oc_fault_receiver"


@pytest.fixture
def bound(pg_url: str) -> Iterator[Engine]:
    """The fresh PostgreSQL database with a firing workspace bound to CHAT."""
    with bound_workspace(pg_url, WORKSPACE, CHAT) as made:
        yield made


# --- kill -9 mid-burst ----------------------------------------------------------------------

BURST = 300
KILL_AFTER_ACKS = BURST // 2
HELD_UNTIL_KILLED = 2 * BURST // 3
"""Events from this index on wait for the kill, so it certainly lands mid-burst."""


@pytest.mark.fault
@pytest.mark.slow
def test_a_receiver_killed_mid_burst_loses_nothing_once_reconciliation_has_run(
    pg_url: str, bound: Engine, tmp_path: Path, fault_report: Callable[[str], None]
) -> None:
    app = LarkApp.fresh()
    items = make_chat_messages(CHAT, datetime.now(UTC) - timedelta(hours=2), BURST, seed=41)
    events = [message_receive_event(item, app.identity) for item in items]
    settings = load_timeline_settings(
        enabled=True, event_ingestion_enabled=True, reconciliation_enabled=True
    )
    killed = threading.Event()

    def hold_back(index: int) -> None:
        if index >= HELD_UNTIL_KILLED:
            assert killed.wait(120), "the receiver was never killed"

    with SimulatorServer(ChatStore(items), app_id=app.app_id, app_secret=app.app_secret) as lark:
        runtime = app.runtime(pg_url, lark.base_url)
        with ServeProcess(runtime, tmp_path) as serve:
            serve.start()
            burst = Burst(serve.events_url, app, events, concurrency=8, before_send=hold_back)
            burst.start()
            try:
                assert burst.wait_accepted(KILL_AFTER_ACKS, timeout=120), "the burst stalled"
                serve.kill()
            finally:
                killed.set()
            answers = burst.join()
        before = rows_by_message(all_evidence(bound))

        reconciler = Reconciler(
            bound,
            build_client(settings, RuntimeEnvironment.model_validate(runtime)),
            settings,
            app_id=app.app_id,
        )
        with bound.connect() as conn:
            target = Target(workspaces.require(conn, WORKSPACE), CHAT)
        run = reconciler.run([target], mode=Mode.INCREMENTAL, scope=AUTOMATIC)
    chat = run.chats[0]
    after = all_evidence(bound)

    acked = {items[i]["message_id"] for i, answer in enumerate(answers) if answer.accepted}
    failed = [answer for answer in answers if not answer.accepted]
    # The kill cut the burst: some events were acknowledged, the rest never were.
    assert KILL_AFTER_ACKS <= len(acked) < BURST
    assert all(answer.status is None for answer in failed), describe(labels(failed))
    # Acknowledged means committed: those rows were there before reconciliation ran.
    assert acked <= set(before)
    assert chat.ok, chat.error
    assert chat.upserts.inserted == BURST - len(before)
    assert (chat.upserts.updated, chat.upserts.duplicate) == (0, len(before))
    expected = expected_records(
        items, WORKSPACE, app_id=app.app_id, max_text_chars=settings.max_message_chars
    )
    counted = tally(after, expected)
    assert counted.exact, counted.describe()
    # Reconciliation recognised everything committed before the kill and rewrote none of it.
    stored = rows_by_message(after)
    changed = [key for key, row in before.items() if facts(stored[key]) != facts(row)]
    assert changed == []

    unacked_committed = len(set(before) - acked)
    fault_report(
        f"injected: kill -9 of the receiver after {len(acked)}/{BURST} events acknowledged "
        f"({len(failed)} deliveries failed: {describe(labels(failed))}); "
        f"{unacked_committed} committed but never acknowledged; reconciliation fetched "
        f"{chat.messages} messages in {chat.pages} pages ({chat.upserts.inserted} recovered, "
        f"{chat.upserts.duplicate} already stored); counted: {counted.describe()}, "
        f"{len(changed)} acknowledged rows changed"
    )


# --- forged and malformed requests ------------------------------------------------------------

PER_CLASS = 6
OVERSIZED = 1_048_576 + 64  # the default eventMaxBodyBytes is 1 MiB
Request = tuple[bytes, dict[str, str]]


@dataclass(frozen=True)
class Attack:
    name: str
    status: int
    reason: str
    build: Callable[[int], Request]
    """Request number i of this class (each about a distinct message of the bound chat)."""


class Forger:
    """Builds requests that look like Lark's but are wrong in exactly one way."""

    def __init__(self, app: LarkApp) -> None:
        self.app = app
        self.other_key = "not-the-" + app.encrypt_key
        self.start = datetime.now(UTC) - timedelta(minutes=30)

    def event(self, name: str, index: int, **header: Any) -> dict[str, Any]:
        """A receive event for the bound chat (so it would be stored if it got through)."""
        item = make_chat_messages(CHAT, self.start, 1, seed=index)[0]
        item["message_id"] = f"om_forged_{name}_{index}"
        payload = message_receive_event(item, self.app.identity)
        payload["header"].update(header)
        return payload

    def plain(self, payload: dict[str, Any]) -> bytes:
        return json.dumps(payload, separators=(",", ":")).encode()

    def signed(self, body: bytes, *, timestamp: str | None = None) -> Request:
        """`body` as is, correctly signed: the check under test is the one after the signature."""
        stamp = timestamp or str(int(datetime.now(UTC).timestamp()))
        nonce = "n" * 16
        return body, {
            "Content-Type": "application/json",
            HEADER_TIMESTAMP: stamp,
            HEADER_NONCE: nonce,
            HEADER_SIGNATURE: signature(stamp, nonce, self.app.encrypt_key, body),
        }

    def sealed(self, payload: dict[str, Any]) -> Request:
        """What Lark sends: encrypted and signed with the app's key."""
        request: SignedRequest = sign_payload(payload, encrypt_key=self.app.encrypt_key)
        return request.body, request.headers

    def encrypted_with(self, key: str, payload: dict[str, Any]) -> bytes:
        return json.dumps({"encrypt": encrypt(self.plain(payload), key)}).encode()

    def without(self, header: str, index: int) -> Request:
        body, headers = self.sealed(self.event(f"no-{header.lower()}", index))
        return body, {k: v for k, v in headers.items() if k != header}

    def replayed(self, index: int) -> Request:
        """Headers captured from a genuine request, put on another (genuine-looking) body."""
        _, captured = self.sealed(self.event("captured", index))
        body, _ = self.sealed(self.event("replayed", index))
        return body, captured

    def attacks(self) -> list[Attack]:
        stale = str(int((datetime.now(UTC) - timedelta(minutes=10)).timestamp()))
        future = str(int((datetime.now(UTC) + timedelta(minutes=10)).timestamp()))
        return [
            Attack(
                "bad signature (signed with another key)",
                401,
                "bad_signature",
                lambda i: _sealed_with(self.other_key, self.event("badsig", i)),
            ),
            Attack(
                "wrong verification token",
                401,
                "bad_token",
                lambda i: self.sealed(self.event("token", i, token="forged-token")),
            ),
            Attack(
                "encrypted with the wrong key, signed with the right one",
                400,
                "undecryptable",
                lambda i: self.signed(self.encrypted_with(self.other_key, self.event("key", i))),
            ),
            Attack(
                "stale timestamp (10 min old)",
                401,
                "stale_timestamp",
                lambda i: self.signed(
                    self.encrypted_with(self.app.encrypt_key, self.event("stale", i)),
                    timestamp=stale,
                ),
            ),
            Attack(
                "timestamp 10 min in the future",
                401,
                "stale_timestamp",
                lambda i: self.signed(
                    self.encrypted_with(self.app.encrypt_key, self.event("future", i)),
                    timestamp=future,
                ),
            ),
            Attack(
                "truncated JSON",
                400,
                "malformed_json",
                lambda i: self.signed(self.sealed(self.event("cut", i))[0][:-7]),
            ),
            Attack(
                "invalid JSON inside the encryption",
                400,
                "malformed_json",
                lambda i: self.signed(
                    json.dumps({"encrypt": encrypt(b"{not json", self.app.encrypt_key)}).encode()
                ),
            ),
            Attack(
                "not JSON at all",
                400,
                "malformed_json",
                lambda i: self.signed(b"\x00\xffgarbage" * (i + 1)),
            ),
            Attack(
                "oversized body",
                413,
                "body_too_large",
                lambda i: self.signed(b"{" + b" " * OVERSIZED + b"}"),
            ),
            Attack(
                "form-encoded body (wrong content type)",
                400,
                "malformed_json",
                lambda i: _with_type(
                    self.signed(f"message_id=om_form_{i}&chat_id={CHAT}&text=x".encode()),
                    "application/x-www-form-urlencoded",
                ),
            ),
            Attack(
                "multipart body (wrong content type)",
                400,
                "malformed_json",
                lambda i: _with_type(
                    self.signed(b'--b\r\nContent-Disposition: form-data; name="e"\r\n\r\n{}\r\n'),
                    "multipart/form-data; boundary=b",
                ),
            ),
            Attack(
                "missing signature header",
                401,
                "missing_signature",
                lambda i: self.without(HEADER_SIGNATURE, i),
            ),
            Attack(
                "missing nonce header",
                401,
                "missing_signature",
                lambda i: self.without(HEADER_NONCE, i),
            ),
            Attack(
                "missing timestamp header",
                401,
                "missing_signature",
                lambda i: self.without(HEADER_TIMESTAMP, i),
            ),
            Attack(
                "no headers at all",
                401,
                "missing_signature",
                lambda i: (self.sealed(self.event("bare", i))[0], {}),
            ),
            Attack(
                "replay of captured headers with a changed body",
                401,
                "bad_signature",
                self.replayed,
            ),
            Attack(
                "unknown event type (documented: 200 ignored)",
                200,
                "unknown_event_type",
                lambda i: self.sealed(self.event("unknown", i, event_type="im.chat.disbanded_v1")),
            ),
            Attack(
                "unbound chat (documented: 200 ignored)",
                200,
                "unbound_chat",
                lambda i: self.sealed(_elsewhere(self.event("unbound", i))),
            ),
        ]


def _sealed_with(key: str, payload: dict[str, Any]) -> Request:
    request = sign_payload(payload, encrypt_key=key)
    return request.body, request.headers


def _with_type(request: Request, content_type: str) -> Request:
    body, headers = request
    return body, {**headers, "Content-Type": content_type}


def _elsewhere(payload: dict[str, Any]) -> dict[str, Any]:
    payload["event"]["message"]["chat_id"] = "oc_fault_not_bound"
    return payload


@pytest.mark.fault
@pytest.mark.slow
def test_forged_and_malformed_requests_are_refused_and_write_nothing(
    pg_url: str, bound: Engine, tmp_path: Path, fault_report: Callable[[str], None]
) -> None:
    app = LarkApp.fresh()
    forger = Forger(app)
    genuine = [forger.event("genuine", i) for i in range(3)]
    attacks = forger.attacks()
    answers: dict[str, list[Answer]] = {}

    with ServeProcess(app.runtime(pg_url), tmp_path) as serve:
        serve.start()
        with client(4) as http:
            first = [deliver(http, serve.events_url, genuine[0], app)]
            for attack in attacks:
                answers[attack.name] = [
                    post(http, serve.events_url, *attack.build(i)) for i in range(PER_CLASS)
                ]
            # Still serving the real Lark afterwards, and still healthy.
            last = [deliver(http, serve.events_url, payload, app) for payload in genuine[1:]]
        health = serve.health()
        metrics = serve.metrics()
        alive = serve.running

    assert [answer.label for answer in first + last] == ["200 accepted"] * len(genuine)
    verdicts = {name: labels(got) for name, got in answers.items()}
    assert verdicts == {
        attack.name: Counter({f"{attack.status} {attack.reason}": PER_CLASS}) for attack in attacks
    }
    assert alive
    assert health == (200, {"status": "ok", "database": "ok"})
    refused = Counter({a.reason: 0 for a in attacks if a.status >= 400})
    for attack in attacks:
        if attack.status >= 400:
            refused[attack.reason] += PER_CLASS
    for reason, count in refused.items():
        assert metric_value(metrics, "timeline_lark_events_failed_total", reason=reason) == count
    stored = sorted(message_id_of(row.source_key) for row in all_evidence(bound))
    assert stored == sorted(payload["event"]["message"]["message_id"] for payload in genuine)
    assert sync_state_count(bound) == 0

    ignored = sum(PER_CLASS for attack in attacks if attack.status == 200)
    per_class = "; ".join(
        f"{attack.name}: {sum(verdicts[attack.name].values())}x {attack.status} {attack.reason}"
        for attack in attacks
    )
    fault_report(
        f"injected: {len(attacks) * PER_CLASS} forged or malformed requests in {len(attacks)} "
        f"classes against a real serve process ({per_class}); counted: "
        f"{sum(refused.values())} refused with a 4xx and a JSON reason, "
        f"{ignored} ignored with 200, 0 evidence rows from them "
        f"({len(stored)} rows, all from the {len(genuine)} genuine events), process healthy"
    )
