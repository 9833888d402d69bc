"""The demo's pin step: the commander pins a message the rules missed (docs/pins.md).

After synthesis, the demo picks a person's message that no entry cites, the commander (a curator)
reacts to it with the pin emoji, the signed `im.message.reaction.created_v1` reaches the real
receiver over HTTP, the message becomes a human, confirmed entry, and the card worker posts the
reply in the message's thread through the same durable delivery as review cards.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import Connection

from timeline_pipeline.demo.live import ChatStep, identity, live_receiver, send
from timeline_pipeline.lark.simulator.events import reaction_event
from timeline_pipeline.pins.service import pin_fingerprint
from timeline_pipeline.store import entries, evidence
from timeline_pipeline.store import interaction_requests as cards

MIN_WORDS = 6
"""A pin-worthy message says something: the demo skips one-word acknowledgements."""
MIN_HAN = 10
"""The same bar for Chinese, which has no spaces between words: about six words' worth of Han
characters (收到 / 好的我看一下 stay below it)."""
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def says_something(text: str) -> bool:
    """At least `MIN_WORDS` space-separated words, or `MIN_HAN` Han characters."""
    return len(text.split()) >= MIN_WORDS or len(_HAN.findall(text)) >= MIN_HAN


@dataclass
class PinDemoResult:
    message_id: str | None = None
    entry_id: int | None = None
    reply_posted: bool = False
    reply: str = ""


def missed_message(conn: Connection, workspace_id: str) -> str | None:
    """The longest person's text message no entry cites (the first by time on a tie)."""
    cited: set[int] = set()
    after = None
    while True:
        page = entries.list_for_workspace(conn, workspace_id, after=after, limit=500)
        cited.update(i for row in page for i in row.evidence_ids)
        if len(page) < 500:
            break
        after = (page[-1].occurred_at, page[-1].id)
    best: tuple[int, str] | None = None
    for row in evidence.page(conn, workspace_id, after=None, limit=2000):
        if row.id in cited or not row.ai_eligible or row.deleted:
            continue
        if row.metadata.get("sender_type") != "user" or not says_something(row.content):
            continue
        message_id = row.source_key.rsplit("/", 1)[-1]
        if best is None or len(row.content) > best[0]:
            best = (len(row.content), message_id)
    return best[1] if best else None


def pin_from_chat(step: ChatStep, curator: str) -> PinDemoResult:
    engine, settings, store, workspace_id, progress = step
    result = PinDemoResult()
    with engine.connect() as conn:
        result.message_id = missed_message(conn, workspace_id)
    if result.message_id is None:
        progress("pin: every person's message is already on the timeline, nothing to pin")
        return result
    with live_receiver(engine, settings, store) as (review, events_url):
        progress(
            f"pin: the commander reacts with {settings.timeline.pin_emoji_type} to message "
            f"{result.message_id}, which no entry cites"
        )
        send(
            settings,
            events_url,
            reaction_event(
                identity(settings),
                message_id=result.message_id,
                emoji_type=settings.timeline.pin_emoji_type,
                operator_open_id=curator,
            ),
        )
        review.worker.drain(max_seconds=30)
        review.worker.close()
    with engine.connect() as conn:
        entry = entries.get_by_fingerprint(conn, workspace_id, pin_fingerprint(result.message_id))
        replies = [
            c
            for c in cards.for_workspace(conn, workspace_id)
            if c.reply_to_message_id == result.message_id and c.message_id
        ]
    if entry is not None:
        result.entry_id = entry.id
    if replies and replies[0].message_id:
        shown = store.card_log(replies[0].message_id)
        result.reply_posted = bool(shown)
        if shown:
            result.reply = str(shown[-1]["card"]["header"]["title"]["content"])
    progress(
        f"pin: entry {result.entry_id} is "
        f"{f'{entry.source} and {entry.status}' if entry else 'missing'}; "
        f"the thread reply says {result.reply!r}"
    )
    return result
