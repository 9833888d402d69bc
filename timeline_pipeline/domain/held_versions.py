"""What a legal hold keeps of an evidence row that is rewritten: every version it replaces
(pure: no I/O).

A hold is a promise about the message, not about its last state: an edit or a recall of a held
message sets the version it replaces aside in the row's `held_content_json` before the new one
is visible (docs/lifecycle.md, "What a hold does to an edit"). The document keeps the version
set aside last at its top level (`content`, `content_hash`, `metadata`: the shape a recall
under a hold always had) with its `revision` and `source_updated_at`, and the versions set
aside before it under `earlier`, oldest first; no view reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

EARLIER: Final = "earlier"


@dataclass(frozen=True, slots=True)
class StoredVersion:
    """The stored row as the write that would replace it read it."""

    revision: int
    content: str
    content_hash: str
    metadata: Mapping[str, Any]
    source_updated_at: datetime
    deleted: bool


def replaces(
    stored: StoredVersion, *, content_hash: str, source_updated_at: datetime, deleted: bool
) -> bool:
    """Whether the evidence upsert would overwrite `stored` with the incoming version: the
    upsert's own condition (`store.evidence._upsert_statement`), so that exactly the versions
    it replaces are set aside. A redacted row is final; an older edit never rolls one back."""
    if stored.deleted or stored.content_hash == content_hash:
        return False
    return deleted or source_updated_at >= stored.source_updated_at


def version_of(stored: StoredVersion) -> dict[str, Any]:
    return {
        "revision": stored.revision,
        "content": stored.content,
        "content_hash": stored.content_hash,
        "metadata": dict(stored.metadata),
        "source_updated_at": stored.source_updated_at.isoformat(),
    }


def already_kept(held: Mapping[str, Any] | None, stored: StoredVersion) -> bool:
    """The stored version is the one set aside last (a recall asks twice: before and after its
    savepoint)."""
    return held is not None and held.get("revision") == stored.revision


def keep(held: Mapping[str, Any] | None, stored: StoredVersion) -> dict[str, Any]:
    """The held document with `stored` set aside on top of every version kept before it."""
    if held is None:
        return version_of(stored)
    previous = {key: value for key, value in held.items() if key != EARLIER}
    earlier = [*_earlier(held), previous]
    return {**version_of(stored), EARLIER: earlier}


def versions(held: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Every version a hold kept, oldest first."""
    if held is None:
        return []
    last = {key: value for key, value in held.items() if key != EARLIER}
    return [*_earlier(held), last]


def _earlier(held: Mapping[str, Any]) -> list[dict[str, Any]]:
    kept = held.get(EARLIER)
    return [dict(item) for item in kept if isinstance(item, Mapping)] if kept else []
