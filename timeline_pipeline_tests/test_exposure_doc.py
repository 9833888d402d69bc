"""The balancer example of docs/exposure.md forwards what the README says is public and
nothing else: read with nginx's own rules for `location` (an exact match first, else the
longest prefix), every public path reaches `serve` and every internal one answers 404."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "exposure.md"


def _locations() -> dict[tuple[bool, str], str]:
    text = DOC.read_text(encoding="utf-8")
    [block] = re.findall(r"```nginx\n(.*?)```", text, flags=re.S)
    found: dict[tuple[bool, str], str] = {}
    for exact, path, body in re.findall(r"location\s+(=\s+)?(\S+)\s*\{(.*?)\}", block, re.S):
        found[(bool(exact), path)] = body
    return found


def _route(path: str) -> str:
    locations = _locations()
    body = locations.get((True, path))
    if body is None:
        prefixes = [p for exact, p in locations if not exact and path.startswith(p)]
        body = locations[(False, max(prefixes, key=len))]
    return "serve" if "proxy_pass http://receivers" in body else "refused"


def test_the_public_paths_reach_serve_and_the_internal_ones_do_not() -> None:
    public = [
        "/lark/events",
        "/api/workspaces/w1/timeline",
        "/ui/sign-in",
        "/ui/workspaces/w1",
        "/ui/workspaces/w1/entries/3/confirm",
        "/ui/static/ui.css",
    ]
    internal = ["/metrics", "/healthz", "/api/docs", "/api/openapi.json", "/api/docs/assets/x"]
    assert {p: _route(p) for p in public} == dict.fromkeys(public, "serve")
    assert {p: _route(p) for p in internal} == dict.fromkeys(internal, "refused")


def test_the_page_gets_the_browsers_host_and_scheme() -> None:
    ui = _locations()[(False, "/ui/")]
    assert "proxy_set_header Host $host;" in ui
    assert "proxy_set_header X-Forwarded-Proto $scheme;" in ui
