"""Chunk planning: every window message lands in exactly one chunk, in order, within both the
count and the token bound; an oversized message is truncated visibly, never dropped."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline_pipeline.synthesis.chunking import (
    MIN_CHUNK_TOKENS,
    MIN_CONTEXT_TOKENS,
    ChunkingError,
    ChunkLimits,
    plan_chunks,
    split_evidence,
)
from timeline_pipeline.synthesis.contract import EvidenceItem, SynthesisChunk
from timeline_pipeline.synthesis.token_estimate import (
    MESSAGE_OVERHEAD_TOKENS,
    estimate_evidence_tokens,
    estimate_text_tokens,
    estimate_total_tokens,
)
from timeline_pipeline_tests.synthesis.builders import WINDOW_END, WINDOW_START, evidence


def _window(count: int, text: str = "short status line") -> list[EvidenceItem]:
    return [evidence(i, text, at=i) for i in range(1, count + 1)]


def _ids(chunks: list[list[EvidenceItem]]) -> list[list[int]]:
    return [[item.id for item in chunk] for chunk in chunks]


# --- token estimates -----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "tokens"), [("", 0), ("abc", 1), ("abcd", 2), ("x" * 35, 10)])
def test_text_estimate_is_characters_over_three_and_a_half_rounded_up(
    text: str, tokens: int
) -> None:
    assert estimate_text_tokens(text) == tokens


def test_every_message_pays_metadata_overhead() -> None:
    item = evidence(1, "x" * 35)  # no display name: the prompt shows the actor id instead
    assert estimate_evidence_tokens(item) == (
        MESSAGE_OVERHEAD_TOKENS + 10 + estimate_text_tokens("ou_alice")
    )
    assert estimate_total_tokens([item, item]) == 2 * estimate_evidence_tokens(item)


# --- table-driven splits -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "max_count", "expected_sizes"),
    [
        (0, 40, []),
        (1, 40, [1]),
        (40, 40, [40]),
        (41, 40, [40, 1]),
        (100, 40, [40, 40, 20]),
        (5, 1, [1, 1, 1, 1, 1]),
    ],
)
def test_count_bound(count: int, max_count: int, expected_sizes: list[int]) -> None:
    pieces = split_evidence(_window(count), max_count=max_count, max_estimated_tokens=100_000)
    assert [len(p.evidence) for p in pieces] == expected_sizes


def test_token_bound_cuts_before_the_message_that_would_overflow() -> None:
    items = _window(10, "x" * 70)  # 30 + 20 + 4 for the actor id = 54 tokens each
    pieces = split_evidence(items, max_count=40, max_estimated_tokens=110)
    assert _ids([p.evidence for p in pieces]) == [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]]


def test_both_bounds_apply_at_once() -> None:
    small = [evidence(i, "ok", at=i) for i in range(1, 6)]  # 35 tokens each
    large = [evidence(i, "x" * 700, at=i) for i in range(6, 9)]  # 234 tokens each
    pieces = split_evidence(small + large, max_count=3, max_estimated_tokens=310)
    # the count cuts after 3; the tokens cut between two large messages
    assert _ids([p.evidence for p in pieces]) == [[1, 2, 3], [4, 5, 6], [7], [8]]


def test_oversized_message_gets_its_own_chunk_with_a_visible_truncation() -> None:
    items = [evidence(1, "before"), evidence(2, "y" * 5000), evidence(3, "after")]
    pieces = split_evidence(items, max_count=40, max_estimated_tokens=200)
    assert _ids([p.evidence for p in pieces]) == [[1], [2], [3]]
    truncated = pieces[1].evidence[0]
    assert pieces[1].truncated_ids == [2]
    assert estimate_evidence_tokens(truncated) <= 200
    assert truncated.text.startswith("y" * 100)
    assert "[truncated" in truncated.text
    assert truncated.content_hash == "hash-2"  # still the stored row's hash
    assert pieces[0].truncated_ids == pieces[2].truncated_ids == []


@pytest.mark.parametrize(("max_count", "max_tokens"), [(0, 1000), (40, MIN_CHUNK_TOKENS - 1)])
def test_limits_that_cannot_hold_a_message_are_refused(max_count: int, max_tokens: int) -> None:
    with pytest.raises(ChunkingError):
        ChunkLimits(max_count=max_count, max_estimated_tokens=max_tokens)
    with pytest.raises(ChunkingError):
        split_evidence(_window(3), max_count=max_count, max_estimated_tokens=max_tokens)


# --- plan_chunks preconditions -------------------------------------------------------------


@pytest.mark.parametrize(
    "items",
    [
        pytest.param([evidence(2, at=20), evidence(1, at=10)], id="out-of-order"),
        pytest.param([evidence(1, at=10), evidence(1, at=10)], id="duplicate"),
        pytest.param([evidence(1, at=-1)], id="before-window"),
        pytest.param([evidence(1, at=600)], id="at-window-end"),
    ],
)
def test_plan_refuses_evidence_it_cannot_chunk_faithfully(items: list[EvidenceItem]) -> None:
    with pytest.raises(ChunkingError):
        plan_chunks(WINDOW_START, WINDOW_END, items)


def test_equal_timestamps_are_ordered_by_id() -> None:
    items = [evidence(1, at=5), evidence(2, at=5), evidence(3, at=5)]
    [chunk] = plan_chunks(WINDOW_START, WINDOW_END, items)
    assert [item.id for item in chunk.evidence] == [1, 2, 3]


def test_plan_numbers_chunks_and_attaches_groups_and_context() -> None:
    before = evidence(100, "earlier context", at=-120)
    long_ago = evidence(101, "root of the thread", at=-3000, thread="omt_1")
    items = [evidence(i, at=i, thread="omt_1" if i % 2 else None) for i in range(1, 6)]
    chunks = plan_chunks(
        WINDOW_START,
        WINDOW_END,
        items,
        limits=ChunkLimits(max_count=2),
        context_candidates=[long_ago, before, *items],
    )
    assert [c.index for c in chunks] == [0, 1, 2]
    assert all(c.window_start == WINDOW_START and c.window_end == WINDOW_END for c in chunks)
    for chunk in chunks:
        grouped = [item.id for group in chunk.groups for item in group.evidence]
        assert sorted(grouped) == sorted(item.id for item in chunk.evidence)
        context_ids = {item.id for item in chunk.context}
        assert 100 in context_ids  # the lookback before the window
        assert context_ids.isdisjoint(item.id for item in chunk.evidence)
    # chunk 1 holds message 3 (thread omt_1): the thread's root and earlier replies are context
    assert {101, 1} <= {item.id for item in chunks[1].context}


def test_plan_is_deterministic() -> None:
    items = [evidence(i, "z" * (i * 37 % 400), at=i) for i in range(1, 90)]
    limits = ChunkLimits(max_count=7, max_estimated_tokens=400)
    first = plan_chunks(WINDOW_START, WINDOW_END, items, limits=limits, context_candidates=items)
    second = plan_chunks(WINDOW_START, WINDOW_END, items, limits=limits, context_candidates=items)
    assert first == second


# --- properties ----------------------------------------------------------------------------


@st.composite
def window_evidence(draw: st.DrawFn) -> list[EvidenceItem]:
    lengths = draw(st.lists(st.integers(min_value=0, max_value=3000), min_size=0, max_size=80))
    offsets = sorted(draw(st.integers(min_value=0, max_value=599)) for _ in lengths)
    return [
        evidence(index, "w" * length or "-", at=offset)
        for index, (length, offset) in enumerate(zip(lengths, offsets, strict=True), start=1)
    ]


@settings(max_examples=150, deadline=None)
@given(
    items=window_evidence(),
    max_count=st.integers(min_value=1, max_value=50),
    max_tokens=st.integers(min_value=MIN_CHUNK_TOKENS, max_value=2000),
)
def test_every_message_lands_in_exactly_one_chunk_in_order_within_bounds(
    items: list[EvidenceItem], max_count: int, max_tokens: int
) -> None:
    limits = ChunkLimits(max_count=max_count, max_estimated_tokens=max_tokens)
    chunks = plan_chunks(WINDOW_START, WINDOW_END, items, limits=limits)
    flattened = [item.id for chunk in chunks for item in chunk.evidence]
    assert flattened == [item.id for item in items]
    assert [chunk.index for chunk in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert 1 <= len(chunk.evidence) <= max_count
        assert estimate_total_tokens(chunk.evidence) <= max_tokens
        if chunk.truncated_ids:
            assert len(chunk.evidence) == 1
            assert chunk.truncated_ids == [chunk.evidence[0].id]
    originals = {item.id: item for item in items}
    for chunk in chunks:
        for item in chunk.evidence:
            if item.id not in chunk.truncated_ids:
                assert item == originals[item.id]


@settings(max_examples=100, deadline=None)
@given(items=window_evidence(), max_count=st.integers(min_value=1, max_value=50))
def test_chunks_are_as_large_as_the_bounds_allow(items: list[EvidenceItem], max_count: int) -> None:
    """Greedy cutting: no chunk could have taken the next chunk's first message."""
    max_tokens = 1000
    pieces = split_evidence(items, max_count=max_count, max_estimated_tokens=max_tokens)
    for current, following in itertools.pairwise(pieces):
        if current.truncated_ids or following.truncated_ids:
            continue
        fits_count = len(current.evidence) < max_count
        spent = estimate_total_tokens(current.evidence)
        fits_tokens = spent + estimate_evidence_tokens(following.evidence[0]) <= max_tokens
        assert not (fits_count and fits_tokens)


