"""Callback authentication, held to lark-oapi's own dispatcher as the reference.

A request built the way Lark builds it (signed, AES-encrypted) passes; changing any single byte
of the body, the signature, the timestamp or the nonce makes it fail, here and in the SDK.
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import lark_oapi as lark
import pytest
from lark_oapi.core.model import RawRequest

from timeline_pipeline.lark.simulator.signing import SignedRequest
from timeline_pipeline.receiver.outcomes import Rejected
from timeline_pipeline.receiver.verification import CallbackVerifier, Credentials, LarkHeaders
from timeline_pipeline_tests.receiver.conftest import FakeClock, Receiver
from timeline_pipeline_tests.receiver.lark_events import (
    ENCRYPT_KEY,
    TOKEN,
    Signing,
    challenge,
    receive,
    sign,
)

TS = "X-Lark-Request-Timestamp"
NONCE = "X-Lark-Request-Nonce"
SIG = "X-Lark-Signature"


def verifier(clock: FakeClock | None = None) -> CallbackVerifier:
    return CallbackVerifier(
        Credentials(TOKEN, ENCRYPT_KEY), max_skew=timedelta(minutes=5), clock=clock or FakeClock()
    )


def sdk_accepts(request: SignedRequest) -> bool:
    """lark-oapi's verdict: its dispatcher answers 200 only for an authentic callback."""
    seen: list[object] = []
    handler = (
        lark.EventDispatcherHandler.builder(ENCRYPT_KEY, TOKEN)
        .register_p2_im_message_receive_v1(seen.append)
        .build()
    )
    raw = RawRequest()
    raw.uri = "/lark/events"
    raw.headers = LarkHeaders.from_mapping(request.headers).canonical()
    raw.body = request.body
    return bool(handler.do(raw).status_code == 200 and seen)


def ours_accepts(request: SignedRequest) -> bool:
    try:
        verifier().verify(request.body, LarkHeaders.from_mapping(request.headers))
    except Rejected as refusal:
        assert refusal.status == 401, refusal.reason
        return False
    return True


def flip(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]


def one_byte_changes(request: SignedRequest) -> Iterator[tuple[str, SignedRequest]]:
    """Every variant of the request that differs in exactly one byte of one part."""
    body = request.body
    for i in range(len(body)):
        yield f"body[{i}]", replace(request, body=flip(body, i))
    for name, alphabet in ((SIG, "0123456789abcdef"), (TS, string.digits), (NONCE, "0123456789ab")):
        value = request.headers[name]
        for i, char in enumerate(value):
            other = next(c for c in alphabet if c != char)
            headers = {**request.headers, name: value[:i] + other + value[i + 1 :]}
            yield f"{name}[{i}]", replace(request, headers=headers)


def test_a_signed_encrypted_callback_passes_here_and_in_the_sdk() -> None:
    request = sign(receive("om_1"))

    verified = verifier().verify(request.body, LarkHeaders.from_mapping(request.headers))

    assert verified.event_type == "im.message.receive_v1"
    assert verified.payload["event"]["message"]["message_id"] == "om_1"
    assert sdk_accepts(request)


def test_every_single_byte_change_is_refused_here_and_in_the_sdk() -> None:
    request = sign(receive("om_1"))
    variants = list(one_byte_changes(request))
    assert len(variants) > len(request.body) + 64 + 10 + 10

    accepted_here = [name for name, variant in variants if ours_accepts(variant)]
    # The SDK is slower; every 5th variant is enough to show that it agrees.
    accepted_by_sdk = [name for name, variant in variants[::5] if sdk_accepts(variant)]

    assert accepted_here == []
    assert accepted_by_sdk == []


def test_header_names_are_read_in_any_case_and_handed_on_in_lark_case() -> None:
    request = sign(receive("om_1"))
    lowered = {name.lower(): value for name, value in request.headers.items()}
    shouted = {name.upper(): value for name, value in request.headers.items()}

    assert LarkHeaders.from_mapping(lowered) == LarkHeaders.from_mapping(shouted)
    canonical = LarkHeaders.from_mapping(lowered).canonical()
    assert set(canonical) == {TS, NONCE, SIG}
    assert sdk_accepts(replace(request, headers=lowered))


def test_a_plain_signed_body_is_accepted_when_the_sender_chose_not_to_encrypt() -> None:
    request = sign(receive("om_1"), Signing(encrypt_body=False))

    assert b'"message_id":"om_1"' in request.body
    assert ours_accepts(request)


def test_skew_is_measured_against_the_receiver_clock_both_ways() -> None:
    clock = FakeClock()
    request = sign(receive("om_1"))
    headers = LarkHeaders.from_mapping(request.headers)

    clock.advance(timedelta(minutes=4, seconds=59))
    verifier(clock).verify(request.body, headers)
    clock.advance(timedelta(seconds=2))
    with pytest.raises(Rejected, match="stale_timestamp"):
        verifier(clock).verify(request.body, headers)


def test_without_an_encrypt_key_the_token_alone_authenticates() -> None:
    plain = CallbackVerifier(Credentials(TOKEN), max_skew=timedelta(minutes=5), clock=FakeClock())
    unencrypted = Signing(encrypt_key=None)
    good = sign(receive("om_1"), unencrypted)
    payload = receive("om_1")
    forged = sign({**payload, "header": {**payload["header"], "token": "guess"}}, unencrypted)
    encrypted = sign(receive("om_1"))

    assert plain.verify(good.body, LarkHeaders.from_mapping(good.headers)).event_id
    with pytest.raises(Rejected, match="bad_token"):
        plain.verify(forged.body, LarkHeaders.from_mapping(forged.headers))
    with pytest.raises(Rejected, match="undecryptable"):  # encrypted, but we hold no key
        plain.verify(encrypted.body, LarkHeaders.from_mapping(encrypted.headers))


def test_a_verification_token_is_required() -> None:
    with pytest.raises(ValueError, match="LARK_VERIFICATION_TOKEN"):
        Credentials("")


def test_url_verification_needs_the_token_too() -> None:
    good = sign(challenge("c-1"))
    bad = sign(challenge("c-1", token="guess"))

    assert verifier().verify(good.body, LarkHeaders.from_mapping(good.headers)).challenge == "c-1"
    with pytest.raises(Rejected, match="bad_token"):
        verifier().verify(bad.body, LarkHeaders.from_mapping(bad.headers))


def test_over_http_an_altered_byte_in_any_part_is_refused_and_writes_nothing(
    receiver: Receiver,
) -> None:
    request = sign(receive("om_1"))
    altered = {
        "body": replace(request, body=flip(request.body, len(request.body) // 2)),
        "signature": replace(request, headers={**request.headers, SIG: "0" * 64}),
        "timestamp": replace(
            request, headers={**request.headers, TS: str(int(request.headers[TS]) - 1)}
        ),
        "nonce": replace(request, headers={**request.headers, NONCE: "nonce-0123456788"}),
    }

    for part, variant in altered.items():
        response = receiver.post_raw(variant.body, variant.headers)
        assert response.status_code == 401, part
        assert response.json()["reason"] == "bad_signature", part
    assert receiver.rows() == []
    assert receiver.post_raw(request.body, request.headers).status_code == 200
    assert len(receiver.rows()) == 1
