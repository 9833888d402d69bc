"""The set-up and the verdict of the edit floods (`test_event_storms.py`,
`test_receiver_replicas.py`).

The chat: two hours of messages, every `edit_every`-th one edited twice, each version as the
callback Lark sends for it. The verdict: one complete evidence row per message holding its newest
edit (the newest version's callback as the receiver reads it, and what Lark's history now shows),
and write counters that add up: one insert per message, one outcome per acknowledged delivery,
each edit applied at most once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sqlalchemy import Engine

from timeline_pipeline.domain.evidence import EvidenceRow
from timeline_pipeline.lark.simulator import ChatStore, make_chat_messages, message_receive_event
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline_tests.faults.support_evidence import (
    Tally,
    all_evidence,
    expected_from_events,
    expected_records,
    message_versions,
    rows_by_message,
    tally,
)
from timeline_pipeline_tests.faults.support_serve import LarkApp, metric_value

EDIT_EVERY: Final = 4
"""Every 4th message is edited twice, so it has three versions in flight."""
WRITE_OUTCOMES: Final = ("inserted", "updated", "duplicate")


@dataclass(frozen=True)
class EditedChat:
    """A chat of `len(items)` messages and each message's callbacks, oldest version first."""

    workspace: str
    chat: str
    app: LarkApp
    items: list[dict[str, Any]]
    store: ChatStore
    versions: dict[str, list[dict[str, Any]]]

    @classmethod
    def make(
        cls, workspace: str, chat: str, messages: int, *, seed: int, edit_every: int = EDIT_EVERY
    ) -> EditedChat:
        """A fresh Lark app and the chat, its messages two hours old at most."""
        app = LarkApp.fresh()
        items = make_chat_messages(
            chat, datetime.now(UTC) - timedelta(hours=2), messages, seed=seed
        )
        store = ChatStore(items)
        versions = {
            message_id: [message_receive_event(item, app.identity) for item in kept]  # one id each
            for message_id, kept in message_versions(store, items, edit_every).items()
        }
        return cls(workspace, chat, app, items, store, versions)

    @property
    def edited(self) -> list[str]:
        """The messages with more than one version."""
        return [message_id for message_id, events in self.versions.items() if len(events) > 1]


@dataclass(frozen=True)
class NewestEdits:
    """What the database held: the tally against the newest versions, the rows, and the edited
    messages whose row holds what Lark's history shows now."""

    counted: Tally
    rows: list[EvidenceRow]
    kept: list[str]


def check_newest_edits(engine: Engine, chat: EditedChat) -> NewestEdits:
    """One complete row per message, holding its newest edit; asserts both."""
    settings = load_timeline_settings()
    # The reference is the newest version's callback as the receiver reads it: the history
    # item of an edited message also carries `updated: true`, which the event shape has no
    # field for and which the content hash includes, so the two shapes' hashes differ there.
    newest = [events[-1] for events in chat.versions.values()]
    expected = expected_from_events(
        newest, chat.workspace, app_id=chat.app.app_id, max_text_chars=settings.max_message_chars
    )
    rows = all_evidence(engine)
    counted = tally(rows, expected)
    assert counted.exact, counted.describe()
    # The newest edit is what Lark's history now shows for each edited message.
    history = expected_records(
        chat.store.messages(chat.chat),
        chat.workspace,
        app_id=chat.app.app_id,
        max_text_chars=settings.max_message_chars,
    )
    stored = rows_by_message(rows)
    kept = [
        m
        for m in chat.edited
        if (stored[m].content, stored[m].source_updated_at)
        == (history[m].content, history[m].source_updated_at)
    ]
    assert kept == chat.edited
    return NewestEdits(counted, rows, kept)


def check_writes(
    metrics: Sequence[str], found: NewestEdits, chat: EditedChat, *, deliveries: int
) -> dict[str, float]:
    """The evidence write outcomes summed over the receivers' `/metrics` texts: one insert per
    message, one outcome per delivery, an edit applied at most once per version (an older
    version after a newer one is a no-op); asserts each and returns the counts."""
    writes = {
        outcome: sum(
            metric_value(text, "timeline_lark_evidence_writes_total", outcome=outcome)
            for text in metrics
        )
        for outcome in WRITE_OUTCOMES
    }
    assert writes["inserted"] == len(chat.versions)
    assert sum(writes.values()) == deliveries
    assert writes["updated"] <= 2 * len(chat.edited)
    assert max(row.revision for row in found.rows) <= 3
    return writes