# --- context per chunk: every reply's root and parent (issue 35, item 5) ----------------------

SMALL_CONTEXT = ChunkLimits(max_count=40, max_estimated_tokens=4000, max_context_tokens=500)
"""A small context budget: room for the roots and parents of a few replies, not of 40."""


def _thread(n: int, *, text: str = "") -> tuple[EvidenceItem, EvidenceItem]:
    """Thread `n` rooted an hour before the window, its first reply half an hour later."""
    root = evidence(1000 + n, text or f"is shard {n} down?", at=-3600 + n, thread=f"omt_{n}")
    first = evidence(
        2000 + n,
        text or f"failing shard {n} over",
        at=-1800 + n,
        thread=f"omt_{n}",
        root=root.message_id,
        parent=root.message_id,
    )
    return root, first


def _reply(n: int, first: EvidenceItem, *, at: float) -> EvidenceItem:
    return evidence(
        n + 1,
        f"shard {n} recovered",
        at=at,
        thread=first.thread_id,
        root=first.root_id,
        parent=first.message_id,
    )


def _missing_anchors(chunks: Sequence[SynthesisChunk]) -> list[tuple[str, str | None]]:
    """(reply, root or parent) pairs whose anchor is in neither the chunk nor its context."""
    missing: list[tuple[str, str | None]] = []
    for chunk in chunks:
        present = {item.message_id for item in (*chunk.context, *chunk.evidence)}
        for item in chunk.evidence:
            missing.extend(
                (item.message_id, anchor)
                for anchor in (item.root_id, item.parent_id)
                if anchor is not None and anchor not in present
            )
    return missing


