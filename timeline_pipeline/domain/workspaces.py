"""A workspace and a chat binding as values, for the pure eligibility rules and the services.

Read and written by `store/workspaces.py`; kept here so pure modules need no store import
(README, "Package layout").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["ChatBinding", "Workspace"]


@dataclass(frozen=True, slots=True)
class Workspace:
    id: str
    type: str
    status: str
    title: str | None
    created_at: datetime
    updated_at: datetime
    locale: str | None = None
    """`en`, `zh-CN` or `auto`; None follows the `locale` setting (docs/i18n.md)."""
    time_zone: str | None = None
    """An IANA zone name; None follows the `timeZone` setting."""


@dataclass(frozen=True, slots=True)
class ChatBinding:
    workspace: Workspace
    chat_id: str
    bound_at: datetime
