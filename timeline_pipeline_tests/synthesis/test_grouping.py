"""Conversation grouping (thread, then root, then replies, then proximity) and read-only
context selection (docs/design.md §7)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline_pipeline.synthesis.contract import EvidenceItem
from timeline_pipeline.synthesis.grouping import group_evidence, select_context
from timeline_pipeline.synthesis.token_estimate import estimate_evidence_tokens
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
    candidates = [evidence(i, "x" * 70, at=-300 + i * 10) for i in range(1, 6)]  # 54 tokens each
    assert _context_ids(chunk, candidates, max_estimated_tokens=110) == [4, 5]
    assert _context_ids(chunk, candidates, max_estimated_tokens=0) == []


def _budget_for(items: list[EvidenceItem]) -> int:
    return sum(estimate_evidence_tokens(item) for item in items)


@pytest.mark.parametrize("busy", [0, 1, 10, 50])
def test_a_replys_thread_root_stays_in_context_however_busy_the_chat(busy: int) -> None:
    """A reply at 10:00:30 to a root at 09:30: with 50 lookback messages the budget used to go
    to the newest of them and the root (the oldest) was cut, so the model read a reply without
    the message it answers."""
    root = evidence(1, "checkout is failing for EU customers", at=-1800, thread="omt_t")
    reply = evidence(
        100, "rolled back the config", at=30, thread="omt_t", root="om_1", parent="om_1"
    )
    chatter = [evidence(10 + i, "y" * 70, at=-290 + i * 5) for i in range(busy)]
    budget = _budget_for([root, *chatter[-3:]])
    kept = _context_ids([reply], [root, *chatter, reply], max_estimated_tokens=budget)
    assert 1 in kept
    # The rest of the budget goes to the newest lookback messages.
    assert kept[1:] == [item.id for item in chatter[-3:]]


def test_the_replied_to_parent_comes_before_other_replies_of_the_thread() -> None:
    root = evidence(1, "x" * 70, at=-3000, thread="omt_t")
    parent = evidence(2, "x" * 70, at=-2000, thread="omt_t", root="om_1", parent="om_1")
    siblings = [
        evidence(3 + i, "x" * 70, at=-1000 + i * 10, thread="omt_t", root="om_1", parent="om_1")
        for i in range(5)
    ]
    reply = evidence(50, at=30, thread="omt_t", root="om_1", parent="om_2")
    budget = _budget_for([root, parent, siblings[-1]])
    kept = _context_ids([reply], [root, parent, *siblings, reply], max_estimated_tokens=budget)
    assert kept == [1, 2, siblings[-1].id]


_context_links = st.sampled_from([None, "1", "2", "3", "4"])


@st.composite
def context_case(draw: st.DrawFn) -> tuple[list[EvidenceItem], list[EvidenceItem], int]:
    """A chunk of replies and a pool of older candidates (roots, replies, chatter)."""
    pool_size = draw(st.integers(min_value=0, max_value=30))
    pool: list[EvidenceItem] = []
    for index in range(1, pool_size + 1):
        thread = draw(st.sampled_from([None, "omt_a", "omt_b"]))
        root = draw(_context_links)
        pool.append(
            evidence(
                index,
                "z" * draw(st.integers(min_value=1, max_value=300)),
                at=-draw(st.integers(min_value=1, max_value=7200)),
                thread=thread,
                root=None if root is None else f"om_{root}",
                parent=None if root is None else f"om_{root}",
            )
        )
    chunk_size = draw(st.integers(min_value=1, max_value=5))
    chunk = [
        evidence(
            100 + index,
            at=draw(st.integers(min_value=0, max_value=599)),
            thread=draw(st.sampled_from([None, "omt_a", "omt_b"])),
            root=(r := draw(_context_links)) and f"om_{r}",
            parent=(p := draw(_context_links)) and f"om_{p}",
        )
        for index in range(chunk_size)
    ]
    budget = draw(st.integers(min_value=0, max_value=1500))
    return chunk, pool, budget


@settings(max_examples=300, deadline=None)
@given(case=context_case())
def test_context_under_a_budget_keeps_every_root_and_parent_that_fits_first(
    case: tuple[list[EvidenceItem], list[EvidenceItem], int],
) -> None:
    chunk, pool, budget = case
    unbounded = select_context(
        chunk, [*pool, *chunk], FIVE_MINUTES, window_start=WINDOW_START, window_end=WINDOW_END
    )
    kept = select_context(
        chunk,
        [*pool, *chunk],
        FIVE_MINUTES,
        window_start=WINDOW_START,
        window_end=WINDOW_END,
        max_estimated_tokens=budget,
    )
    # Within budget, a subset of the unbounded choice, in chat order.
    assert _budget_for(kept) <= budget
    assert {item.id for item in kept} <= {item.id for item in unbounded}
    assert kept == sorted(kept, key=lambda item: (item.occurred_at, item.id))
    # What the chunk's replies answer: every referenced root and parent, and the opening
    # message of every thread the chunk replies in.
    referenced = {ref for item in chunk for ref in (item.root_id, item.parent_id) if ref}
    threads = {item.thread_id for item in chunk if item.thread_id}
    anchors = [
        item
        for item in unbounded
        if item.message_id in referenced
        or (item.thread_id in threads and item.root_id is None and item.parent_id is None)
    ]
    if _budget_for(anchors) <= budget:
        assert {item.id for item in anchors} <= {item.id for item in kept}
    # Nothing is dropped for something further from the chunk in the same tier: the kept
    # lookback chatter is the newest of it.
    chatter = [item for item in unbounded if item not in anchors and not _same_thread(item, chunk)]
    kept_chatter = [item for item in kept if item in chatter]
    assert kept_chatter == chatter[len(chatter) - len(kept_chatter) :]
    # With room for everything, nothing is dropped.
    assert (
        select_context(
            chunk,
            [*pool, *chunk],
            FIVE_MINUTES,
            window_start=WINDOW_START,
            window_end=WINDOW_END,
            max_estimated_tokens=_budget_for(unbounded),
        )
        == unbounded
    )


def _same_thread(item: EvidenceItem, chunk: list[EvidenceItem]) -> bool:
    threads = {c.thread_id for c in chunk if c.thread_id}
    roots = {c.root_id or c.message_id for c in chunk}
    referenced = {ref for c in chunk for ref in (c.root_id, c.parent_id) if ref}
    return (
        (item.thread_id is not None and item.thread_id in threads)
        or (item.root_id is not None and item.root_id in roots)
        or item.message_id in referenced
    )
