"""Every string a person reads is in every catalog, and every catalog entry is still used.

The msgids are extracted from the sources with Babel, by the method map of
`timeline_pipeline.i18n.catalogs.EXTRACTION`, exactly as a translator's `pybabel extract` would.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

import timeline_pipeline
from timeline_pipeline.i18n.catalogs import EXTRACTION, Domain, catalog_path, translations
from timeline_pipeline.i18n.locales import Locale

PACKAGE = Path(timeline_pipeline.__file__).parent
TRANSLATED = [locale for locale in Locale if locale is not Locale.EN]
JINJA = "jinja2.ext:babel_extract"


def _extracted(domain: Domain) -> set[str]:
    method_map = [
        (pattern, JINJA if method == "jinja2" else method) for pattern, method in EXTRACTION[domain]
    ]
    found: set[str] = set()
    for _file, _line, message, _comments, _context in extract_from_dir(
        str(PACKAGE), method_map=method_map
    ):
        # A plural message is one catalog entry, keyed by its singular (as `_catalog_ids` reads).
        singular = message if isinstance(message, str) else message[0]
        if singular:
            found.add(singular)
    return found


def _catalog_ids(domain: Domain, locale: Locale) -> dict[str, object]:
    with catalog_path(domain, locale).open("rb") as source:
        catalog = read_po(source, locale=locale.babel_name)
    return {
        str(message.id if isinstance(message.id, str) else message.id[0]): message.string
        for message in catalog
        if message.id
    }


@pytest.mark.parametrize("locale", TRANSLATED, ids=str)
@pytest.mark.parametrize("domain", list(Domain), ids=str)
def test_every_string_the_code_uses_is_translated(domain: Domain, locale: Locale) -> None:
    catalog = _catalog_ids(domain, locale)
    missing = sorted(_extracted(domain) - set(catalog))
    assert not missing, f"{catalog_path(domain, locale)} misses {missing}"
    untranslated = sorted(msgid for msgid, text in catalog.items() if not text)
    assert not untranslated, f"{catalog_path(domain, locale)} leaves {untranslated} empty"


@pytest.mark.parametrize("locale", TRANSLATED, ids=str)
@pytest.mark.parametrize("domain", list(Domain), ids=str)
def test_no_catalog_keeps_a_string_the_code_no_longer_uses(domain: Domain, locale: Locale) -> None:
    stale = sorted(set(_catalog_ids(domain, locale)) - _extracted(domain))
    assert not stale, f"{catalog_path(domain, locale)} keeps unused {stale}"


def test_a_catalog_translates_and_english_is_the_source() -> None:
    assert translations(Domain.LABELS, Locale.ZH_CN).gettext("Root cause") == "根因"
    assert translations(Domain.LABELS, Locale.EN).gettext("Root cause") == "Root cause"
    assert translations(Domain.LABELS, Locale.ZH_CN).gettext("never in a catalog") == (
        "never in a catalog"
    )


def test_the_incident_report_has_its_own_catalog() -> None:
    """The report's words (report/render.py) are extracted into the `report` domain, which the
    two tests above check like every other; its Chinese says the milestones and durations."""
    assert ("report/render.py", "python") in EXTRACTION[Domain.REPORT]
    assert "Time to resolve" in _extracted(Domain.REPORT)
    chinese = translations(Domain.REPORT, Locale.ZH_CN)
    assert chinese.gettext("Time to resolve") == "解决用时"
    assert chinese.gettext("{hours} h {minutes} min") == "{hours} 小时 {minutes} 分钟"
    assert (
        chinese.ngettext(
            "{count} entry is left out because a message it cites was recalled.",
            "{count} entries are left out because a message they cite was recalled.",
            2,
        )
        == "有 {count} 条条目未收录：其引用的消息已被撤回。"
    )
