"""Whatever an authenticated sender posts, the receiver answers 2xx or 4xx, never 5xx.

Bodies are signed and encrypted with the right key, so they get past the signature. They range
from arbitrary JSON to real callbacks with one or two fields replaced by arbitrary JSON or
removed, which reaches normalization, the handlers and the database write.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from timeline_pipeline.lark.simulator.signing import signature
from timeline_pipeline_tests.receiver.conftest import Receiver
from timeline_pipeline_tests.receiver.lark_events import (
    ENCRYPT_KEY,
    NOW,
    card_click,
    challenge,
    recall,
    receive,
)

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)

POST = json.dumps({"zh_cn": {"title": "t", "content": [[{"tag": "at", "user_id": "@_user_1"}]]}})
CALLBACKS = [
    receive("om_1", "db primary is down"),
    receive("om_2", msg_type="post", content=POST),
    receive("om_3", msg_type="file", content=json.dumps({"file_key": "f", "file_name": "log"})),
    receive("om_4", chat_type="p2p"),
    receive("om_5", chat_id="oc_unbound"),
    recall("om_1"),
    card_click(),
    challenge(),
]


def _slots(value: Any) -> Iterator[tuple[Any, Any]]:
    """Every (container, key) pair in a JSON document, depth first."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield value, key
            yield from _slots(child)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield value, index
            yield from _slots(child)


@st.composite
def damaged_callbacks(draw: st.DrawFn) -> Any:
    payload = copy.deepcopy(draw(st.sampled_from(CALLBACKS)))
    for _ in range(draw(st.integers(min_value=1, max_value=2))):
        slots = list(_slots(payload))
        if not slots:
            break
        container, key = draw(st.sampled_from(slots))
        if draw(st.booleans()):
            container[key] = draw(json_values)
        else:
            del container[key]
    return payload


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(payload=st.one_of(json_values, damaged_callbacks(), st.sampled_from(CALLBACKS)))
def test_any_signed_json_gets_a_2xx_or_4xx(receiver: Receiver, payload: Any) -> None:
    response = receiver.post(payload)

    answer = response.json()
    event(f"{response.status_code} {answer.get('reason', answer.get('status', 'challenge'))}")
    assert 200 <= response.status_code < 500, answer
    assert response.status_code < 300 or answer["status"] == "rejected"


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=st.binary(max_size=300))
def test_any_signed_bytes_get_a_2xx_or_4xx(receiver: Receiver, body: bytes) -> None:
    timestamp = str(int(NOW.timestamp()))
    headers = {
        "X-Lark-Request-Timestamp": timestamp,
        "X-Lark-Request-Nonce": "n",
        "X-Lark-Signature": signature(timestamp, "n", ENCRYPT_KEY, body),
    }

    response = receiver.post_raw(body, headers)

    assert 200 <= response.status_code < 500
