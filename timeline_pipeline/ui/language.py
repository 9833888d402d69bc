"""The page's words in the workspace's language (docs/i18n.md, docs/timeline-page.md).

Pure. Every string the page shows is an English msgid of the `page` catalog: marked where it is
written (`t.gettext("...")` in a function, `N_("...")` where it is a constant translated when it
is shown), so that Babel extracts it and the catalog test sees it. A signed-in viewer reads the
workspace's `Presentation`; a page shown before anyone is known to belong to a workspace (no
session, another workspace's session, a spent link) has no workspace to ask, and follows the
browser's `Accept-Language` instead, so it still says nothing of any workspace.
"""

from __future__ import annotations

import gettext
from zoneinfo import ZoneInfo

from timeline_pipeline.i18n.catalogs import Domain, translations
from timeline_pipeline.i18n.locales import Locale, Presentation

__all__ = ["N_", "browser_presentation", "page_text"]

_MAX_LANGUAGES = 20
"""Accept-Language entries read: a real browser sends a handful."""
_CHINESE_SIMPLIFIED = ("zh-cn", "zh-sg", "zh-hans")
"""Tags read as `zh-CN`, besides a bare `zh` (and longer tags starting so: `zh-Hans-CN`);
`zh-TW` and `zh-HK` are not."""


def N_(message: str) -> str:
    """Marks `message` for extraction into the `page` catalog; it is translated where shown."""
    return message


def page_text(locale: Locale) -> gettext.NullTranslations:
    """The `page` catalog in `locale` (English translates nothing)."""
    return translations(Domain.PAGE, locale)


def _locale_of_tag(tag: str) -> Locale | None:
    tag = tag.strip().lower().replace("_", "-")
    if tag == "*" or tag == "en" or tag.startswith("en-"):
        return Locale.EN
    if tag == "zh" or any(tag.startswith(name) for name in _CHINESE_SIMPLIFIED):
        return Locale.ZH_CN
    return None


def _quality(parameters: list[str]) -> float:
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "q":
            try:
                quality = float(value)
            except ValueError:
                return 0.0
            return quality if 0.0 <= quality <= 1.0 else 0.0
    return 1.0


def browser_presentation(accept_language: str | None) -> Presentation:
    """The language a browser asks for first among those the page speaks (English when it asks
    for none of them), in UTC: what a page without a workspace is shown in."""
    ranked: list[tuple[float, int, Locale]] = []
    for position, item in enumerate((accept_language or "").split(",")[:_MAX_LANGUAGES]):
        tag, *parameters = item.split(";")
        locale = _locale_of_tag(tag)
        quality = _quality(parameters)
        if locale is not None and quality > 0:
            ranked.append((-quality, position, locale))
    chosen = min(ranked)[2] if ranked else Locale.EN
    return Presentation(chosen, ZoneInfo("UTC"))
