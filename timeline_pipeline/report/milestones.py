"""The incident's four milestones and the durations between them (docs/report.md, "Milestones").

Pure: timeline facts, a few signals of the chat and the curators' overrides in, milestones out.
Nothing here reads a clock, so the same inputs give the same report on every run, and a rebuild
with nothing changed is recognised by its fingerprint (`sections.content_fingerprint`).

The rules, as docs/report.md writes them:

- `started`: the earlier of the first `impact` entry and the first alert; with neither, the first
  message. The first alert counts because an alert that fired is itself evidence that the trouble
  existed by then: in 44 of the 45 gold chats that have both, the alert comes before the first
  impact entry, so a start taken from the impact entry alone would come after the detection in
  nearly every incident, and the times to mitigate and resolve would leave out the minutes
  between the alert and the first person writing about the impact. When both agree to the
  second, the entry wins, so the milestone stays traceable to it.
- `detected`: the first alert; without one, the workspace's creation (the moment the team formed
  around the incident, which is when people knew).
- `mitigated`: the first `mitigation` entry at or before the resolution (the effective one, so an
  override of `resolved` moves it too); with no resolution yet, the first mitigation. A mitigation
  written after the resolution (a follow-up rebuild, a release blocked for later) did not end the
  impact and would otherwise make the time to mitigate longer than the time to resolve.
- `resolved`: the last `recovery` entry (a relapse after an early "looks better" moves it on);
  without one, the moment the workspace's status last changed to `recovered`; else none yet.

An alert is a message from an app or bot that is not a notice (`is_alert`): release, change and
resolution notices come from the same bots ("Deploy finished", "[RESOLVED] ...", "[配置发布]"), and
in 11 of the 47 gold chats one of them is the first app message, before any alert: "the first app
message" alone would call a deploy the detection.

Only visible entries count (draft or confirmed): a hidden entry is one a curator rejected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from timeline_pipeline.domain.entries import VISIBLE_STATUSES

__all__ = [
    "Durations",
    "IncidentSignals",
    "Milestone",
    "MilestoneError",
    "MilestoneName",
    "MilestoneOverride",
    "Milestones",
    "SignalMessage",
    "TimelineFact",
    "check_override",
    "derive_milestones",
    "durations_of",
    "is_alert",
    "signals_of",
]


class MilestoneName(StrEnum):
    """The four moments every incident report names, in the order an incident passes them."""

    STARTED = "started"
    DETECTED = "detected"
    MITIGATED = "mitigated"
    RESOLVED = "resolved"


class MilestoneError(ValueError):
    """An override the report refuses; the message is one line saying why (shown as it is by the
    CLI, the API and the page)."""


@dataclass(frozen=True, slots=True)
class TimelineFact:
    """A visible (draft or confirmed) entry, as the milestones read it: only its time, category
    and status matter, so the rules can be tested without a database."""

    entry_id: int
    occurred_at: datetime
    category: str
    status: str


@dataclass(frozen=True, slots=True)
class IncidentSignals:
    """What the chat and the workspace say beside the timeline, for milestones no entry names."""

    created_at: datetime
    """The workspace's creation."""
    first_message_at: datetime | None
    """The first evidence message."""
    first_alert_at: datetime | None
    """The first message from an app or bot sender that is an alert (`is_alert`)."""
    recovered_at: datetime | None
    """When the workspace's status last changed to `recovered`."""


@dataclass(frozen=True, slots=True)
class SignalMessage:
    """One evidence message, as the signals read it: its time, whether an app or bot sent it
    (Lark's `sender.sender_type` is `app`), and its text (a card's title for an interactive
    message)."""

    occurred_at: datetime
    from_app: bool
    text: str


@dataclass(frozen=True, slots=True)
class MilestoneOverride:
    """A curator's correction of one milestone: the time they set, who set it and when."""

    name: MilestoneName
    at: datetime
    by: str
    """The actor, as the audit records it: `ui:…`, `cli:alice`, `token:…`."""
    set_at: datetime


@dataclass(frozen=True, slots=True)
class Milestone:
    """One milestone: its effective time and where it came from. An override replaces `at` and
    keeps what the timeline says in `derived_*`, so the report can show both and a reader can
    see that a person corrected the record."""

    name: MilestoneName
    at: datetime | None
    """The effective time: the override if there is one, else the derived time."""
    entry_id: int | None
    """The entry it came from; None when overridden or derived from a signal."""
    derived_at: datetime | None
    """What the timeline says, kept when overridden."""
    derived_entry_id: int | None
    overridden_by: str | None
    """The actor of the override, e.g. `ui:…`, `cli:alice`, `token:…`."""
    overridden_at: datetime | None

    @property
    def overridden(self) -> bool:
        return self.overridden_by is not None


@dataclass(frozen=True, slots=True)
class Milestones:
    """The four milestones; iterating gives them in the order an incident passes them."""

    started: Milestone
    detected: Milestone
    mitigated: Milestone
    resolved: Milestone

    def __iter__(self) -> Iterator[Milestone]:
        return iter((self.started, self.detected, self.mitigated, self.resolved))

    def get(self, name: MilestoneName | str) -> Milestone:
        """The milestone called `name` (`started` or `MilestoneName.STARTED`)."""
        wanted = MilestoneName(name)
        return next(milestone for milestone in self if milestone.name is wanted)


