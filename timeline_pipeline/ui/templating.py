"""The page's Jinja2 environment and static files, both loaded from the package.

Autoescaping is on for every template and undefined names fail loudly, so a chat message or a
model's title always renders as the characters that were typed. The templates' words go through
Jinja2's i18n extension (`{% trans %}`, `_()`); one environment serves workspaces of every
language, so `render` passes the `page` catalog of the request's `Presentation` in the context
(`gettext`, `ngettext`, and `lang` for `<html lang>`) instead of installing one globally
(docs/i18n.md). The static files are read once
and served from memory by `serve` itself: nothing is fetched from anywhere else at run time.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any, Final

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.ui.language import page_text
from timeline_pipeline.web.static import StaticFile

__all__ = ["HTMX_FILE", "StaticFile", "render", "static_file", "static_url"]

HTMX_FILE: Final = "htmx-2.0.11.min.js"
_STATIC_TYPES: Final = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}


@cache
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("timeline_pipeline.ui", "templates"),
        extensions=["jinja2.ext.i18n"],
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["static_url"] = static_url
    env.globals["htmx_file"] = HTMX_FILE
    return env


def render(template: str, presentation: Presentation, **context: Any) -> str:
    """`template` in the presentation's language (its `{% trans %}` blocks and `_()` calls)."""
    text = page_text(presentation.locale)
    return (
        _environment()
        .get_template(template)
        .render(
            gettext=text.gettext,
            ngettext=text.ngettext,
            lang=presentation.locale.value,
            **context,
        )
    )


@cache
def static_file(name: str) -> StaticFile | None:
    """A file of the package's static folder by its plain name, else None (no paths)."""
    if "/" in name or "\\" in name or name.startswith("."):
        return None
    suffix = name[name.rfind(".") :] if "." in name else ""
    media_type = _STATIC_TYPES.get(suffix)
    if media_type is None:
        return None
    entry = resources.files("timeline_pipeline.ui").joinpath("static", name)
    if not entry.is_file():
        return None
    return StaticFile.of(entry.read_bytes(), media_type)


def static_url(name: str) -> str:
    """The file's URL with its content hash, so browsers may cache it for good."""
    found = static_file(name)
    version = found.etag.strip('"') if found else "0"
    return f"/ui/static/{name}?v={version}"
