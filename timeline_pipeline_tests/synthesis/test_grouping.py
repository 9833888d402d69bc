"""Conversation grouping (thread, then root, then replies, then proximity) and read-only
context selection (docs/design.md §7)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline_pipeline.synthesis.grouping import group_evidence, select_context
from timeline_pipeline.synthesis.models import EvidenceItem
from timeline_pipeline_tests.synthesis.builders import WINDOW_END, WINDOW_START, evidence

FIVE_MINUTES = timedelta(minutes=5)


def _shape(items: list[EvidenceItem], gap_seconds: int = 120) -> list[tuple[str, list[int]]]:
    groups = group_evidence(items, proximity_gap=timedelta(seconds=gap_seconds))
    return [(group.key, [item.id for item in group.evidence]) for group in groups]


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param([], [], id="empty"),
        pytest.param(
            [evidence(1, thread="omt_a"), evidence(2), evidence(3, thread="omt_a")],
            [("thread:omt_a", [1, 3]), ("time:om_2", [2])],
            id="thread-first",
        ),
        pytest.param(
            [evidence(1, root="om_r", parent="om_r"), evidence(2), evidence(3, root="om_r")],
            [("root:om_r", [1, 3]), ("time:om_2", [2])],
            id="shared-root-whose-root-is-outside-the-chunk",
        ),
        pytest.param(
            [evidence(1), evidence(2), evidence(3, root="om_1", parent="om_1")],
            [("root:om_1", [1, 3]), ("time:om_2", [2])],
            id="top-level-message-and-its-reply",
        ),
        pytest.param(
            [
                evidence(1, thread="omt_t"),
                evidence(2, thread="omt_t", root="om_1", parent="om_1"),
                evidence(3, root="om_1", parent="om_2"),
            ],
            [("thread:omt_t", [1, 2, 3])],
            id="thread-and-root-links-join-one-conversation",
        ),
        pytest.param(
            [evidence(1, at=0), evidence(2, at=60), evidence(3, at=300), evidence(4, at=330)],
            [("time:om_1", [1, 2]), ("time:om_3", [3, 4])],
            id="loose-messages-split-on-a-pause",
        ),
        pytest.param(
            [
                evidence(1, at=0),
                evidence(2, at=50, thread="omt_x"),
                evidence(3, at=100),
                evidence(4, at=110, thread="omt_x"),
            ],
            [("time:om_1", [1, 3]), ("thread:omt_x", [2, 4])],
            id="interleaved-conversations-keep-their-own-order",
        ),
    ],
)
def test_grouping(items: list[EvidenceItem], expected: list[tuple[str, list[int]]]) -> None:
    assert _shape(items) == expected


def test_groups_are_ordered_by_their_first_message() -> None:
    items = [evidence(1), evidence(2, thread="omt_b"), evidence(3, thread="omt_a"), evidence(4)]
    assert [key for key, _ in _shape(items, gap_seconds=5)] == [
        "time:om_1",
        "thread:omt_b",
        "thread:omt_a",
        "time:om_4",
    ]


def test_a_reply_known_only_by_its_parent_joins_that_conversation() -> None:
    # Lark sets root_id on replies, but a parent alone must still connect the two.
    items = [evidence(1, root="om_x"), evidence(2), evidence(3, parent="om_x")]
    assert _shape(items) == [("root:om_x", [1, 3]), ("time:om_2", [2])]


_links = st.sampled_from([None, "a", "b", "c"])


@st.composite
def chunk_evidence(draw: st.DrawFn) -> list[EvidenceItem]:
    size = draw(st.integers(min_value=0, max_value=40))
    offsets = sorted(draw(st.integers(min_value=0, max_value=599)) for _ in range(size))
    items = []
    for index, offset in enumerate(offsets, start=1):
        thread, root, parent = draw(_links), draw(_links), draw(_links)
        items.append(
            evidence(
                index,
                at=offset,
                thread=f"omt_{thread}" if thread else None,
                root=f"om_{draw(st.integers(1, max(1, size)))}" if root else None,
                parent=f"om_{draw(st.integers(1, max(1, size)))}" if parent else None,
            )
        )
    return items


@settings(max_examples=200, deadline=None)
@given(items=chunk_evidence(), gap=st.integers(min_value=0, max_value=600))
def test_every_message_lands_in_exactly_one_group_in_order(
    items: list[EvidenceItem], gap: int
) -> None:
    groups = group_evidence(items, proximity_gap=timedelta(seconds=gap))
    position = {item.id: index for index, item in enumerate(items)}
    grouped = [item.id for group in groups for item in group.evidence]
    assert sorted(grouped) == [item.id for item in items]
    assert len({group.key for group in groups}) == len(groups)
    for group in groups:
        positions = [position[item.id] for item in group.evidence]
        assert positions == sorted(positions)
    firsts = [position[group.evidence[0].id] for group in groups]
    assert firsts == sorted(firsts)


@settings(max_examples=100, deadline=None)
@given(items=chunk_evidence())
def test_same_thread_always_shares_a_group(items: list[EvidenceItem]) -> None:
    group_of = {item.id: group.key for group in group_evidence(items) for item in group.evidence}
    by_thread: dict[str, set[str]] = {}
    for item in items:
        if item.thread_id is not None:
            by_thread.setdefault(item.thread_id, set()).add(group_of[item.id])
    assert all(len(keys) == 1 for keys in by_thread.values())


# --- context -------------------------------------------------------------------------------


def _context_ids(chunk: list[EvidenceItem], candidates: list[EvidenceItem], **kw: int) -> list[int]:
    selected = select_context(
        chunk, candidates, FIVE_MINUTES, window_start=WINDOW_START, window_end=WINDOW_END, **kw
    )
    return [item.id for item in selected]


def test_context_is_the_lookback_plus_same_conversation_up_to_window_end() -> None:
    chunk = [evidence(10, at=30, thread="omt_t"), evidence(11, at=40, root="om_r")]
    candidates = [
        evidence(1, at=-3600),  # too old, unrelated
        evidence(2, at=-3000, thread="omt_t"),  # old but same thread
        evidence(3, at=-2000, root="om_r"),  # old but same root
        evidence(4, at=-299),  # inside the five-minute lookback
        evidence(5, at=-301),  # just outside the lookback
        evidence(12, at=100),  # same window, other conversation, other chunk
        evidence(13, at=200, thread="omt_t"),  # same window, same thread, other chunk
        evidence(14, at=600, thread="omt_t"),  # at window end: never context
        *chunk,
    ]
    assert _context_ids(chunk, candidates) == [2, 3, 4, 13]


def test_the_root_message_of_a_reply_is_context_however_old() -> None:
    root = evidence(1, at=-5000)
    reply = evidence(2, at=10, root="om_1", parent="om_1")
    assert _context_ids([reply], [root, reply]) == [1]


def test_context_budget_keeps_the_messages_closest_to_the_chunk() -> None:
    chunk = [evidence(10, at=10)]
    candidates = [evidence(i, "x" * 70, at=-300 + i * 10) for i in range(1, 6)]  # 44 tokens each
    assert _context_ids(chunk, candidates, max_estimated_tokens=100) == [4, 5]
    assert _context_ids(chunk, candidates, max_estimated_tokens=0) == []
