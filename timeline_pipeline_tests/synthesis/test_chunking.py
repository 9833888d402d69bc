"""Chunk planning: every window message lands in exactly one chunk, in order, within both the
count and the token bound; an oversized message is truncated visibly, never dropped."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline_pipeline.synthesis.chunking import (
    MIN_CHUNK_TOKENS,
    ChunkingError,
    ChunkLimits,
    plan_chunks,
    split_evidence,
)
from timeline_pipeline.synthesis.contract import EvidenceItem
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
