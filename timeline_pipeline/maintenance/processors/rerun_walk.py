"""The order a versioned rerun walks its windows in: the apply's (docs/maintenance.md, "Preview
a rerun"). Pure: the evidence seek is handed in.

The windows an apply creates are run by the sensor oldest first across the workspace's chats,
ties by chat id (`windows.batches.plan_runs` sorts a tick's requests by `WindowRef.sort_key`,
and a workspace's runs never overlap). Fingerprints are workspace-wide and scoped from a fact's
first proposal, so what a window's drafts merge into depends on that order: the preview, which
synthesizes each window as the walk reaches it, must walk it too, or it predicts another
timeline than the apply writes. The walk merges the chats' window sequences: each chat keeps
the time from which its next window is sought (`floors`; None once it has none before
`until`), one index seek per chat per batch and one per window taken.

Checkpoint version 2 keeps the floors; a version 1 checkpoint (chat by chat: the chats before
`chat` done, `chat` at `at`, the later ones not started) is read as the same floors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from timeline_pipeline.domain.window_keys import window_start_of
from timeline_pipeline.maintenance.errors import ProcessorRefused

__all__ = ["CHECKPOINT_VERSION", "RerunWalk", "Seek"]

CHECKPOINT_VERSION: Final = 2
CHAT_BY_CHAT: Final = 1
"""The checkpoint of jobs stored before the walk followed the apply's order."""

Seek = Callable[[str, datetime], datetime | None]
"""A chat's first eligible message time at or after a time
(`store.evidence.first_eligible_at_or_after`)."""


def stored_time(value: Any, what: str) -> datetime | None:
    """A time read back from a job's stored state; refused as malformed state otherwise."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        raise ProcessorRefused("malformed_state", f"{what} is not a time") from None
    if parsed.tzinfo is None:
        raise ProcessorRefused("malformed_state", f"{what} has no timezone")
    return parsed


@dataclass
class RerunWalk:
    """Where the walk is: per chat, the time from which its next window is sought."""

    until: datetime
    window: timedelta
    floors: dict[str, datetime | None]
    _heads: dict[str, datetime] = field(default_factory=dict)
    """Per chat, the start of its next window, once sought in this batch."""

    @classmethod
    def start(
        cls, until: datetime, window: timedelta, chats: Sequence[str], start: datetime
    ) -> RerunWalk:
        return cls(until, window, dict.fromkeys(chats, start))

    @classmethod
    def from_checkpoint(
        cls,
        checkpoint: Mapping[str, Any],
        window: timedelta,
        chats: Sequence[str],
        start: datetime,
    ) -> RerunWalk:
        """The walk a stored checkpoint describes, over the chats bound now (a chat bound since
        is walked from `start`, one unbound since is left out)."""
        until = stored_time(checkpoint.get("until"), "checkpoint.until")
        if until is None:
            raise ProcessorRefused("malformed_state", "checkpoint.until is missing")
        version = checkpoint.get("v")
        if version == CHAT_BY_CHAT:
            current = checkpoint.get("chat")
            if current is not None and not isinstance(current, str):
                raise ProcessorRefused("malformed_state", "checkpoint.chat is not a chat id")
            at = stored_time(checkpoint.get("at"), "checkpoint.at") or start
            floors: dict[str, datetime | None] = {
                chat: None
                if current is None or chat < current
                else (at if chat == current else start)
                for chat in chats
            }
            return cls(until, window, floors)
        if version != CHECKPOINT_VERSION:
            raise ProcessorRefused(
                "malformed_state", f"checkpoint is not version {CHECKPOINT_VERSION}"
            )
        stored = checkpoint.get("floors")
        if not isinstance(stored, Mapping):
            raise ProcessorRefused("malformed_state", "checkpoint.floors is not an object")
        floors = {
            chat: stored_time(stored[chat], "checkpoint.floors") if chat in stored else start
            for chat in chats
        }
        return cls(until, window, floors)

    def next(self, seek: Seek) -> tuple[str, datetime] | None:
        """The next window in the apply's order (its chat and start), or None at the end."""
        for chat, floor in self.floors.items():
            if floor is None or chat in self._heads:
                continue
            occurred = seek(chat, floor)
            if occurred is None or occurred >= self.until:
                self.floors[chat] = None
            else:
                self._heads[chat] = window_start_of(occurred, self.window)
        if not self._heads:
            return None
        chat = min(self._heads, key=lambda c: (self._heads[c], c))
        window_start = self._heads.pop(chat)
        self.floors[chat] = window_start + self.window
        return chat, window_start

    @property
    def done(self) -> bool:
        return all(floor is None for floor in self.floors.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "v": CHECKPOINT_VERSION,
            "until": self.until.isoformat(),
            "floors": {
                chat: None if floor is None else floor.isoformat()
                for chat, floor in sorted(self.floors.items())
            },
        }