@dataclass(frozen=True, slots=True)
class Durations:
    """Whole seconds from `started` to each later milestone; None when either end is unknown."""

    time_to_detect: int | None
    time_to_mitigate: int | None
    time_to_resolve: int | None


_TAG = re.compile(r"^\s*[\[【]([^\]】]{1,40})[\]】]")
"""A bot's leading tag: `[FIRING]`, `[P1]`, `【告警】`, `[发布完成]`."""
_ALERT_TAG = re.compile(
    r"fir(?:e|ing)|alert|alarm|trigger|crit|warn|error|fatal|page|\bp[0-4]\b|\bsev ?[0-4]\b"
    r"|告警|报警|警告|高危|严重|故障|异常",
    re.IGNORECASE,
)
_CLEAR_TAG = re.compile(r"resolv|recover|\bok\b|clear|ack|恢复|解除|已解决|关闭", re.IGNORECASE)
_NOTICE = re.compile(
    r"\b(?:deploy\w*|releas\w*|rolling|rollout|rolled|rollback|build|flags?|config\w*"
    r"|switchover|failover|migration|scal(?:e|ed|ing)|snapshot|summary|digest|started"
    r"|succeeded|finished|completed|resolved|recovered|acknowledged)\b"
    r"|发布|变更|回滚|切换|扩容|缩容|限流|路由|灰度|配置|上线|恢复|已解决",
    re.IGNORECASE,
)
"""Words of a notice that is not an alert: a release, a change, a resolution, a digest."""


def is_alert(text: str) -> bool:
    """Whether a bot's message is an alert rather than a notice.

    A leading tag decides when there is one: an alert's (`[FIRING]`, `[P1]`, `[告警]`,
    `[对账告警]`) unless it clears (`[RESOLVED]`, `[已恢复]`); any other tag (`[发布完成]`,
    `[WAF 规则变更]`) is a notice. Untagged, a message is an alert unless it reads as a notice
    ("Deploy finished", "Feature flag changed", "配置发布成功"), so an unknown bot that reports
    a problem ("Secret detected: ...", "Ticket spike") still counts, as the plain rule "the first
    app message" had it (docs/report.md).
    """
    tag = _TAG.match(text)
    if tag is not None:
        label = tag.group(1)
        return _ALERT_TAG.search(label) is not None and _CLEAR_TAG.search(label) is None
    return _NOTICE.search(text) is None


def signals_of(
    messages: Iterable[SignalMessage],
    *,
    created_at: datetime,
    recovered_at: datetime | None = None,
) -> IncidentSignals:
    """The signals of a workspace from its evidence messages (any order), its creation and the
    last change of its status to `recovered`."""
    first_message: datetime | None = None
    first_alert: datetime | None = None
    for message in messages:
        at = _utc(message.occurred_at)
        if first_message is None or at < first_message:
            first_message = at
        if (
            message.from_app
            and is_alert(message.text)
            and (first_alert is None or at < first_alert)
        ):
            first_alert = at
    return IncidentSignals(
        created_at=_utc(created_at),
        first_message_at=first_message,
        first_alert_at=first_alert,
        recovered_at=None if recovered_at is None else _utc(recovered_at),
    )


_Derived = tuple[datetime | None, int | None]
_NONE: _Derived = (None, None)


def derive_milestones(
    facts: Sequence[TimelineFact],
    signals: IncidentSignals,
    overrides: Sequence[MilestoneOverride] = (),
) -> Milestones:
    """The milestones by the rules of this module's docstring (docs/report.md), with the latest
    override of each (by `set_at`) replacing its time. Times come out in UTC; a naive time is
    taken as UTC, as the stores keep it."""
    visible = sorted(
        (fact for fact in facts if fact.status in VISIBLE_STATUSES),
        key=lambda fact: (_utc(fact.occurred_at), fact.entry_id),
    )
    latest = _latest_overrides(overrides)

    def of(category: str) -> list[TimelineFact]:
        return [fact for fact in visible if fact.category == category]

    started = _started(of("impact"), signals)
    detected: _Derived = (_utc(signals.first_alert_at or signals.created_at), None)
    recoveries = of("recovery")
    if recoveries:
        resolved: _Derived = (_utc(recoveries[-1].occurred_at), recoveries[-1].entry_id)
    elif signals.recovered_at is not None:
        resolved = (_utc(signals.recovered_at), None)
    else:
        resolved = _NONE
    resolved_override = latest.get(MilestoneName.RESOLVED)
    bound = _utc(resolved_override.at) if resolved_override is not None else resolved[0]
    mitigated = next(
        (
            (_utc(fact.occurred_at), fact.entry_id)
            for fact in of("mitigation")
            if bound is None or _utc(fact.occurred_at) <= bound
        ),
        _NONE,
    )
    return Milestones(
        started=_milestone(MilestoneName.STARTED, started, latest),
        detected=_milestone(MilestoneName.DETECTED, detected, latest),
        mitigated=_milestone(MilestoneName.MITIGATED, mitigated, latest),
        resolved=_milestone(MilestoneName.RESOLVED, resolved, latest),
    )


