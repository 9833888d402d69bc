"""The names of entry categories and statuses as a person reads them, in every surface
(docs/i18n.md): the page, cards, the summary, the export and the demo share these, so that a
category is called one thing everywhere in a language.

The English names are the msgids of the `labels` catalog (marked with `N_` so that Babel
extracts them); the stored values (`root_cause`, `confirmed`) never change with the language.
"""

from __future__ import annotations

from timeline_pipeline.i18n.catalogs import Domain, translations
from timeline_pipeline.i18n.locales import Locale

__all__ = ["CATEGORY_LABELS", "STATUS_LABELS", "category_label", "status_label"]


def N_(message: str) -> str:
    """Marks `message` for extraction; it is translated where it is shown."""
    return message


CATEGORY_LABELS: dict[str, str] = {
    "impact": N_("Impact"),
    "finding": N_("Finding"),
    "decision": N_("Decision"),
    "mitigation": N_("Mitigation"),
    "root_cause": N_("Root cause"),
    "recovery": N_("Recovery"),
    "next_step": N_("Next step"),
}
STATUS_LABELS: dict[str, str] = {
    "draft": N_("Draft"),
    "confirmed": N_("Confirmed"),
    "hidden": N_("Hidden"),
}


def category_label(category: str, locale: Locale) -> str:
    """`root_cause` as `Root cause` or `根因`; an unknown value is shown as it is stored."""
    english = CATEGORY_LABELS.get(category)
    return translations(Domain.LABELS, locale).gettext(english) if english else category


def status_label(status: str, locale: Locale) -> str:
    """`confirmed` as `Confirmed` or `已确认`; an unknown value is shown as it is stored."""
    english = STATUS_LABELS.get(status)
    return translations(Domain.LABELS, locale).gettext(english) if english else status
