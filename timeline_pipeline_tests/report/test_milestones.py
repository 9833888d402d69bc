"""The incident's milestones and durations (timeline_pipeline/report/milestones.py, docs/report.md).

The gold table reads the reviewers' timelines of real-shaped transcripts
(`timeline_pipeline_tests/data/gold/<name>/`): each reviewer entry becomes a fact at its earliest
evidence message, the messages give the signals (an `app` sender is a bot), and the workspace is
taken to be created with its first message. The expected values are what an incident reviewer
reads in the transcript, written down before the code was run; where a reviewer would put a
milestone elsewhere than the chat can show, the note says so and the override a curator would make
is checked as well.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from random import Random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from timeline_pipeline.report.milestones import (
    Durations,
    IncidentSignals,
    MilestoneError,
    MilestoneName,
    MilestoneOverride,
    SignalMessage,
    TimelineFact,
    check_override,
    derive_milestones,
    durations_of,
    is_alert,
    signals_of,
)

GOLD = Path(__file__).parents[1] / "data" / "gold"
T0 = datetime(2026, 5, 6, 14, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def fact(entry_id: int, minutes: float, category: str, status: str = "confirmed") -> TimelineFact:
    return TimelineFact(entry_id, at(minutes), category, status)


def signals(
    *,
    created: float = 0,
    first_message: float | None = 0,
    first_alert: float | None = None,
    recovered: float | None = None,
) -> IncidentSignals:
    return IncidentSignals(
        created_at=at(created),
        first_message_at=None if first_message is None else at(first_message),
        first_alert_at=None if first_alert is None else at(first_alert),
        recovered_at=None if recovered is None else at(recovered),
    )


# --- the gold transcripts, as a reviewer reads them ----------------------------------------


@dataclass(frozen=True)
class Reading:
    """A reviewer's reading of one transcript: times in UTC, entries by their 1-based place in
    `expected.json`, durations in seconds (detect, mitigate, resolve)."""

    name: str
    started: str
    started_entry: int | None
    detected: str
    mitigated: str | None
    mitigated_entry: int | None
    resolved: str | None
    resolved_entry: int | None
    durations: tuple[int | None, int | None, int | None]
    note: str
    started_override: str | None = None
    """Where a curator would move `started` after reading the chat, when it says so."""
    durations_after_override: tuple[int | None, int | None, int | None] | None = None


READINGS = [
    Reading(
        "bad_deploy_rollback",
        started="2025-05-06T14:05:10Z",  # [FIRING] checkout-service 5xx, before the impact entry
        started_entry=None,
        detected="2025-05-06T14:05:10Z",  # not 14:02:00, the "Deploy finished" notice
        mitigated="2025-05-06T14:11:20Z",  # "rolling back"
        mitigated_entry=6,
        resolved="2025-05-06T14:42:00Z",  # "marking the incident resolved"
        resolved_entry=18,
        durations=(0, 370, 2210),
        note="the chat says the 5xx began when the deploy finished at 14:02: a curator sets it",
        started_override="2025-05-06T14:02:00Z",
        durations_after_override=(190, 560, 2400),
    ),
    Reading(
        "db_failover",
        started="2025-03-14T02:13:00Z",  # [FIRING] orders-db-1 health check failed
        started_entry=None,
        detected="2025-03-14T02:13:00Z",
        mitigated="2025-03-14T02:27:00Z",  # "failover started"
        mitigated_entry=10,
        resolved="2025-03-14T02:51:00Z",  # baseline for 15 min; the 02:57 rebuild comes after
        resolved_entry=17,
        durations=(0, 840, 2280),
        note="impact 'since 02:11' per the first report; the replica rebuild is not mitigation",
        started_override="2025-03-14T02:11:00Z",
        durations_after_override=(120, 960, 2400),
    ),
    Reading(
        "checkout_tax_timeout",
        started="2026-06-25T14:00:00Z",  # [FIRING] checkout_success_ratio, 50 s before support
        started_entry=None,
        detected="2026-06-25T14:00:00Z",
        mitigated="2026-06-25T14:18:00Z",  # tax-svc back on 3.13
        mitigated_entry=8,
        resolved="2026-06-25T14:31:00Z",  # status page resolved (the last recovery entry)
        resolved_entry=12,
        durations=(0, 1080, 1860),
        note="monitoring fired first; detection was immediate",
    ),
    Reading(
        "batch_export_corruption",
        started="2026-03-19T08:41:00Z",  # the partner's report is the first message and impact
        started_entry=1,
        detected="2026-03-19T08:41:00Z",  # no alert ("no alert fired"): the workspace's creation
        mitigated="2026-03-19T09:12:55Z",  # notice to the 14 partners
        mitigated_entry=12,
        resolved="2026-03-19T09:29:40Z",  # re-runs delivered (the entry's first message)
        resolved_entry=14,
        durations=(0, 1915, 2920),
        note="the truncation began two nights earlier; the chat cannot date it, a curator would",
    ),
    Reading(
        "replica_lag_reports",
        started="2026-05-19T15:12:00Z",  # support's report precedes the ticket-spike bot
        started_entry=1,
        detected="2026-05-19T15:12:25Z",  # "Ticket spike: tag reports-data"
        mitigated="2026-05-19T15:24:10Z",  # reads routed to the primary
        mitigated_entry=8,
        resolved="2026-05-19T15:47:05Z",  # reads back on the replicas, reports still correct
        resolved_entry=14,
        durations=(25, 730, 2105),
        note="the one chat where people saw it before a bot did",
    ),
    Reading(
        "canary_release_crash_cn",
        started="2026-09-03T08:49:10Z",  # [P2] Pod 重启次数 > 3, after two release notices
        started_entry=None,
        detected="2026-09-03T08:49:10Z",
        mitigated="2026-09-03T09:02:20Z",  # 回滚完了
        mitigated_entry=6,
        resolved="2026-09-03T09:03:30Z",  # 错误率 0.05%
        resolved_entry=7,
        durations=(0, 790, 860),
        note="the impact summary says 16:45 (08:45 UTC): a curator may set it",
        started_override="2026-09-03T08:45:00Z",
        durations_after_override=(250, 1040, 1110),
    ),
    Reading(
        "mysql_primary_failover_cn",
        started="2026-03-17T02:12:05Z",  # [P1] mysql-order-01 磁盘 IO util > 95%
        started_entry=None,
        detected="2026-03-17T02:12:05Z",
        mitigated="2026-03-17T02:28:20Z",  # 切主完成
        mitigated_entry=9,
        resolved="2026-03-17T02:35:30Z",  # p99 180ms，下单成功率 99.9%
        resolved_entry=13,
        durations=(0, 975, 1405),
        note="the impact summary says 10:10 (02:10 UTC)",
    ),
    Reading(
        "redis_hotkey_cn",
        started="2026-11-10T16:01:10Z",  # [P0] shard-07 CPU > 90%
        started_entry=None,
        detected="2026-11-10T16:01:10Z",
        mitigated="2026-11-10T16:14:10Z",  # 限流已经生效
        mitigated_entry=9,
        resolved="2026-11-10T16:19:40Z",  # 用户可以正常进入商详页 (the later of two recoveries)
        resolved_entry=12,
        durations=(0, 780, 1110),
        note="the flash sale began at 00:00 (16:00 UTC), 70 s before the alert",
    ),
    Reading(
        "cdn_stale_assets_zh",
        started="2026-09-03T06:10:35Z",  # 商家反馈订单页打不开
        started_entry=1,
        detected="2026-09-03T06:02:10Z",  # no alert (the Sentry line is a person's paste)
        mitigated="2026-09-03T06:22:30Z",  # cache key reverted
        mitigated_entry=10,
        resolved="2026-09-03T06:33:35Z",  # merchants normal after refresh
        resolved_entry=13,
        durations=(0, 715, 1380),
        note="no alert, so detection falls back to the workspace's creation, which here is the "
        "release notice before the impact: clamped to 0, as the incident cannot be detected "
        "before it started",
    ),
    Reading(
        "cache_stampede_mix",
        started="2026-06-18T12:00:05Z",  # [FIRING] mysql-product-01 CPU 100%
        started_entry=None,
        detected="2026-06-18T12:00:05Z",
        mitigated="2026-06-18T12:09:05Z",  # 限流 8k QPS 生效
        mitigated_entry=7,
        resolved="2026-06-18T12:32:05Z",  # 运营确认恢复 (the last of three recoveries)
        resolved_entry=14,
        durations=(0, 540, 1920),
        note="matches the impact summary, 20:00-20:31 local",
    ),
    Reading(
        "pg_connection_exhaustion_mix",
        started="2026-03-17T02:12:20Z",  # [FIRING] order-api 5xx, not the 02:05 [变更完成]
        started_entry=None,
        detected="2026-03-17T02:12:20Z",
        mitigated="2026-03-17T02:24:30Z",  # report-svc prepareThreshold=0
        mitigated_entry=9,
        resolved="2026-03-17T02:35:20Z",  # cl_waiting 0, 5xx 0.1%
        resolved_entry=14,
        durations=(0, 730, 1380),
        note="the config change at 02:05 caused it; impact began at 10:12 local per the summary",
    ),
    Reading(
        "waf_false_positive_mix",
        started="2026-08-12T06:33:10Z",  # [FIRING] login_success_rate, not the [WAF 规则变更]
        started_entry=None,
        detected="2026-08-12T06:33:10Z",
        mitigated="2026-08-12T06:41:10Z",  # 改为 log only
        mitigated_entry=8,
        resolved="2026-08-12T06:45:10Z",  # Android login success rate back to 97%
        resolved_entry=9,
        durations=(0, 480, 720),
        note="the impact summary says 14:32 local, 70 s before the alert",
    ),
    Reading(
        "mobile_crash_loop_zh",
        started="2026-07-14T02:02:00Z",  # [告警] crash-free users < 97%
        started_entry=None,
        detected="2026-07-14T02:02:00Z",
        mitigated="2026-07-14T02:13:25Z",  # staged rollout halted
        mitigated_entry=8,
        resolved="2026-07-14T02:22:33Z",  # 32-bit test device starts cleanly
        resolved_entry=14,
        durations=(0, 685, 1233),
        note="the rollout began days earlier; crash-free users fell within the alert's hour",
    ),
]


def _message_text(message: dict[str, object]) -> str:
    body = message["body"]
    assert isinstance(body, dict)
    content = json.loads(str(body["content"]))
    return str(content.get("text") or content.get("title") or "")


def _gold(name: str) -> tuple[list[TimelineFact], IncidentSignals]:
    folder = GOLD / name
    messages = [
        json.loads(line) for line in (folder / "messages.jsonl").read_text().splitlines() if line
    ]
    times = {
        message["message_id"]: datetime.fromtimestamp(int(message["create_time"]) / 1000, UTC)
        for message in messages
    }
    reviewer = json.loads((folder / "expected.json").read_text())
    facts = [
        TimelineFact(
            entry_id=place,
            occurred_at=min(times[message_id] for message_id in entry["evidence_message_ids"]),
            category=entry["category"],
            status="confirmed",
        )
        for place, entry in enumerate(reviewer, start=1)
    ]
    found = signals_of(
        (
            SignalMessage(
                occurred_at=times[message["message_id"]],
                from_app=message["sender"]["sender_type"] == "app",
                text=_message_text(message),
            )
            for message in messages
        ),
        created_at=min(times.values()),
    )
    return facts, found


def test_the_gold_table_covers_english_chinese_and_mixed_chats() -> None:
    names = [reading.name for reading in READINGS]
    assert len(names) >= 6
    assert any(name.endswith("_cn") for name in names)
    assert any(name.endswith("_mix") for name in names)
    assert any(not name.endswith(("_cn", "_mix", "_zh")) for name in names)


@pytest.mark.parametrize("reading", READINGS, ids=lambda reading: reading.name)
def test_gold_transcripts_give_the_milestones_a_reviewer_reads(reading: Reading) -> None:
    facts, found = _gold(reading.name)
    milestones = derive_milestones(facts, found)
    assert milestones.started.at == iso(reading.started), reading.note
    assert milestones.started.entry_id == reading.started_entry
    assert milestones.detected.at == iso(reading.detected)
    assert milestones.detected.entry_id is None
    assert milestones.mitigated.at == (iso(reading.mitigated) if reading.mitigated else None)
    assert milestones.mitigated.entry_id == reading.mitigated_entry
    assert milestones.resolved.at == (iso(reading.resolved) if reading.resolved else None)
    assert milestones.resolved.entry_id == reading.resolved_entry
    durations = durations_of(milestones)
    assert (
        durations.time_to_detect,
        durations.time_to_mitigate,
        durations.time_to_resolve,
    ) == reading.durations


@pytest.mark.parametrize(
    "reading",
    [reading for reading in READINGS if reading.started_override],
    ids=lambda reading: reading.name,
)
def test_a_curator_moves_the_start_to_what_the_chat_says(reading: Reading) -> None:
    facts, found = _gold(reading.name)
    derived = derive_milestones(facts, found)
    assert reading.started_override is not None
    start = iso(reading.started_override)
    now = iso(reading.started) + timedelta(days=1)
    check_override(derived, MilestoneName.STARTED, start, now=now)
    correction = MilestoneOverride(MilestoneName.STARTED, start, "cli:reviewer", now)
    corrected = derive_milestones(facts, found, [correction])
    assert corrected.started.at == start
    assert corrected.started.derived_at == iso(reading.started)
    assert corrected.started.overridden_by == "cli:reviewer"
    durations = durations_of(corrected)
    assert (
        durations.time_to_detect,
        durations.time_to_mitigate,
        durations.time_to_resolve,
    ) == reading.durations_after_override


@pytest.mark.parametrize(
    ("name", "first_app_message", "first_alert"),
    [
        ("bad_deploy_rollback", "2025-05-06T14:02:00Z", "2025-05-06T14:05:10Z"),
        ("canary_release_crash_cn", "2026-09-03T08:40:00Z", "2026-09-03T08:49:10Z"),
        ("pg_connection_exhaustion_mix", "2026-03-17T02:05:00Z", "2026-03-17T02:12:20Z"),
        ("waf_false_positive_mix", "2026-08-12T06:30:10Z", "2026-08-12T06:33:10Z"),
        ("batch_export_corruption", "2026-03-19T08:51:10Z", None),
    ],
)
def test_release_and_change_notices_are_not_the_detection(
    name: str, first_app_message: str, first_alert: str | None
) -> None:
    """ "The first app message" would be these chats' deploy or change notice (or a job's run
    summary): the alert comes later, or never."""
    messages = [
        json.loads(line) for line in (GOLD / name / "messages.jsonl").read_text().splitlines()
    ]
    apps = [message for message in messages if message["sender"]["sender_type"] == "app"]
    first = datetime.fromtimestamp(int(apps[0]["create_time"]) / 1000, UTC)
    assert first == iso(first_app_message)
    _facts, found = _gold(name)
    assert found.first_alert_at == (iso(first_alert) if first_alert else None)


# --- the rules, one at a time ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("facts", "found", "started"),
    [
        pytest.param(
            [fact(1, 5, "impact"), fact(2, 3, "impact")],
            signals(),
            (3, 2),
            id="the earliest impact entry",
        ),
        pytest.param(
            [fact(1, 5, "impact")], signals(first_alert=2), (2, None), id="an earlier alert"
        ),
        pytest.param([fact(1, 5, "impact")], signals(first_alert=7), (5, 1), id="a later alert"),
        pytest.param(
            [fact(1, 5, "impact")], signals(first_alert=5), (5, 1), id="a tie keeps the entry"
        ),
        pytest.param(
            [fact(1, 1, "finding")],
            signals(first_message=1.5, first_alert=4),
            (4, None),
            id="no impact: the alert",
        ),
        pytest.param(
            [fact(1, 1, "finding")], signals(first_message=1.5), (1.5, None), id="first message"
        ),
        pytest.param([], signals(first_message=None), (None, None), id="nothing yet"),
        pytest.param(
            [fact(1, 1, "impact", "hidden"), fact(2, 6, "impact", "draft")],
            signals(),
            (6, 2),
            id="a hidden entry does not count, a draft does",
        ),
    ],
)
def test_started(
    facts: list[TimelineFact], found: IncidentSignals, started: tuple[float | None, int | None]
) -> None:
    milestone = derive_milestones(facts, found).started
    minutes, entry_id = started
    assert milestone.at == (None if minutes is None else at(minutes))
    assert milestone.entry_id == entry_id


@pytest.mark.parametrize(
    ("found", "detected"),
    [
        (signals(created=1, first_alert=3), 3),
        (signals(created=1), 1),
        (signals(created=9, first_alert=3), 3),
    ],
)
def test_detected_is_the_first_alert_else_the_workspaces_creation(
    found: IncidentSignals, detected: float
) -> None:
    milestone = derive_milestones([fact(1, 5, "impact")], found).detected
    assert (milestone.at, milestone.entry_id) == (at(detected), None)


@pytest.mark.parametrize(
    ("facts", "found", "mitigated", "resolved"),
    [
        pytest.param(
            [fact(1, 10, "mitigation"), fact(2, 20, "mitigation"), fact(3, 30, "recovery")],
            signals(),
            (10, 1),
            (30, 3),
            id="the first mitigation, the last recovery",
        ),
        pytest.param(
            [fact(1, 40, "mitigation"), fact(2, 20, "mitigation"), fact(3, 30, "recovery")],
            signals(),
            (20, 2),
            (30, 3),
            id="in time order, not entry order",
        ),
        pytest.param(
            [fact(1, 40, "mitigation"), fact(3, 30, "recovery")],
            signals(),
            (None, None),
            (30, 3),
            id="a mitigation after the resolution is not one",
        ),
        pytest.param(
            [fact(1, 30, "mitigation"), fact(3, 30, "recovery")],
            signals(),
            (30, 1),
            (30, 3),
            id="at the resolution counts",
        ),
        pytest.param(
            [fact(1, 40, "mitigation"), fact(2, 50, "mitigation")],
            signals(),
            (40, 1),
            (None, None),
            id="no resolution yet: the first mitigation",
        ),
        pytest.param(
            [fact(1, 10, "mitigation"), fact(2, 20, "recovery"), fact(3, 45, "recovery")],
            signals(recovered=60),
            (10, 1),
            (45, 3),
            id="a recovery entry wins over the status change",
        ),
        pytest.param(
            [fact(1, 10, "mitigation"), fact(2, 20, "recovery", "hidden")],
            signals(recovered=60),
            (10, 1),
            (60, None),
            id="else the status change to recovered",
        ),
    ],
)
def test_mitigated_and_resolved(
    facts: list[TimelineFact],
    found: IncidentSignals,
    mitigated: tuple[float | None, int | None],
    resolved: tuple[float | None, int | None],
) -> None:
    milestones = derive_milestones(facts, found)

    def shown(minutes: float | None, entry_id: int | None) -> tuple[datetime | None, int | None]:
        return (None if minutes is None else at(minutes), entry_id)

    assert (milestones.mitigated.at, milestones.mitigated.entry_id) == shown(*mitigated)
    assert (milestones.resolved.at, milestones.resolved.entry_id) == shown(*resolved)


def test_times_come_out_in_utc_and_a_naive_time_is_taken_as_utc() -> None:
    shanghai = timezone(timedelta(hours=8))
    facts = [
        TimelineFact(1, datetime(2026, 5, 6, 22, 0, tzinfo=shanghai), "impact", "confirmed"),
        TimelineFact(2, datetime(2026, 5, 6, 14, 30), "recovery", "confirmed"),
    ]
    milestones = derive_milestones(facts, signals())
    assert milestones.started.at == datetime(2026, 5, 6, 14, 0, tzinfo=UTC)
    assert milestones.started.at is not None and milestones.started.at.tzinfo is UTC
    assert milestones.resolved.at == datetime(2026, 5, 6, 14, 30, tzinfo=UTC)


def test_milestones_iterate_in_order_and_are_found_by_name() -> None:
    milestones = derive_milestones([fact(1, 5, "impact")], signals(first_alert=6))
    assert [milestone.name for milestone in milestones] == list(MilestoneName)
    assert milestones.get("detected") is milestones.detected
    assert milestones.get(MilestoneName.RESOLVED) is milestones.resolved


# --- overrides ------------------------------------------------------------------------------

TIMELINE = [
    fact(1, 5, "impact"),
    fact(2, 12, "mitigation"),
    fact(3, 25, "mitigation"),
    fact(4, 40, "recovery"),
]


def override(
    name: MilestoneName, minutes: float, by: str = "cli:alice", set_at: float = 90
) -> MilestoneOverride:
    return MilestoneOverride(name, at(minutes), by, at(set_at))


def test_an_override_replaces_the_time_and_keeps_what_the_timeline_says() -> None:
    milestones = derive_milestones(
        TIMELINE, signals(first_alert=8), [override(MilestoneName.MITIGATED, 10)]
    )
    mitigated = milestones.mitigated
    assert mitigated.at == at(10)
    assert mitigated.entry_id is None
    assert (mitigated.derived_at, mitigated.derived_entry_id) == (at(12), 2)
    assert (mitigated.overridden_by, mitigated.overridden_at) == ("cli:alice", at(90))
    assert mitigated.overridden
    untouched = milestones.started
    assert (untouched.at, untouched.entry_id) == (untouched.derived_at, untouched.derived_entry_id)
    assert untouched.overridden_by is None and untouched.overridden_at is None
    assert not untouched.overridden
    assert durations_of(milestones).time_to_mitigate == 5 * 60


def test_the_latest_override_of_a_milestone_wins() -> None:
    first = override(MilestoneName.STARTED, 1, "ui:bob", set_at=80)
    second = override(MilestoneName.STARTED, 3, "token:ci", set_at=85)
    for order in ([first, second], [second, first]):
        started = derive_milestones(TIMELINE, signals(), order).started
        assert (started.at, started.overridden_by) == (at(3), "token:ci")


def test_an_earlier_resolution_moves_the_mitigation_with_it() -> None:
    """The mitigation is the first one before the resolution the report shows."""
    moved = derive_milestones(TIMELINE, signals(), [override(MilestoneName.RESOLVED, 20)])
    assert (moved.resolved.at, moved.resolved.derived_at) == (at(20), at(40))
    assert (moved.mitigated.at, moved.mitigated.entry_id) == (at(12), 2)
    before_any = derive_milestones(TIMELINE, signals(), [override(MilestoneName.RESOLVED, 10)])
    assert before_any.mitigated.at is None
    assert durations_of(before_any).time_to_mitigate is None


# --- durations ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("facts", "found", "expected"),
    [
        pytest.param(
            TIMELINE, signals(first_alert=8), Durations(180, 420, 2100), id="whole seconds"
        ),
        pytest.param(
            [fact(1, 5, "impact")], signals(first_alert=2), Durations(0, None, None), id="ongoing"
        ),
        pytest.param(
            [fact(1, 5, "impact"), fact(2, 5 + 59.9 / 60, "mitigation")],
            signals(created=30),
            Durations(25 * 60, 59, None),
            id="a part second is dropped",
        ),
        pytest.param(
            [fact(1, 5, "impact"), fact(2, 6, "mitigation")],
            signals(created=1),
            Durations(0, 60, None),
            id="created before the impact: detected at once",
        ),
        pytest.param([], signals(first_message=None), Durations(None, None, None), id="no start"),
    ],
)
def test_durations(facts: list[TimelineFact], found: IncidentSignals, expected: Durations) -> None:
    assert durations_of(derive_milestones(facts, found)) == expected


def test_a_negative_span_is_clamped_to_zero() -> None:
    milestones = derive_milestones(TIMELINE, signals(), [override(MilestoneName.STARTED, 30)])
    assert durations_of(milestones) == Durations(0, 0, 600)


# --- refusals -------------------------------------------------------------------------------

NOW = at(120)
SHOWN = derive_milestones(TIMELINE, signals(first_alert=8))  # started 5, detected 8, 12, 40


@pytest.mark.parametrize(
    ("name", "when", "reason"),
    [
        (MilestoneName.RESOLVED, at(121), "in the future"),
        (MilestoneName.STARTED, at(-1) + timedelta(days=1), "in the future"),
        (MilestoneName.MITIGATED, at(41), "after the incident was resolved"),
        (MilestoneName.DETECTED, at(50), "after the incident was resolved"),
        (MilestoneName.STARTED, at(45), "after the incident was resolved"),
        (MilestoneName.RESOLVED, at(4), "before the incident started"),
        (MilestoneName.STARTED, at(9), "after detected"),
        (MilestoneName.STARTED, at(8) + timedelta(seconds=1), "after detected"),
        (MilestoneName.STARTED, datetime(2026, 5, 6, 14, 3), "UTC offset"),
    ],
)
def test_check_override_refuses(name: MilestoneName, when: datetime, reason: str) -> None:
    with pytest.raises(MilestoneError, match=reason) as refused:
        check_override(SHOWN, name, when, now=NOW)
    assert "\n" not in str(refused.value)
    assert isinstance(refused.value, ValueError)


def test_an_unknown_milestone_is_refused() -> None:
    with pytest.raises(MilestoneError, match="unknown milestone 'ended'"):
        check_override(SHOWN, "ended", at(10), now=NOW)


def test_started_after_an_overridden_mitigation_is_refused() -> None:
    shown = derive_milestones(
        TIMELINE, signals(first_alert=30), [override(MilestoneName.MITIGATED, 6)]
    )
    with pytest.raises(MilestoneError, match=r"started at .* is after mitigated"):
        check_override(shown, "started", at(7), now=NOW)


@pytest.mark.parametrize(
    ("name", "when"),
    [
        (MilestoneName.STARTED, at(2)),
        (MilestoneName.STARTED, at(8)),
        (MilestoneName.DETECTED, at(1)),  # detection before the start: clamped, not refused
        (MilestoneName.MITIGATED, at(40)),
        (MilestoneName.RESOLVED, at(5)),
        (MilestoneName.RESOLVED, at(120)),
        (MilestoneName.RESOLVED, datetime(2026, 5, 6, 22, 50, tzinfo=timezone(timedelta(hours=8)))),
    ],
)
def test_check_override_accepts(name: MilestoneName, when: datetime) -> None:
    check_override(SHOWN, name, when, now=NOW)


def test_with_nothing_resolved_any_past_time_is_accepted() -> None:
    ongoing = derive_milestones([fact(1, 5, "impact")], signals())
    check_override(ongoing, MilestoneName.MITIGATED, at(100), now=NOW)
    check_override(ongoing, MilestoneName.RESOLVED, at(100), now=NOW)


# --- alerts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "alert"),
    [
        ("[FIRING] checkout-service 5xx ratio 12% (threshold 2%)", True),
        ("[ALERT] checkout conversion (web) 2.41% vs 7d baseline 3.38%", True),
        ("[TRIGGERED] #48213 edge-ingress 5xx ratio 4.2% > 2%", True),
        ("[P1] 首页 feed 接口错误率 > 1%", True),
        ("[告警] lumo-android crash-free users < 97% (1h)", True),
        ("[高危] 检测到 AccessKey 泄露", True),
        ("[对账告警] 退款对账差异 ¥48,230.00", True),
        ("[WARN] pg-main-01 connections 412/500", True),
        ("Secret detected: OAuth client secret in public repository", True),
        ("Ticket spike: tag reports-data", True),
        ("New issue: S3Error AccessDenied in upload_worker.put_object", True),
        ("[RESOLVED] checkout-service 5xx ratio", False),
        ("[ACKNOWLEDGED] #48213 edge-ingress 5xx ratio", False),
        ("[已恢复] order-service /api/order/submit p99 > 3s", False),
        ("[对账恢复] 退款对账差异 ¥0.00", False),
        ("[发布完成] merchant-web v5.12.0 → prod", False),
        ("[WAF 规则变更] rule 100412 login-credential-stuffing → BLOCK", False),
        ("[灰度发布开始] recommend-api v3.7.0 → prod 灰度 10%", False),
        ("Deploy finished: checkout-service v4.18.0 -> prod", False),
        ("✅ web-frontend v2026.08.19-3 deployed to prod", False),
        ("Feature flag changed", False),
        ("Patroni switchover in progress", False),
        ("Dashboard snapshot: checkout overview", False),
        ("export-nightly: run summary (last 3)", False),
        ("配置发布成功: push.novi.enabled", False),
        ("Issue S3Error AccessDenied resolved", False),
    ],
)
def test_is_alert(text: str, alert: bool) -> None:
    assert is_alert(text) is alert


def test_signals_read_any_order_and_only_an_apps_alert() -> None:
    found = signals_of(
        [
            SignalMessage(at(9), True, "[FIRING] again"),
            SignalMessage(at(3), False, "[FIRING] pasted by a person"),
            SignalMessage(at(1), True, "Deploy finished"),
            SignalMessage(at(6), True, "[FIRING] api 5xx"),
        ],
        created_at=at(0),
        recovered_at=at(30),
    )
    assert found == IncidentSignals(at(0), at(1), at(6), at(30))
    assert signals_of([], created_at=at(0)) == IncidentSignals(at(0), None, None, None)


# --- properties -----------------------------------------------------------------------------

CATEGORIES = ["impact", "mitigation", "recovery", "finding", "decision", "next_step"]
minutes = st.integers(min_value=0, max_value=600)
facts_strategy = st.lists(
    st.builds(
        lambda entry_id, m, category, status: fact(entry_id, m, category, status),
        st.integers(min_value=1, max_value=10_000),
        minutes,
        st.sampled_from(CATEGORIES),
        st.sampled_from(["draft", "confirmed", "hidden"]),
    ),
    max_size=12,
    unique_by=lambda item: item.entry_id,
)
signals_strategy = st.builds(
    lambda created, first, alert, recovered: signals(
        created=created, first_message=first, first_alert=alert, recovered=recovered
    ),
    minutes,
    st.none() | minutes,
    st.none() | minutes,
    st.none() | minutes,
)


@given(facts_strategy, signals_strategy, st.randoms(use_true_random=False))
def test_milestones_follow_their_rules(
    facts: list[TimelineFact], found: IncidentSignals, random: Random
) -> None:
    milestones = derive_milestones(facts, found)
    by_id = {item.entry_id: item for item in facts}
    for milestone, category in (
        (milestones.started, "impact"),
        (milestones.mitigated, "mitigation"),
        (milestones.resolved, "recovery"),
    ):
        if milestone.entry_id is not None:
            assert by_id[milestone.entry_id].category == category
            assert by_id[milestone.entry_id].status != "hidden"
            assert by_id[milestone.entry_id].occurred_at == milestone.at
    started = milestones.started.at
    if started is not None and found.first_alert_at is not None:
        assert started <= found.first_alert_at
    if milestones.mitigated.at is not None and milestones.resolved.at is not None:
        assert milestones.mitigated.at <= milestones.resolved.at
    durations = durations_of(milestones)
    for value in (durations.time_to_detect, durations.time_to_mitigate, durations.time_to_resolve):
        assert value is None or value >= 0
    shuffled = list(facts)
    random.shuffle(shuffled)
    assert derive_milestones(shuffled, found) == milestones


@given(facts_strategy, signals_strategy, st.sampled_from(list(MilestoneName)), minutes)
def test_an_override_never_changes_what_the_timeline_says_of_it(
    facts: list[TimelineFact], found: IncidentSignals, name: MilestoneName, moved: int
) -> None:
    plain = derive_milestones(facts, found).get(name)
    overridden = derive_milestones(facts, found, [override(name, moved)]).get(name)
    assert overridden.at == at(moved)
    assert (overridden.derived_at, overridden.derived_entry_id) == (
        plain.derived_at,
        plain.derived_entry_id,
    )
    assert overridden.entry_id is None


@given(facts_strategy, signals_strategy, st.sampled_from(list(MilestoneName)), minutes)
def test_an_accepted_override_keeps_the_order_it_checks(
    facts: list[TimelineFact], found: IncidentSignals, name: MilestoneName, moved: int
) -> None:
    shown = derive_milestones(facts, found)
    try:
        check_override(shown, name, at(moved), now=at(601))
    except MilestoneError:
        return
    after = derive_milestones(facts, found, [override(name, moved)])
    started, resolved = after.started.at, after.resolved.at
    if name is MilestoneName.STARTED:
        assert all(m.at is None or m.at >= at(moved) for m in after if m.name is not name)
    if resolved is not None and name is not MilestoneName.RESOLVED:
        assert at(moved) <= resolved
    if name is MilestoneName.RESOLVED and started is not None:
        assert started <= at(moved)