def durations_of(milestones: Milestones) -> Durations:
    """Whole seconds from `started` to each later milestone (docs/report.md, "Durations").

    None when either end is unknown. A negative span is clamped to 0: it means the later
    milestone was recorded before the start, e.g. the workspace was created (and so, with no
    alert, "detected") before anyone wrote down the impact, or an override moved the start. The
    incident cannot be detected, mitigated or resolved before it started, so the honest reading
    is "at once", and a negative figure would corrupt every average taken over reports.
    """
    start = milestones.started.at
    return Durations(
        time_to_detect=_seconds(start, milestones.detected.at),
        time_to_mitigate=_seconds(start, milestones.mitigated.at),
        time_to_resolve=_seconds(start, milestones.resolved.at),
    )


def check_override(
    milestones: Milestones,
    name: MilestoneName | str,
    at: datetime,
    *,
    now: datetime,
) -> None:
    """Refuses an override that would make the report contradict itself (docs/report.md,
    "Correcting a milestone"), with MilestoneError and a one-line reason.

    Refused: an unknown name; a naive time (it names no moment: which zone did the curator
    mean?); a time after `now` (a report records what happened); any milestone but `resolved`
    after the effective `resolved` (nothing of the incident happens after its end); `resolved`
    before the effective `started`; `started` after the effective `detected`, `mitigated` or
    `resolved`. Each comparison is with the other milestones' effective times, overrides
    included, since those are what the report shows. Detection before the start is allowed (an
    alert can precede the impact a curator dates): its duration reads 0 (`durations_of`).
    """
    try:
        wanted = MilestoneName(name)
    except ValueError:
        names = ", ".join(milestone.value for milestone in MilestoneName)
        raise MilestoneError(f"unknown milestone {name!r}: expected one of {names}") from None
    if at.tzinfo is None or at.utcoffset() is None:
        raise MilestoneError(
            f"{wanted} needs a time with its UTC offset, got {at.isoformat()} without one"
        )
    if now.tzinfo is None or now.utcoffset() is None:
        raise MilestoneError("the current time must carry its UTC offset")
    when = _utc(at)
    if when > _utc(now):
        raise MilestoneError(f"{wanted} at {_iso(when)} is in the future (now {_iso(_utc(now))})")
    started = milestones.started.at
    resolved = milestones.resolved.at
    if wanted is not MilestoneName.RESOLVED and resolved is not None and when > resolved:
        raise MilestoneError(
            f"{wanted} at {_iso(when)} is after the incident was resolved ({_iso(resolved)})"
        )
    if wanted is MilestoneName.RESOLVED and started is not None and when < started:
        raise MilestoneError(
            f"resolved at {_iso(when)} is before the incident started ({_iso(started)})"
        )
    if wanted is MilestoneName.STARTED:
        for later in (milestones.detected, milestones.mitigated, milestones.resolved):
            if later.at is not None and when > later.at:
                raise MilestoneError(
                    f"started at {_iso(when)} is after {later.name} ({_iso(later.at)})"
                )


def _started(impacts: list[TimelineFact], signals: IncidentSignals) -> _Derived:
    candidates: list[tuple[datetime, int, int | None]] = []
    if impacts:
        candidates.append((_utc(impacts[0].occurred_at), 0, impacts[0].entry_id))
    if signals.first_alert_at is not None:
        candidates.append((_utc(signals.first_alert_at), 1, None))
    if candidates:
        at, _rank, entry_id = min(candidates)
        return at, entry_id
    if signals.first_message_at is not None:
        return _utc(signals.first_message_at), None
    return _NONE


def _latest_overrides(
    overrides: Sequence[MilestoneOverride],
) -> dict[MilestoneName, MilestoneOverride]:
    """The override in force for each milestone: the one set last (the later in the sequence on
    a tie), as a second correction replaces the first."""
    latest: dict[MilestoneName, MilestoneOverride] = {}
    for override in overrides:
        name = MilestoneName(override.name)
        current = latest.get(name)
        if current is None or _utc(override.set_at) >= _utc(current.set_at):
            latest[name] = override
    return latest


def _milestone(
    name: MilestoneName,
    derived: _Derived,
    latest: dict[MilestoneName, MilestoneOverride],
) -> Milestone:
    at, entry_id = derived
    override = latest.get(name)
    if override is None:
        return Milestone(name, at, entry_id, at, entry_id, None, None)
    return Milestone(
        name,
        _utc(override.at),
        None,
        at,
        entry_id,
        override.by,
        _utc(override.set_at),
    )


def _seconds(start: datetime | None, end: datetime | None) -> int | None:
    if start is None or end is None:
        return None
    return max(0, (end - start) // timedelta(seconds=1))


def _utc(moment: datetime) -> datetime:
    """`moment` in UTC; a naive moment is taken as UTC, as the stores keep it."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
