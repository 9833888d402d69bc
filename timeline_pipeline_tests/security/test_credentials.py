"""The page's credential rules, as a table: the CSRF token, the same-origin check, Secure."""

from __future__ import annotations

import pytest

from timeline_pipeline.security.credentials import (
    csrf_token,
    csrf_valid,
    expected_origin,
    hash_secret,
    new_secret,
    same_origin,
    secure_request,
)


def test_secrets_are_long_random_and_stored_only_as_their_hash() -> None:
    first, second = new_secret(), new_secret()
    assert first != second and len(first) >= 43
    assert hash_secret(first) != first and len(hash_secret(first)) == 64
    assert hash_secret(first) == hash_secret(first)


def test_the_csrf_token_belongs_to_its_session_only() -> None:
    mine, theirs = new_secret(), new_secret()
    assert csrf_valid(mine, csrf_token(mine))
    assert not csrf_valid(mine, csrf_token(theirs))
    assert not csrf_valid(mine, None)
    assert not csrf_valid(mine, "")
    assert not csrf_valid(mine, csrf_token(mine) + "x")
    assert csrf_token(mine) not in mine


@pytest.mark.parametrize(
    ("scheme", "forwarded", "secure"),
    [
        ("http", None, False),
        ("https", None, True),
        ("http", "https", True),
        ("http", "https, http", True),
        ("https", "http", False),
    ],
)
def test_a_cookie_is_secure_when_the_browser_came_over_https(
    scheme: str, forwarded: str | None, secure: bool
) -> None:
    assert secure_request(scheme, forwarded) is secure


@pytest.mark.parametrize(
    ("origin", "referer", "allowed"),
    [
        ("http://127.0.0.1:8080", None, True),
        ("HTTP://127.0.0.1:8080", None, True),
        ("http://127.0.0.1:9999", None, False),
        ("https://127.0.0.1:8080", None, False),
        ("http://evil.example", "http://127.0.0.1:8080/ui/workspaces/w", False),
        (None, "http://127.0.0.1:8080/ui/workspaces/w", True),
        (None, "http://evil.example/ui/workspaces/w", False),
        ("null", None, False),
        (None, None, False),
        (None, "not a url", False),
    ],
)
def test_a_change_must_come_from_the_pages_own_origin(
    origin: str | None, referer: str | None, allowed: bool
) -> None:
    expected = expected_origin("http", "127.0.0.1:8080", None)
    assert expected == "http://127.0.0.1:8080"
    assert same_origin(origin, referer, expected) is allowed


def test_behind_an_https_proxy_the_expected_origin_is_https() -> None:
    assert expected_origin("http", "timeline.example", "https") == "https://timeline.example"
    assert expected_origin("http", None, None) is None
    assert not same_origin("http://x", None, None)
