"""A summary written by rules from the visible timeline: the default when no model is set.

It must be useful on its own in a live incident, so it answers the questions a newcomer to the
channel asks, in a fixed order: how long and how much, what is the impact, what is the cause,
what was done, is it over, what is next. Every sentence is an entry title, so every claim is
one a curator can trace to evidence; nothing is invented. Deterministic: the same entries give
the same text byte for byte, which makes "unchanged input, unchanged summary" checkable.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from timeline_pipeline.summary.contract import SummaryEntry, SummaryInput, SummaryResult

__all__ = ["DeterministicSummarizer"]

PROMPT_VERSION = "summary-rules-v2"
MAX_TITLES_PER_SECTION = 3
MAX_TITLE_CHARS = 200

# (category, heading, which entries matter most): causes and impact are best told from their
# first report, actions and status from their latest.
SECTIONS: tuple[tuple[str, str, str], ...] = (
    ("impact", "Impact", "first"),
    ("root_cause", "Root cause", "first"),
    ("finding", "Findings", "first"),
    ("decision", "Decisions", "first"),
    ("mitigation", "Mitigation", "latest"),
    ("recovery", "Recovery", "latest"),
    ("next_step", "Next steps", "latest"),
)


# What authors call each kind when they label their own message ("Root cause (draft): ...",
# "Decision: ...", "INC-2291 follow-ups: ..."). A title keeps the author's words, so under its
# section's heading such a label would be said twice.
_LABEL_NAMES = {
    "impact": r"impact",
    "root_cause": r"root[ -]?causes?|rc",
    "finding": r"findings?",
    "decision": r"decisions?|decided",
    "mitigation": r"mitigations?",
    "recovery": r"recovery|recovered",
    "next_step": r"next[ -]steps?|follow[ -]?ups?|action items?",
}
_SECTION_LABEL = {
    category: re.compile(
        r"^(?:[A-Z][A-Z0-9]*-\d+\s+)?(?:" + names + r")\s*"
        r"(?:\((?P<qualifier>[^()]{1,24})\)\s*)?(?:[:\uff1a]\s*|\s[-\u2013\u2014]\s+)",
        re.IGNORECASE,
    )
    for category, names in _LABEL_NAMES.items()
}


def _hhmm(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TITLE_CHARS else text[: MAX_TITLE_CHARS - 1] + "…"


def _sentence(text: str) -> str:
    text = _clip(text)
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def _unlabelled(title: str, category: str) -> str:
    """The title without a leading label naming its own section; a qualifier the author put on
    the label ("(draft)", "(tentative)") stays, in front of the claim it qualifies."""
    pattern = _SECTION_LABEL.get(category)
    match = pattern.match(title) if pattern else None
    rest = title[match.end() :].strip() if match else ""
    if match is None or not rest:
        return title
    qualifier = match.group("qualifier")
    if qualifier:
        return f"({qualifier.strip()}) {rest}"
    return rest[0].upper() + rest[1:]


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
        if not entries:
            return "No timeline entries yet."
        curated = sum(1 for e in entries if e.curated)
        lines = [
            f"{len(entries)} timeline entries from {_hhmm(entries[0].occurred_at)} to "
            f"{_hhmm(entries[-1].occurred_at)} ({curated} confirmed by curators, "
            f"{len(entries) - curated} drafts)."
        ]
        if summary_input.omitted:
            lines.append(f"{summary_input.omitted} further entries are not covered here.")
        by_category: dict[str, list[SummaryEntry]] = {}
        for entry in entries:
            by_category.setdefault(entry.category, []).append(entry)
        for category, heading, which in SECTIONS:
            group = by_category.get(category)
            if not group:
                continue
            chosen, more = _pick(group, which)
            text = " ".join(_sentence(_unlabelled(e.title, category)) for e in chosen)
            if more:
                text += f" (+{more} more)"
            lines.append(f"{heading}: {text}")
        lines.append(self._status(entries))
        return "\n".join(lines)

    @staticmethod
    def _status(entries: Sequence[SummaryEntry]) -> str:
        """Recovered when the latest impact-or-recovery entry is a recovery, else ongoing."""
        relevant = [e for e in entries if e.category in ("impact", "recovery")]
        last = entries[-1]
        if relevant and relevant[-1].category == "recovery":
            recovery = relevant[-1]
            return f"Status: recovered at {_hhmm(recovery.occurred_at)}."
        return f"Status: ongoing; latest at {_hhmm(last.occurred_at)}: {_sentence(last.title)}"
