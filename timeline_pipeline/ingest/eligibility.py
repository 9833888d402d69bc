"""Which workspaces a Lark message may become evidence for (docs/design.md §1). Pure."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.lark.normalize import NormalizedLarkMessage
from timeline_pipeline.settings import LarkTimelineSettings

GROUP_CHAT_TYPES = frozenset({"group", "topic_group"})


class Skip(enum.StrEnum):
    """Why a message is not stored for a workspace; also the metric label."""

    INGESTION_DISABLED = "ingestion_disabled"
    NOT_GROUP_CHAT = "not_group_chat"
    SELF_GENERATED = "self_generated"
    UNBOUND_CHAT = "unbound_chat"
    WORKSPACE_NOT_FIRING = "workspace_not_firing"
    WORKSPACE_AGED_OUT = "workspace_aged_out"
    WORKSPACE_TYPE_DISABLED = "workspace_type_disabled"
    BEFORE_WORKSPACE = "before_workspace_created"
    BEFORE_LOOKBACK = "before_lookback"
    """Older than the ingestion lookback (`ingestionLookback`); not the data-lifecycle retention."""


@dataclass(frozen=True, slots=True)
class Scope:
    """How strict to be: automatic paths check status and age; a manual refresh of an explicitly
    selected workspace does not, but still respects its creation time and the ingestion lookback."""

    manual: bool = False


AUTOMATIC = Scope()
MANUAL = Scope(manual=True)


def chat_skip(message: NormalizedLarkMessage) -> Skip | None:
    # Events carry chat_type; history items do not, and only bound group chats are listed anyway.
    if message.chat_type is not None and message.chat_type not in GROUP_CHAT_TYPES:
        return Skip.NOT_GROUP_CHAT
    return None


def sender_skip(message: NormalizedLarkMessage, app_id: str | None) -> Skip | None:
    """The product's own messages (its replies, soon its review cards) are self-generated: they
    are not evidence of the incident, so they are not stored. Other bots' messages are stored
    (and kept out of synthesis by `ai_eligible`)."""
    if app_id is not None and message.sender_id == app_id:
        return Skip.SELF_GENERATED
    return None


def workspace_skip(
    workspace: Workspace, settings: LarkTimelineSettings, now: datetime, scope: Scope = AUTOMATIC
) -> Skip | None:
    """Reasons that hold for every message of the workspace (checked once per workspace)."""
    if not settings.enabled:
        return Skip.INGESTION_DISABLED
    if workspace.type not in settings.workspace_types:
        return Skip.WORKSPACE_TYPE_DISABLED
    if scope.manual:
        return None
    if workspace.status != "firing":
        return Skip.WORKSPACE_NOT_FIRING
    if workspace.created_at < now - settings.ingestion_lookback:
        return Skip.WORKSPACE_AGED_OUT
    return None


def ingestion_start(
    workspace: Workspace, settings: LarkTimelineSettings, now: datetime
) -> datetime:
    """The earliest message time a workspace may hold: never before it existed, never older
    than the lookback (docs/design.md §1, §3)."""
    return max(workspace.created_at, now - settings.ingestion_lookback)


def message_skip(
    message: NormalizedLarkMessage,
    workspace: Workspace,
    settings: LarkTimelineSettings,
    now: datetime,
    scope: Scope = AUTOMATIC,
    *,
    app_id: str | None = None,
) -> Skip | None:
    """`app_id` is the product's Lark app: its own messages are skipped (`sender_skip`)."""
    reason = (
        chat_skip(message)
        or sender_skip(message, app_id)
        or workspace_skip(workspace, settings, now, scope)
    )
    if reason is not None:
        return reason
    if message.created_at < workspace.created_at:
        return Skip.BEFORE_WORKSPACE
    if message.created_at < now - settings.ingestion_lookback:
        return Skip.BEFORE_LOOKBACK
    return None