def test_every_reply_of_120_threads_rooted_before_the_window_has_its_root_and_parent() -> None:
    """120 threads, each rooted an hour before the window, each replied to inside it: with a
    context budget for a few replies' anchors only, chunks get fewer replies, and no reply is
    left without the root and the parent it answers."""
    threads = [_thread(n) for n in range(120)]
    replies = [_reply(n, first, at=n * 4) for n, (_, first) in enumerate(threads)]
    candidates = [item for pair in threads for item in pair] + replies
    chunks = plan_chunks(
        WINDOW_START, WINDOW_END, replies, limits=SMALL_CONTEXT, context_candidates=candidates
    )
    assert _missing_anchors(chunks) == []
    assert [item.id for chunk in chunks for item in chunk.evidence] == [r.id for r in replies]
    for chunk in chunks:
        assert estimate_total_tokens(chunk.context) <= SMALL_CONTEXT.max_context_tokens
        assert estimate_total_tokens(chunk.evidence) <= SMALL_CONTEXT.max_estimated_tokens
        assert chunk.context_truncated_ids == []
    assert len(chunks) > 120 // SMALL_CONTEXT.max_count  # split for context, not for evidence


def test_a_replys_root_and_parent_beyond_the_budget_alone_are_truncated_and_reported() -> None:
    """A reply whose root and parent alone outgrow the context budget keeps both, shortened
    visibly (never dropped), in a chunk of its own; the chunk names them."""
    root, first = _thread(1, text="stack trace line " * 200)
    before = _reply(0, _thread(0)[1], at=10)
    reply = _reply(1, first, at=20)
    after = evidence(50, "all good now", at=30)
    candidates = [root, first, *_thread(0), before, reply, after]
    chunks = plan_chunks(
        WINDOW_START,
        WINDOW_END,
        [before, reply, after],
        limits=SMALL_CONTEXT,
        context_candidates=candidates,
    )
    [alone] = [chunk for chunk in chunks if reply in chunk.evidence]
    assert alone.evidence == [reply]
    assert _missing_anchors(chunks) == []
    assert sorted(alone.context_truncated_ids) == sorted([root.id, first.id])
    assert all("[truncated" in item.text for item in alone.context)
    assert estimate_total_tokens(alone.context) <= SMALL_CONTEXT.max_context_tokens
    assert all(c.context_truncated_ids == [] for c in chunks if c is not alone)


