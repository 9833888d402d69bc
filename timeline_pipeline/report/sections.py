"""The report's content as values (docs/report.md, "Sections"): what it says, before it is written
in a language.

Pure: a `TimelineView` (curation/timeline.py), the milestones and durations, the workspace's title
and status in; a `ReportContent` out. The same content renders as Markdown (a Lark document, the
CLI) and as JSON (the API), so the two never disagree, and its fingerprint says whether a rebuild
changed anything.

Only visible entries (draft, confirmed) are reported. An entry one of whose messages was recalled
is left out whole and counted in `withheld`: the report is copied into Lark documents that the
recall seam cannot reach afterwards, so it never carries text a sender took back (docs/report.md,
"Recalls"). Drafts are reported, marked, and listed again under `unconfirmed`, because a report
built in the middle of an incident must not hide what the team has not reviewed yet.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from timeline_pipeline.curation.timeline import EntryView, TimelineView
from timeline_pipeline.domain.entries import VISIBLE_STATUSES, EntryStatus
from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.report.milestones import Durations, Milestone, Milestones, TimelineFact

__all__ = [
    "SECTION_KEYS",
    "EntryCounts",
    "ReportContent",
    "ReportItem",
    "ReportSection",
    "SectionKey",
    "build_content",
    "content_fingerprint",
    "facts_of",
    "owners_in",
]


class SectionKey(StrEnum):
    """The report's sections, in the order a postmortem is read."""

    IMPACT = "impact"
    ROOT_CAUSE = "root_cause"
    DECISIONS = "decisions"
    MITIGATIONS = "mitigations"
    TIMELINE = "timeline"
    FOLLOW_UPS = "follow_ups"
    UNCONFIRMED = "unconfirmed"


SECTION_KEYS: tuple[SectionKey, ...] = tuple(SectionKey)

_CATEGORY_SECTIONS: dict[SectionKey, str] = {
    SectionKey.IMPACT: "impact",
    SectionKey.ROOT_CAUSE: "root_cause",
    SectionKey.DECISIONS: "decision",
    SectionKey.MITIGATIONS: "mitigation",
    SectionKey.FOLLOW_UPS: "next_step",
}
"""The sections that gather one category of entry; `timeline` has every entry, `unconfirmed`
every draft."""


@dataclass(frozen=True, slots=True)
class ReportItem:
    """One entry as the report shows it."""

    entry_id: int
    occurred_at: datetime
    category: str
    status: str
    text: str
    """The title, and ` — ` and the detail when there is one."""
    links: tuple[str, ...]
    """The Lark links of its messages (a recalled or linkless message has none)."""
    owners: tuple[str, ...] = ()
    """Who a follow-up names as its owners (`owners_in`); empty for other entries."""


@dataclass(frozen=True, slots=True)
class ReportSection:
    key: str
    """One of `SectionKey`: impact, root_cause, decisions, mitigations, timeline, follow_ups,
    unconfirmed."""
    items: tuple[ReportItem, ...]


@dataclass(frozen=True, slots=True)
class EntryCounts:
    """How many entries the report stands on, and how many it leaves out and why."""

    confirmed: int
    drafts: int
    hidden: int
    withheld: int
    """Visible entries left out because a message they cite was recalled."""


@dataclass(frozen=True, slots=True)
class ReportContent:
    workspace_id: str
    title: str
    status: str
    window_start: datetime | None
    """The effective `started`, else the first reported entry's time."""
    window_end: datetime | None
    """The effective `resolved`; None while the incident goes on."""
    milestones: Milestones
    durations: Durations
    sections: tuple[ReportSection, ...]
    counts: EntryCounts
    cited_evidence_ids: tuple[int, ...]
    """Every evidence id whose message text the report quotes, ascending: a recall of any of them
    makes the report stale (it must be rebuilt without it)."""

    @property
    def drafts_pending(self) -> bool:
        """Whether drafts await review: the report says so first, as it may still change."""
        return self.counts.drafts > 0

    def section(self, key: SectionKey | str) -> ReportSection:
        wanted = SectionKey(key)
        return next(section for section in self.sections if section.key == wanted)


