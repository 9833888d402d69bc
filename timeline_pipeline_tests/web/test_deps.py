"""The request dependencies (`web/deps.py`): each provider reads the app's resources, and
`resolve`, for code that runs before FastAPI's dependency solving, honours the same
`app.dependency_overrides` a test sets. Overriding through a real route is in
`api/test_api_dependencies.py`."""

from __future__ import annotations

from types import SimpleNamespace

from fastapi import FastAPI
from starlette.requests import Request

from timeline_pipeline.web.deps import get_cursors, get_engine, get_settings, resolve


def _request(resources: object) -> Request:
    app = FastAPI()
    app.state.resources = resources
    return Request({"type": "http", "method": "GET", "path": "/", "headers": [], "app": app})


def test_the_providers_read_the_apps_resources() -> None:
    resources = SimpleNamespace(settings="settings", engine="engine", cursors="cursors")
    request = _request(resources)

    assert get_settings(request) == "settings"
    assert get_engine(request) == "engine"
    assert get_cursors(request) == "cursors"


def test_resolve_honours_an_override_with_or_without_the_request() -> None:
    request = _request(SimpleNamespace(engine="the app's engine"))
    overrides = request.app.dependency_overrides

    assert resolve(request, get_engine) == "the app's engine"
    overrides[get_engine] = lambda: "an override"
    assert resolve(request, get_engine) == "an override"
    overrides[get_engine] = lambda seen: f"an override for {seen.url.path}"
    assert resolve(request, get_engine) == "an override for /"
