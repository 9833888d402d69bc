"""Files served with a content-hash ETag (`web/static.py`): cacheable for good, `304` for the
version the browser holds, a plain `404` for a name that is not a file."""

from __future__ import annotations

import hashlib

from starlette.requests import Request

from timeline_pipeline.web.static import StaticFile, static_response

CSS = StaticFile.of(b"body { margin: 0 }", "text/css")


def _request(etag: str | None = None) -> Request:
    headers = [] if etag is None else [(b"if-none-match", etag.encode())]
    scope = {"type": "http", "method": "GET", "path": "/ui/static/ui.css", "headers": headers}
    return Request(scope)


def test_the_etag_is_the_start_of_the_bodys_hash() -> None:
    assert CSS.etag == f'"{hashlib.sha256(CSS.body).hexdigest()[:16]}"'


def test_a_file_is_served_cacheable_for_good() -> None:
    response = static_response(CSS, _request())

    assert response.status_code == 200
    assert response.body == CSS.body
    assert response.headers["etag"] == CSS.etag
    assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-type"].startswith("text/css")


def test_the_version_the_browser_holds_is_a_304_without_a_body() -> None:
    response = static_response(CSS, _request(CSS.etag))

    assert response.status_code == 304
    assert response.body == b""
    assert response.headers["etag"] == CSS.etag
    assert static_response(CSS, _request('"0000000000000000"')).status_code == 200


def test_a_name_that_is_not_a_file_is_a_plain_404() -> None:
    response = static_response(None, _request())

    assert (response.status_code, response.body) == (404, b"not found")
