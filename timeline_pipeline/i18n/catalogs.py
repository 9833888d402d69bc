"""The message catalogs: gettext `.po` files under `locale/`, compiled by Babel (docs/i18n.md).

English is the source language: its strings are the msgids in the code and templates, so `en`
needs no catalog. Every other locale has one `.po` file per domain (one domain per surface a
person reads, so that each surface's strings are kept and reviewed together). The `.po` files
are the only copy: they are compiled in memory on first use (Babel's `write_mo`), so a wheel
ships text a translator can edit, and no compiled `.mo` file can drift from its source.
`EXTRACTION` says which sources feed which domain; a test extracts them with Babel and fails
when a catalog misses a string the code uses (timeline_pipeline_tests/i18n/test_catalogs.py).
"""

from __future__ import annotations

import gettext
import io
from enum import StrEnum
from functools import cache
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import Translations

from timeline_pipeline.i18n.locales import Locale

__all__ = ["CATALOG_ROOT", "EXTRACTION", "Domain", "catalog_path", "translations"]

CATALOG_ROOT = Path(__file__).with_name("locale")


class Domain(StrEnum):
    """One catalog per surface a person reads."""

    PAGE = "page"
    """The timeline page: templates and the page's own labels (`ui/`)."""
    CHAT = "chat"
    """What the bot writes in the chat: review cards, their toasts, pin replies and cards."""
    SUMMARY = "summary"
    """The deterministic summary's labels and sentences."""
    EXPORT = "export"
    """The Markdown export of a timeline."""
    LABELS = "labels"
    """Category and status names, shared by every surface (`i18n/labels.py`)."""
    DEMO = "demo"
    """What `timeline-pipeline demo` prints: its headings and pointers (`demo/`)."""
    REPORT = "report"
    """The incident report: its Markdown and section titles (`report/render.py`, docs/report.md)."""


EXTRACTION: dict[Domain, tuple[tuple[str, str], ...]] = {
    Domain.PAGE: (("ui/**.py", "python"), ("ui/templates/**.html", "jinja2")),
    Domain.CHAT: (
        ("review_cards/**.py", "python"),
        ("pins/**.py", "python"),
        ("report/publisher.py", "python"),
    ),
    Domain.SUMMARY: (("summary/**.py", "python"),),
    Domain.EXPORT: (("curation/export.py", "python"),),
    Domain.LABELS: (("i18n/labels.py", "python"),),
    Domain.DEMO: (("demo/**.py", "python"),),
    Domain.REPORT: (("report/render.py", "python"),),
}
"""Babel's method map per domain, relative to the `timeline_pipeline` package: the sources whose
`gettext`/`ngettext`/`_` calls (and `{% trans %}` blocks) are that domain's msgids."""


def catalog_path(domain: Domain, locale: Locale) -> Path:
    """Where the `.po` file of `domain` in `locale` lives (it may not exist yet)."""
    return CATALOG_ROOT / locale.babel_name / "LC_MESSAGES" / f"{domain.value}.po"


@cache
def translations(domain: Domain, locale: Locale) -> gettext.NullTranslations:
    """The compiled catalog of `domain` in `locale`; English (or a missing file) translates
    nothing, so every string falls back to its English msgid."""
    path = catalog_path(domain, locale)
    if locale is Locale.EN or not path.is_file():
        return gettext.NullTranslations()
    with path.open("rb") as source:
        catalog = read_po(source, locale=locale.babel_name, domain=domain.value)
    compiled = io.BytesIO()
    write_mo(compiled, catalog, use_fuzzy=False)
    compiled.seek(0)
    return Translations(compiled, domain=domain.value)
