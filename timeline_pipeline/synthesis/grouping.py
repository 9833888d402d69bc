"""Conversation grouping and read-only context for a chunk (docs/design.md §7).

A fixed 10-minute window cuts across conversations; grouping puts back the strongest
conversational boundary available, so that a synthesizer reads a reply next to what it answers
instead of next to whatever happened to be posted at the same second.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta

from timeline_pipeline.synthesis.contract import ConversationGroup, EvidenceItem
from timeline_pipeline.synthesis.token_estimate import estimate_evidence_tokens

__all__ = ["DEFAULT_PROXIMITY_GAP", "group_evidence", "select_context"]

DEFAULT_PROXIMITY_GAP = timedelta(minutes=3)
"""Loose messages further apart than this start a new group: a pause usually changes the topic.

The same default as the `synthesisGroupGap` setting."""


class _UnionFind:
    def __init__(self, size: int) -> None:
        self._parent = list(range(size))

    def find(self, index: int) -> int:
        while self._parent[index] != index:
            self._parent[index] = self._parent[self._parent[index]]
            index = self._parent[index]
        return index

    def union(self, a: int, b: int) -> None:
        root_a, root_b = self.find(a), self.find(b)
        if root_a != root_b:
            # The earlier message stays the representative, which keeps keys deterministic.
            self._parent[max(root_a, root_b)] = min(root_a, root_b)


def _anchors(item: EvidenceItem) -> list[tuple[str, str]]:
    """What a message belongs to: its thread, the messages it replies to, and itself."""
    anchors = [("msg", item.message_id)]
    if item.thread_id is not None:
        anchors.append(("thread", item.thread_id))
    anchors.extend(("msg", ref) for ref in (item.root_id, item.parent_id) if ref is not None)
    return anchors


def _link_structure(items: Sequence[EvidenceItem]) -> tuple[_UnionFind, set[int]]:
    """Join messages that share a thread, a root, a parent, or reply to one another.

    Returns the joined sets and the messages that have any conversational link at all (a reply
    whose parent is outside the chunk is still part of a conversation, just not a loose message).
    """
    links = _UnionFind(len(items))
    linked: set[int] = set()
    first_with: dict[tuple[str, str], int] = {}
    for index, item in enumerate(items):
        if item.thread_id is not None or item.root_id is not None or item.parent_id is not None:
            linked.add(index)
        for anchor in _anchors(item):
            first = first_with.setdefault(anchor, index)
            if first != index:
                links.union(first, index)
                linked.update((first, index))
    return links, linked


def _structured_key(members: Sequence[EvidenceItem]) -> str:
    for member in members:
        if member.thread_id is not None:
            return f"thread:{member.thread_id}"
    first = members[0]
    return f"root:{first.root_id or first.parent_id or first.message_id}"


def group_evidence(
    items: Sequence[EvidenceItem], *, proximity_gap: timedelta = DEFAULT_PROXIMITY_GAP
) -> list[ConversationGroup]:
    """Group a chunk by thread, then root, then top-level message and replies, then proximity.

    Every item lands in exactly one group, groups keep chat order inside, and groups are ordered
    by their first message. Loose messages (no thread, root or reply link) are grouped by time:
    consecutive loose messages no more than `proximity_gap` apart share a group.
    """
    links, linked = _link_structure(items)
    members: dict[int, list[int]] = {}
    previous_loose: EvidenceItem | None = None
    loose_anchor = -1
    for index, item in enumerate(items):
        if index in linked:
            anchor = links.find(index)
        else:
            gap_exceeded = (
                previous_loose is not None
                and item.occurred_at - previous_loose.occurred_at > proximity_gap
            )
            if previous_loose is None or gap_exceeded:
                loose_anchor = index
            previous_loose = item
            anchor = loose_anchor
        members.setdefault(anchor, []).append(index)
    groups: list[ConversationGroup] = []
    for anchor in sorted(members, key=lambda a: members[a][0]):
        group_items = [items[i] for i in members[anchor]]
        if anchor in linked:
            key = _structured_key(group_items)
        else:
            key = f"time:{group_items[0].message_id}"
        groups.append(ConversationGroup(key=key, evidence=group_items))
    return groups


def _conversation_ids(items: Iterable[EvidenceItem]) -> tuple[set[str], set[str], set[str]]:
    """Thread ids, root ids (a message's root or the message itself) and referenced ids."""
    threads: set[str] = set()
    roots: set[str] = set()
    referenced: set[str] = set()
    for item in items:
        if item.thread_id is not None:
            threads.add(item.thread_id)
        roots.add(item.root_id or item.message_id)
        referenced.update(ref for ref in (item.root_id, item.parent_id) if ref is not None)
    return threads, roots, referenced


def _conversation_anchors(
    threads: set[str], referenced: set[str]
) -> Callable[[EvidenceItem], bool]:
    """Whether a candidate is what the chunk's replies answer: a referenced root or parent, or
    the root of a thread the chunk replies in (the message that opened it has no root id)."""

    def is_anchor(candidate: EvidenceItem) -> bool:
        if candidate.message_id in referenced:
            return True
        return (
            candidate.thread_id is not None
            and candidate.thread_id in threads
            and candidate.root_id is None
            and candidate.parent_id is None
        )

    return is_anchor


def select_context(
    chunk_evidence: Sequence[EvidenceItem],
    candidates: Iterable[EvidenceItem],
    lookback: timedelta,
    *,
    window_start: datetime,
    window_end: datetime,
    max_estimated_tokens: int | None = None,
) -> list[EvidenceItem]:
    """Pick read-only context: the `lookback` before the window plus same-thread/root messages.

    Same-conversation messages qualify from any time before `window_end` (the question a reply
    answers may be older than the lookback). Nothing at or after `window_end` and nothing already
    in the chunk is context. When a token budget is given it is spent in this order, so that a
    busy chat cannot push out what a reply answers (docs/design.md §7):

    1. the thread roots and replied-to parents the chunk's replies name (usually the oldest
       messages, so trimming by recency alone would drop them first), nearest first, each kept
       if it still fits: when they fit together, all of them are kept, which is what chunk
       planning budgets for (`synthesis.chunking`);
    2. the opening messages of the threads the chunk replies in that no reply names, the same
       way;
    3. the other messages of the same threads and roots, nearest first, until one does not fit;
    4. the lookback before the window, nearest first, until one does not fit.

    The result is in chat order whatever the budget.
    """
    own_ids = {item.id for item in chunk_evidence}
    threads, roots, referenced = _conversation_ids(chunk_evidence)
    is_anchor = _conversation_anchors(threads, referenced)
    lookback_start = window_start - lookback
    answered: list[EvidenceItem] = []
    anchors: list[EvidenceItem] = []
    conversation: list[EvidenceItem] = []
    recent: list[EvidenceItem] = []
    seen: set[int] = set()
    for candidate in candidates:
        if candidate.id in own_ids or candidate.id in seen or candidate.occurred_at >= window_end:
            continue
        in_lookback = lookback_start <= candidate.occurred_at < window_start
        same_conversation = (
            (candidate.thread_id is not None and candidate.thread_id in threads)
            or (candidate.root_id is not None and candidate.root_id in roots)
            or candidate.message_id in referenced
        )
        if candidate.message_id in referenced:
            answered.append(candidate)
        elif is_anchor(candidate):
            anchors.append(candidate)
        elif same_conversation:
            conversation.append(candidate)
        elif in_lookback:
            recent.append(candidate)
        else:
            continue
        seen.add(candidate.id)

    def chat_order(item: EvidenceItem) -> tuple[datetime, int]:
        return (item.occurred_at, item.id)

    if max_estimated_tokens is None:
        return sorted([*answered, *anchors, *conversation, *recent], key=chat_order)
    kept: list[EvidenceItem] = []
    spent = 0
    tiers = ((answered, False), (anchors, False), (conversation, True), (recent, True))
    for tier, stop_at_first_miss in tiers:
        for item in sorted(tier, key=chat_order, reverse=True):
            cost = estimate_evidence_tokens(item)
            if spent + cost > max_estimated_tokens:
                if stop_at_first_miss:
                    break
                continue
            kept.append(item)
            spent += cost
    return sorted(kept, key=chat_order)
