"""The one JSON encoding of `serve`'s answers (`web/responses.py`): ASCII-only, so a lone
surrogate a client sent (and the receiver echoes) encodes instead of failing with a 500, and a
JSON parser reads the same string back."""

from __future__ import annotations

import json

import pytest

from timeline_pipeline.web.responses import SafeJSONResponse, encode_json


def test_anything_outside_ascii_is_escaped_and_reads_back_the_same() -> None:
    content = {"challenge": "\ud800", "title": "数据库切换", "n": 1}

    encoded = encode_json(content)

    assert encoded.isascii()
    assert encoded.startswith(b'{"challenge":"\\ud800","title":"\\u6570')
    assert json.loads(encoded) == content


def test_the_response_class_renders_with_it() -> None:
    response = SafeJSONResponse({"status": "ok", "reason": "\udfff"}, status_code=200)

    assert response.body == encode_json({"status": "ok", "reason": "\udfff"})
    assert response.headers["content-type"] == "application/json"


def test_not_a_number_is_refused_rather_than_sent_as_invalid_json() -> None:
    with pytest.raises(ValueError, match="JSON compliant"):
        encode_json({"ratio": float("nan")})