def facts_of(view: TimelineView) -> list[TimelineFact]:
    """The visible entries the milestones read, less those that cite a recalled message (as the
    report leaves them out, its milestones cannot point at them)."""
    return [
        TimelineFact(entry.id, entry.occurred_at, entry.category, entry.status)
        for entry in _included(view.entries)
    ]


def build_content(
    view: TimelineView,
    *,
    title: str,
    status: str,
    milestones: Milestones,
    durations: Durations,
    hidden_count: int,
) -> ReportContent:
    """The report of `view`'s workspace. `hidden_count` is given apart because the view a caller
    reads for the report holds the visible entries only; hidden entries are counted, never
    shown."""
    visible = [entry for entry in view.entries if entry.status in VISIBLE_STATUSES]
    included = _included(visible)
    items = [_item(entry) for entry in included]
    sections = []
    for key in SECTION_KEYS:
        if key is SectionKey.TIMELINE:
            chosen = items
        elif key is SectionKey.UNCONFIRMED:
            chosen = [item for item in items if item.status == EntryStatus.DRAFT]
        else:
            chosen = [item for item in items if item.category == _CATEGORY_SECTIONS[key]]
        sections.append(ReportSection(key.value, tuple(chosen)))
    window_start = milestones.started.at
    if window_start is None and included:
        window_start = _utc(included[0].occurred_at)
    return ReportContent(
        workspace_id=view.workspace_id,
        title=title,
        status=status,
        window_start=window_start,
        window_end=milestones.resolved.at,
        milestones=milestones,
        durations=durations,
        sections=tuple(sections),
        counts=EntryCounts(
            confirmed=sum(1 for item in items if item.status == EntryStatus.CONFIRMED),
            drafts=sum(1 for item in items if item.status == EntryStatus.DRAFT),
            hidden=hidden_count,
            withheld=sum(1 for entry in visible if entry.recalled_evidence),
        ),
        cited_evidence_ids=tuple(
            sorted({link.evidence_id for entry in included for link in entry.evidence})
        ),
    )


