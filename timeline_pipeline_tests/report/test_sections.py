"""The report's content as values (timeline_pipeline/report/sections.py, docs/report.md): which
entries it carries and where, what it withholds, its owners and its fingerprint."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from timeline_pipeline.curation.timeline import EntryView, EvidenceLink, TimelineView
from timeline_pipeline.i18n.locales import Locale, Presentation
from timeline_pipeline.report.milestones import (
    IncidentSignals,
    MilestoneName,
    MilestoneOverride,
    derive_milestones,
    durations_of,
)
from timeline_pipeline.report.sections import (
    SECTION_KEYS,
    EntryCounts,
    ReportContent,
    SectionKey,
    build_content,
    content_fingerprint,
    facts_of,
    owners_in,
)

T0 = datetime(2026, 5, 6, 14, 0, tzinfo=UTC)
APPLINK = "https://applink.larksuite.com/client/message/link/open?token=om_{}"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def entry(
    entry_id: int,
    minutes: float,
    category: str,
    title: str,
    *,
    status: str = "confirmed",
    detail: str | None = None,
    evidence: tuple[int, ...] = (),
    recalled: bool = False,
) -> EntryView:
    when = at(minutes)
    return EntryView(
        id=entry_id,
        workspace_id="inc-7",
        occurred_at=when,
        title=title,
        detail=detail,
        category=category,
        source="ai",
        status=status,
        human_edited=False,
        revision=1,
        etag=f'"e{entry_id}.r1"',
        evidence=tuple(
            EvidenceLink(evidence_id, when, None if recalled else APPLINK.format(evidence_id))
            for evidence_id in evidence
        ),
        created_at=when,
        updated_at=when,
        recalled_evidence=recalled,
    )


ENTRIES = [
    entry(1, 5, "impact", "Checkout 5xx at 12%", evidence=(101, 102)),
    entry(2, 7, "finding", "NPE in PaymentTokenSerializer", evidence=(103,), status="draft"),
    entry(3, 11, "decision", "Roll back to v4.17.2", evidence=(104,)),
    entry(4, 12, "mitigation", "Rolled back", detail="all pods on v4.17.2", evidence=(105,)),
    entry(5, 20, "recovery", "5xx back to baseline", evidence=(106,)),
    entry(6, 25, "root_cause", "PR #8812 made wallet_provider mandatory", evidence=(107,)),
    entry(7, 30, "next_step", "owner: Dana add legacy tokens to fixtures", evidence=(108,)),
    entry(8, 31, "next_step", "Canary deploys (Wang Lei)", status="draft", evidence=(109,)),
    entry(9, 9, "impact", "Customer Maria's card number was 4111…", evidence=(110,), recalled=True),
    entry(10, 3, "finding", "Hidden noise", status="hidden", evidence=(111,)),
]


def view(entries: list[EntryView]) -> TimelineView:
    return TimelineView(
        workspace_id="inc-7", statuses=("draft", "confirmed"), entries=entries, summary=None
    )


def content_of(entries: list[EntryView], *overrides: MilestoneOverride) -> ReportContent:
    shown = view(entries)
    signals = IncidentSignals(at(0), at(0), at(4), None)
    milestones = derive_milestones(facts_of(shown), signals, overrides)
    return build_content(
        shown,
        title="Checkout 5xx after v4.18.0",
        status="recovered",
        milestones=milestones,
        durations=durations_of(milestones),
        hidden_count=1,
    )


def ids(content: ReportContent, key: SectionKey) -> list[int]:
    return [item.entry_id for item in content.section(key).items]


def test_sections_gather_their_categories_in_time_order() -> None:
    content = content_of(ENTRIES)
    assert [section.key for section in content.sections] == [key.value for key in SECTION_KEYS]
    assert ids(content, SectionKey.IMPACT) == [1]
    assert ids(content, SectionKey.ROOT_CAUSE) == [6]
    assert ids(content, SectionKey.DECISIONS) == [3]
    assert ids(content, SectionKey.MITIGATIONS) == [4]
    assert ids(content, SectionKey.TIMELINE) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert ids(content, SectionKey.FOLLOW_UPS) == [7, 8]
    assert ids(content, SectionKey.UNCONFIRMED) == [2, 8]


def test_entries_are_in_time_order_whatever_order_the_view_has() -> None:
    assert content_of(list(reversed(ENTRIES))) == content_of(ENTRIES)


def test_an_item_carries_its_text_links_and_owners() -> None:
    content = content_of(ENTRIES)
    items = {item.entry_id: item for item in content.section(SectionKey.TIMELINE).items}
    assert items[4].text == "Rolled back — all pods on v4.17.2"
    assert items[1].text == "Checkout 5xx at 12%"
    assert items[1].links == (APPLINK.format(101), APPLINK.format(102))
    assert items[1].owners == ()
    assert items[7].owners == ("Dana",)
    assert items[8].owners == ("Wang Lei",)
    assert (items[2].status, items[2].category) == ("draft", "finding")
    assert items[2].occurred_at == at(7)


def test_a_recalled_entry_is_withheld_and_its_text_appears_nowhere() -> None:
    content = content_of(ENTRIES)
    assert content.counts == EntryCounts(confirmed=6, drafts=2, hidden=1, withheld=1)
    every_text = [item.text for section in content.sections for item in section.items]
    assert not any("Maria" in text for text in every_text)
    assert 110 not in content.cited_evidence_ids
    assert 111 not in content.cited_evidence_ids  # hidden: never shown
    assert content.cited_evidence_ids == tuple(range(101, 110))
    assert [fact.entry_id for fact in facts_of(view(ENTRIES))] == [1, 2, 3, 4, 5, 6, 7, 8]


def test_a_recalled_impact_cannot_be_the_start() -> None:
    """Entry 9 (recalled) is the only impact once entry 1 is hidden: the start falls back to the
    first message rather than point at an entry the report withholds."""
    shown = view([replace(ENTRIES[0], status="hidden"), *ENTRIES[1:]])
    milestones = derive_milestones(facts_of(shown), IncidentSignals(at(0), at(1), None, None))
    assert (milestones.started.at, milestones.started.entry_id) == (at(1), None)


def test_drafts_pending_and_window() -> None:
    content = content_of(ENTRIES)
    assert content.drafts_pending
    assert (content.window_start, content.window_end) == (at(4), at(20))
    confirmed = [replace(item, status="confirmed") for item in ENTRIES]
    assert not content_of(confirmed).drafts_pending
    ongoing = content_of([item for item in ENTRIES if item.category != "recovery"])
    assert ongoing.window_end is None


def test_the_window_follows_overrides() -> None:
    content = content_of(
        ENTRIES,
        MilestoneOverride(MilestoneName.STARTED, at(2), "cli:alice", at(60)),
        MilestoneOverride(MilestoneName.RESOLVED, at(22), "ui:bob", at(61)),
    )
    assert (content.window_start, content.window_end) == (at(2), at(22))


def test_an_empty_timeline_makes_an_empty_report() -> None:
    shown = view([])
    milestones = derive_milestones(facts_of(shown), IncidentSignals(at(0), None, None, None))
    content = build_content(
        shown,
        title="quiet",
        status="firing",
        milestones=milestones,
        durations=durations_of(milestones),
        hidden_count=0,
    )
    assert all(not section.items for section in content.sections)
    assert content.counts == EntryCounts(0, 0, 0, 0)
    assert (content.window_start, content.window_end) == (None, None)
    assert not content.drafts_pending
    assert content.cited_evidence_ids == ()


# --- owners ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "owners"),
    [
        ("@Dana add the per-card-type alert", ("Dana",)),
        ("owner: Dana", ("Dana",)),
        ("Owners: Dana, Lee and @kim.park", ("Dana", "Lee", "kim.park")),
        ("Dana to add legacy tokens to the staging fixtures", ("Dana",)),
        ("Dana will add a canary stage; Lee to write the runbook", ("Dana", "Lee")),
        ("Add a canary stage (Dana)", ("Dana",)),
        ("Ship 8.3.1 with NoviPush pinned (Wang Lei)", ("Wang Lei",)),
        ("Follow-ups: tax quote timeout; Omar owns the postmortem", ("Omar",)),
        ("Follow-ups: synthetic upload probe; Dan owns", ("Dan",)),
        ("Privacy team to decide on customer notification", ("Privacy team",)),
        ("负责人：陈晨", ("陈晨",)),
        ("负责人: 陈晨、李雷", ("陈晨", "李雷")),
        ("补监控，由陈晨跟进", ("陈晨",)),
        ("@陈晨 补监控", ("陈晨",)),
        ("@陈晨跟进一下连接池告警", ("陈晨",)),
        (
            "TTL jitter 和 singleflight（曹雨，明天）、默认读 replica（罗琦，下周）",
            ("曹雨", "罗琦"),
        ),
        ("对账改 10 分钟并电话告警（钱悦/苏琳）", ("钱悦", "苏琳")),
        ("测试用例加真实 App UA（下周三前）", ()),
        ("pool 配置变更需 DBA approve（孙浩，本周五前）", ("孙浩",)),
        ("Add a 'data as of' label to reports (REP-871)", ()),
        ("alert on EBS burst balance (owners assigned)", ()),
        ("move reads back (prod-euw1) after (Friday)", ()),
        ("Switch to the replica, then restore the timeout", ()),
        ("mail oncall@example.com about it", ()),
        ("@_user_1 to fix the alert", ()),
        ("owner: TBD", ()),
        ("@Dana and owner: Dana", ("Dana",)),
        ("", ()),
    ],
)
def test_owners_in(text: str, owners: tuple[str, ...]) -> None:
    assert owners_in(text) == owners


@given(st.text(max_size=120))
def test_owners_in_never_fails_and_names_each_owner_once(text: str) -> None:
    owners = owners_in(text)
    assert len(owners) == len(set(owners))
    assert all(owner and owner == owner.strip() for owner in owners)


# --- fingerprint ----------------------------------------------------------------------------


def test_the_fingerprint_is_stable_and_covers_what_shows() -> None:
    content = content_of(ENTRIES)
    fingerprint = content_fingerprint(content)
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    assert content_fingerprint(content_of(list(reversed(ENTRIES)))) == fingerprint
    changed = [replace(ENTRIES[0], title="Checkout 5xx at 13%"), *ENTRIES[1:]]
    assert content_fingerprint(content_of(changed)) != fingerprint
    overridden = content_of(
        ENTRIES, MilestoneOverride(MilestoneName.STARTED, at(2), "cli:alice", at(60))
    )
    assert content_fingerprint(overridden) != fingerprint
    assert content_fingerprint(replace(content, status="archived")) != fingerprint
    recounted = replace(content, counts=replace(content.counts, hidden=2))
    assert content_fingerprint(recounted) != fingerprint


def test_the_fingerprint_ignores_what_does_not_show() -> None:
    """An entry's revision, etag and update time are not in the report."""
    touched = [replace(item, revision=2, etag='"x"', updated_at=at(500)) for item in ENTRIES]
    assert content_fingerprint(content_of(touched)) == content_fingerprint(content_of(ENTRIES))


def test_the_same_content_in_another_language_is_another_document() -> None:
    content = content_of(ENTRIES)
    english = content_fingerprint(content, Presentation.default())
    chinese = content_fingerprint(content, Presentation(Locale.ZH_CN, ZoneInfo("Asia/Shanghai")))
    assert len({english, chinese, content_fingerprint(content)}) == 3


@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=40))
def test_any_change_of_a_title_changes_the_fingerprint(first: str, second: str) -> None:
    base = content_of(ENTRIES)
    a = content_fingerprint(replace(base, title=first))
    b = content_fingerprint(replace(base, title=second))
    assert (a == b) == (first == second)
