"""A summary written by rules from the visible timeline: the default when no model is set.

It must be useful on its own in a live incident, so it answers the questions a newcomer to the
channel asks, in a fixed order: how long and how much, what is the impact, what is the cause,
what was done, is it over, what is next. Every sentence is an entry title, so every claim is
one a curator can trace to evidence; nothing is invented. Deterministic: the same entries give
the same text byte for byte, which makes "unchanged input, unchanged summary" checkable.

It is written in the workspace's language (the `summary` catalog) with its times in the
workspace's zone (docs/i18n.md); a title's own label is not repeated under its heading
(`own_label`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from timeline_pipeline.i18n.catalogs import Domain, translations
from timeline_pipeline.i18n.locales import Locale, Presentation
from timeline_pipeline.i18n.times import local, show_time, spans_days, zone_label
from timeline_pipeline.summary.contract import SummaryEntry, SummaryInput, SummaryResult
from timeline_pipeline.summary.own_label import strip_own_label

__all__ = ["DeterministicSummarizer"]

PROMPT_VERSION = "summary-rules-v2"
MAX_TITLES_PER_SECTION = 3
MAX_TITLE_CHARS = 200


def N_(message: str) -> str:
    """Marks a heading for extraction into the summary catalog; translated where it is shown."""
    return message


# (category, heading, which entries matter most): causes and impact are best told from their
# first report, actions and status from their latest. A heading names its category as
# `i18n.labels` does in every language but English, where a section of several is plural.
SECTIONS: tuple[tuple[str, str, str], ...] = (
    ("impact", N_("Impact"), "first"),
    ("root_cause", N_("Root cause"), "first"),
    ("finding", N_("Findings"), "first"),
    ("decision", N_("Decisions"), "first"),
    ("mitigation", N_("Mitigation"), "latest"),
    ("recovery", N_("Recovery"), "latest"),
    ("next_step", N_("Next steps"), "latest"),
)
_ENDINGS = (".", "!", "?", "…", "。", "！", "？")
_FULL_WIDTH_ENDINGS = ("。", "！", "？", "…", "）")


class _Writer:
    """The summary's words, times and punctuation in one workspace's presentation."""

    def __init__(self, presentation: Presentation, moments: Sequence[datetime]) -> None:
        self.shown = presentation
        self.t = translations(Domain.SUMMARY, presentation.locale)
        # Dates where the incident spans more than one local day (docs/i18n.md).
        self.dated = spans_days(moments, presentation.time_zone)

    def at(self, moment: datetime) -> str:
        """A moment in the workspace's zone with its offset named. English summaries keep
        the form they were always written in (the ISO date, always), so that an English
        workspace reads exactly as before; other languages follow `i18n.times`."""
        zone = self.shown.time_zone
        if self.shown.locale is Locale.EN:
            return f"{local(moment, zone):%Y-%m-%d %H:%M} {zone_label(moment, zone)}"
        return show_time(moment, zone, self.shown.locale, with_date=self.dated)

    def sentence(self, text: str) -> str:
        text = _clip(text)
        if text.endswith(_ENDINGS):
            return text
        return self.t.gettext("{sentence}.").format(sentence=text)

    @staticmethod
    def join(sentences: Sequence[str]) -> str:
        """Sentences one after the other: a space after a Latin full stop, none after a
        full-width one (Chinese text runs on)."""
        text = ""
        for sentence in sentences:
            gap = "" if not text or text.endswith(_FULL_WIDTH_ENDINGS) else " "
            text += gap + sentence
        return text


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TITLE_CHARS else text[: MAX_TITLE_CHARS - 1] + "…"


def _claim(entry: SummaryEntry, category: str) -> str:
    """What an entry says under its section's heading: its title without a label naming the
    section (`own_label`); a title that is only that label says it through its detail, and
    with no detail it says nothing ("")."""
    claim = strip_own_label(entry.title, category)
    if claim or not entry.detail:
        return claim
    return strip_own_label(entry.detail, category)


def _pick(entries: Sequence[SummaryEntry], which: str) -> tuple[list[SummaryEntry], int]:
    # Curated entries first: when there are more than fit, what a person vouched for wins.
    ranked = sorted(entries, key=lambda e: (not e.curated, e.occurred_at, e.id))
    if which == "latest":
        ranked = sorted(entries, key=lambda e: (not e.curated, -e.occurred_at.timestamp(), -e.id))
    chosen = ranked[:MAX_TITLES_PER_SECTION]
    chosen.sort(key=lambda e: (e.occurred_at, e.id))
    return chosen, len(entries) - len(chosen)


class DeterministicSummarizer:
    name = "rules"
    prompt_version = PROMPT_VERSION

    def summarize(self, summary_input: SummaryInput) -> SummaryResult:
        return SummaryResult(
            content=self.render(summary_input),
            summarizer=self.name,
            model=self.name,
            prompt_version=self.prompt_version,
        )

    def render(self, summary_input: SummaryInput) -> str:
        entries = summary_input.entries
        write = _Writer(summary_input.presentation, [e.occurred_at for e in entries])
        t = write.t
        if not entries:
            return t.gettext("No timeline entries yet.")
        curated = sum(1 for e in entries if e.curated)
        lines = [
            t.gettext(
                "{count} timeline entries from {start} to {end} ({curated} confirmed by "
                "curators, {drafts} drafts)."
            ).format(
                count=len(entries),
                start=write.at(entries[0].occurred_at),
                end=write.at(entries[-1].occurred_at),
                curated=curated,
                drafts=len(entries) - curated,
            )
        ]
        if summary_input.omitted:
            lines.append(
                t.gettext("{count} further entries are not covered here.").format(
                    count=summary_input.omitted
                )
            )
        claims: dict[str, dict[int, str]] = {}
        for entry in entries:
            claim = _claim(entry, entry.category)
            if claim:
                claims.setdefault(entry.category, {})[entry.id] = claim
        for category, heading, which in SECTIONS:
            said = claims.get(category)
            if not said:
                continue
            chosen, more = _pick([e for e in entries if e.id in said], which)
            text = write.join([write.sentence(said[e.id]) for e in chosen])
            if more:
                text = t.gettext("{text} (+{count} more)").format(text=text, count=more)
            lines.append(
                t.gettext("{heading}: {text}").format(heading=t.gettext(heading), text=text)
            )
        lines.append(self._status(entries, write))
        return "\n".join(lines)

    @staticmethod
    def _status(entries: Sequence[SummaryEntry], write: _Writer) -> str:
        """Recovered when the latest impact-or-recovery entry is a recovery, else ongoing."""
        relevant = [e for e in entries if e.category in ("impact", "recovery")]
        last = entries[-1]
        if relevant and relevant[-1].category == "recovery":
            recovery = relevant[-1]
            return write.t.gettext("Status: recovered at {when}.").format(
                when=write.at(recovery.occurred_at)
            )
        return write.t.gettext("Status: ongoing; latest at {when}: {sentence}").format(
            when=write.at(last.occurred_at), sentence=write.sentence(last.title)
        )