def content_fingerprint(content: ReportContent, presentation: Presentation | None = None) -> str:
    """sha256 (hex) over everything the report shows, in a canonical order, so that a rebuild
    with nothing changed gives the same value on every run and machine and can be skipped. No
    time of the build goes in (there is none in the content). With `presentation`, its locale
    and zone go in too: the same content written in another language is another document."""
    shown: dict[str, Any] = _canonical(content)
    if presentation is not None:
        shown["presentation"] = [presentation.locale.value, presentation.time_zone.key]
    encoded = json.dumps(shown, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def _included(entries: Iterable[EntryView]) -> list[EntryView]:
    """Visible entries with no recalled message, in time order (the id breaks ties, as the
    timeline orders them)."""
    return sorted(
        (
            entry
            for entry in entries
            if entry.status in VISIBLE_STATUSES and not entry.recalled_evidence
        ),
        key=lambda entry: (_utc(entry.occurred_at), entry.id),
    )


def _item(entry: EntryView) -> ReportItem:
    text = entry.title.strip()
    detail = (entry.detail or "").strip()
    if detail:
        text = f"{text} — {detail}"
    return ReportItem(
        entry_id=entry.id,
        occurred_at=_utc(entry.occurred_at),
        category=entry.category,
        status=entry.status,
        text=text,
        links=tuple(link.url for link in entry.evidence if link.url),
        owners=owners_in(text) if entry.category == "next_step" else (),
    )


def _canonical(content: ReportContent) -> dict[str, Any]:
    return {
        "workspace_id": content.workspace_id,
        "title": content.title,
        "status": content.status,
        "window": [_iso(content.window_start), _iso(content.window_end)],
        "milestones": [_milestone_values(milestone) for milestone in content.milestones],
        "durations": [
            content.durations.time_to_detect,
            content.durations.time_to_mitigate,
            content.durations.time_to_resolve,
        ],
        "sections": [
            [
                section.key,
                [
                    [
                        item.entry_id,
                        _iso(item.occurred_at),
                        item.category,
                        item.status,
                        item.text,
                        list(item.links),
                        list(item.owners),
                    ]
                    for item in section.items
                ],
            ]
            for section in content.sections
        ],
        "counts": [
            content.counts.confirmed,
            content.counts.drafts,
            content.counts.hidden,
            content.counts.withheld,
        ],
        "cited": list(content.cited_evidence_ids),
    }


def _milestone_values(milestone: Milestone) -> list[Any]:
    return [
        milestone.name.value,
        _iso(milestone.at),
        milestone.entry_id,
        _iso(milestone.derived_at),
        milestone.derived_entry_id,
        milestone.overridden_by,
        _iso(milestone.overridden_at),
    ]


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else _utc(moment).isoformat().replace("+00:00", "Z")


# --- owners of a follow-up ------------------------------------------------------------------

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_VERBS = "跟进|负责|处理|牵头|推进|修复|排查|落实|跟踪|确认|来做|来"
_HAN_NAME = rf"[{_HAN}]{{2,4}}?(?=(?:{_HAN_VERBS}|和|及)|[^{_HAN}]|$)"
"""A Chinese name: two to four Han characters, ending where the Han run ends or a verb begins
(`陈晨` in `由陈晨跟进`)."""
_LATIN_NAME = r"[A-Z][a-z]+(?:[ \-][A-Z][a-z]+)?"
"""`Dana`, `Wang Lei`: one or two capitalized words."""
_HANDLE = r"[A-Za-z][A-Za-z0-9._\-]*"
"""A person's handle after `@` or `owner:` (`dana.whitfield`); Lark's `@_user_1` placeholders
start with `_` and name no one a reader knows."""

_MENTION = re.compile(rf"(?<![A-Za-z0-9._%+\-])@(?:(?P<han>{_HAN_NAME})|(?P<handle>{_HANDLE}))")
_LABEL = re.compile(r"(?:\b(?:owners?|assignees?)\b|负责人|责任人|跟进人|执行人)\s*[:：]\s*", re.I)
_LIST_NAME = re.compile(
    rf"@?(?:(?P<han>{_HAN_NAME})|(?P<latin>{_LATIN_NAME})|(?P<handle>{_HANDLE}))"
)
_LIST_SEPARATOR = re.compile(r"\s*(?:,|，|、|/|／|&|\band\b|和|及)\s*")
_BY = re.compile(
    rf"由\s*(?:(?P<han>[{_HAN}]{{2,4}}?)|(?P<latin>{_LATIN_NAME}))\s*(?:来)?"
    r"(?:跟进|负责|处理|牵头|推进|修复|排查|落实|跟踪)"
)
_CLAUSE_OWNER = re.compile(
    rf"(?:^|[;；,，.。:：!?！？(（]|\band\b)\s*(?P<latin>{_LATIN_NAME}(?: team)?)\s+"
    r"(?:to\s+(?!(?:the|a|an)\b)[a-z]|will\b|owns\b|takes\b|is on\b|'ll\b)"
)
_PARENS = re.compile(r"[(（]([^()（）]{1,60})[)）]")
_PART_SEPARATOR = re.compile(r"[,，;；:：]")
_ONE_NAME = re.compile(rf"(?P<han>[{_HAN}]{{2,4}})|(?P<latin>{_LATIN_NAME})|@(?P<handle>{_HANDLE})")
"""A name alone in parentheses; a bare word there is a ticket or a place (`(REP-871)`,
`(prod-euw1)`), so a handle needs its `@`."""
_HAN_TIME = re.compile(
    r"^(?:[今明后昨前]天|[本下上这每](?:周|月|个|季)|周[一二三四五六日天末]|月[底初中]|年[底初])"
    r"|[前内后]$|小时|分钟|天内|号前|之前|以内|尽快|马上|立即|凌晨|上午|下午|晚上|今晚|明早"
)
# Word lists read best as words: one string, split (SIM905 would make them a column each).
_HAN_NOT_NAMES = frozenset(
    """
    低优 全员 可选 可选项 后续 团队 处理中 复盘 大家 完成 已修复 已处理
    已完成 已确认 待办 待定 必须 所有人 未开始 测试 灰度 生产 短期 紧急
    线上 负责 跟进 进行中 重要 长期 高优
    """.split()  # noqa: SIM905
)
"""Han words that fill a name's place but name no one (a state, a priority, everyone)."""
_LATIN_NOT_NAMES = frozenset(
    """
    a action actions add after all also an and anyone apr asap ask at aug before blocked both
    but by canary check critical dec december decide do done draft each eod eow every
    everyone feb february fix follow followup for fri friday from going he her high his how i
    if in into it its jan january jul july jun keep later let lets low make mar march maybe
    medium mon monday move my need needs next no nobody none not note nov november now oct
    october of ok okay on once onto optional or our over owner owners pending per plan plans
    please postmortem probably prod production ready remember restore rollback sat saturday
    see sep sept september set she somebody someone soon staging stay still sun sunday switch
    tbd that the their then these they this those thu thursday time to today todo tomorrow
    tonight try tue tuesday unassigned under until urgent use via want we wed wednesday week
    weekend what when where which who whoever why with without yes you your
    """.split()  # noqa: SIM905
)
"""Capitalized words that start a clause or sit in parentheses but name no one (compared in
lower case)."""


def owners_in(text: str) -> tuple[str, ...]:
    """The owners a follow-up names, in the order they appear, each once.

    Reads the ways incident chats assign work: `@Dana`, `@陈晨`, `owner: Dana` (`owners: Dana,
    Lee`), `负责人：陈晨`, `由陈晨跟进`, `Dana to add…`, `Dana will…`, `Omar owns the write-up`,
    `Privacy team to decide…`, and a name in parentheses after an item, `(Dana)`, `(Wang Lei)`,
    `（曹雨，明天）`, `（钱悦/苏琳）`. A date in parentheses (`（本周五前）`, `(Friday)`) or a
    ticket (`(REP-871)`) is not an owner. A heuristic: the report shows the owners beside the
    item and a curator corrects the text; a missed owner costs a line, not a wrong fact.
    """
    found: list[tuple[int, str]] = []

    def keep(position: int, name: str | None) -> None:
        if name:
            cleaned = name.strip().rstrip("._-")
            if _is_name(cleaned):
                found.append((position, cleaned))

    for match in _MENTION.finditer(text):
        keep(match.start(), match.group("han") or match.group("handle"))
    for match in _LABEL.finditer(text):
        position = match.end()
        while True:
            name = _LIST_NAME.match(text, position)
            if name is None:
                break
            keep(name.start(), name.group("han") or name.group("latin") or name.group("handle"))
            separator = _LIST_SEPARATOR.match(text, name.end())
            if separator is None or separator.end() == name.end():
                break
            position = separator.end()
    for match in _BY.finditer(text):
        keep(match.start(), match.group("han") or match.group("latin"))
    for match in _CLAUSE_OWNER.finditer(text):
        keep(match.start("latin"), match.group("latin"))
    for match in _PARENS.finditer(text):
        first_part = _PART_SEPARATOR.split(match.group(1))[0]
        offset = match.start(1)
        for piece in _LIST_SEPARATOR.split(first_part):
            one = _ONE_NAME.fullmatch(piece.strip())
            if one is not None:
                keep(offset, one.group("han") or one.group("latin") or one.group("handle"))
    owners: list[str] = []
    for _position, owner in sorted(found, key=lambda pair: pair[0]):
        if owner not in owners:
            owners.append(owner)
    return tuple(owners)


def _is_name(name: str) -> bool:
    if not name:
        return False
    if re.fullmatch(rf"[{_HAN}]+", name):
        return 2 <= len(name) <= 4 and name not in _HAN_NOT_NAMES and _HAN_TIME.search(name) is None
    first = re.split(r"[ \-.]", name)[0]
    return first.lower() not in _LATIN_NOT_NAMES and re.search(r"[A-Za-z]", name) is not None
