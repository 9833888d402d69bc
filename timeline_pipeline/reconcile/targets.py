"""Which (workspace, chat) pairs a run reconciles, and whether it may run (docs/design.md §1).

Automatic scans take only firing, in-lookback workspaces of an ingested type, so they stop by
themselves when a workspace leaves `firing` or ages out. A manual refresh names its workspace
and is allowed past status and age (MANUAL scope); the range planner still bounds it by the
creation time and the ingestion lookback.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection

from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.ingest.eligibility import AUTOMATIC, MANUAL, workspace_skip
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import workspaces


class ReconcileRefused(Exception):
    """A run that must not start; the message is one line for an operator."""


@dataclass(frozen=True, slots=True)
class Target:
    workspace: Workspace
    chat_id: str


def automatic_refusal(settings: LarkTimelineSettings) -> str | None:
    if not settings.enabled:
        return "Lark timeline ingestion is disabled (enabled: false)"
    if not settings.reconciliation_enabled:
        return "reconciliation is disabled (reconciliationEnabled: false)"
    return None


def manual_refusal(settings: LarkTimelineSettings) -> str | None:
    """A manual refresh needs the feature on, not the automatic reconciliation flag."""
    if not settings.enabled:
        return "Lark timeline ingestion is disabled (enabled: false)"
    return None


def automatic_targets(
    conn: Connection, settings: LarkTimelineSettings, now: datetime
) -> tuple[list[Target], Counter[str]]:
    """Every bound chat of every eligible workspace, and the count of workspaces left out."""
    targets: list[Target] = []
    skipped: Counter[str] = Counter()
    seen_skipped: set[str] = set()
    for binding in workspaces.all_bindings(conn, statuses=["firing"]):
        reason = workspace_skip(binding.workspace, settings, now, AUTOMATIC)
        if reason is None:
            targets.append(Target(binding.workspace, binding.chat_id))
        elif binding.workspace.id not in seen_skipped:
            seen_skipped.add(binding.workspace.id)
            skipped[reason] += 1
    return targets, skipped


def manual_targets(
    conn: Connection,
    settings: LarkTimelineSettings,
    now: datetime,
    workspace_id: str,
    chat_id: str | None = None,
) -> list[Target]:
    """The explicitly selected workspace's chats (or one of them), even if not eligible."""
    workspace = workspaces.require(conn, workspace_id)
    reason = workspace_skip(workspace, settings, now, MANUAL)
    if reason is not None:
        raise ReconcileRefused(f"workspace {workspace_id!r} cannot be reconciled: {reason}")
    chats = workspaces.chats_of(conn, workspace_id)
    if chat_id is not None:
        if chat_id not in chats:
            raise ReconcileRefused(f"chat {chat_id!r} is not bound to workspace {workspace_id!r}")
        chats = [chat_id]
    if not chats:
        raise ReconcileRefused(f"workspace {workspace_id!r} has no bound Lark chat")
    return [Target(workspace, chat) for chat in chats]