@st.composite
def thread_shapes(draw: st.DrawFn) -> tuple[list[EvidenceItem], ChunkLimits]:
    """Threads rooted before or inside the window, replies to roots or to earlier replies,
    loose messages and lookback chatter; texts of any length; limits of any size."""
    items: list[EvidenceItem] = []  # before and inside the window, in chat order
    next_id = 1
    at = -draw(st.integers(min_value=1, max_value=7200))
    for _ in range(draw(st.integers(min_value=1, max_value=80))):
        at += draw(st.integers(min_value=0, max_value=120))
        if at >= 600:
            break
        text = "t" * draw(st.integers(min_value=1, max_value=1200))
        kind = draw(st.sampled_from(["root", "reply", "loose"]))
        if kind == "reply" and items:
            parent = draw(st.sampled_from(items))
            root_id = parent.root_id or parent.message_id
            thread = parent.thread_id or f"omt_{root_id}"
            item = evidence(
                next_id, text, at=at, thread=thread, root=root_id, parent=parent.message_id
            )
        elif kind == "root":
            item = evidence(next_id, text, at=at, thread=f"omt_{next_id}")
        else:
            item = evidence(next_id, text, at=at)
        items.append(item)
        next_id += 1
    limits = ChunkLimits(
        max_count=draw(st.integers(min_value=1, max_value=40)),
        max_estimated_tokens=draw(st.integers(min_value=MIN_CHUNK_TOKENS, max_value=3000)),
        max_context_tokens=draw(st.integers(min_value=MIN_CONTEXT_TOKENS, max_value=3000)),
    )
    return items, limits


@settings(max_examples=200, deadline=None)
@given(case=thread_shapes())
def test_every_reply_has_its_root_and_parent_whatever_the_thread_shapes(
    case: tuple[list[EvidenceItem], ChunkLimits],
) -> None:
    items, limits = case
    window = [item for item in items if item.occurred_at >= WINDOW_START]
    chunks = plan_chunks(WINDOW_START, WINDOW_END, window, limits=limits, context_candidates=items)
    assert [item.id for chunk in chunks for item in chunk.evidence] == [i.id for i in window]
    assert _missing_anchors(chunks) == []
    originals = {item.id: item for item in items}
    for chunk in chunks:
        assert 1 <= len(chunk.evidence) <= limits.max_count
        assert estimate_total_tokens(chunk.evidence) <= limits.max_estimated_tokens
        assert estimate_total_tokens(chunk.context) <= limits.max_context_tokens
        for item in chunk.context:
            if item.id in chunk.context_truncated_ids:
                assert "[truncated" in item.text
            else:
                assert item == originals[item.id]
        if chunk.context_truncated_ids:
            assert len(chunk.evidence) == 1  # only a reply that cannot share its chunk
