"""Legal holds: create and release (docs/lifecycle.md, "Legal holds").

An active hold, workspace-wide or naming one descriptor, overrides every retention setting: the
dry-run and the engine read holds before anything else, and a hold on one link of a chain holds
the whole chain. Create and release are separate permissions (API scopes
`lifecycle:hold:create`, `lifecycle:hold:release`). Both need an idempotency key, scoped to
the hold's workspace: the same key with the same input answers the first result again, with
other input it is refused, and another workspace's keys are neither seen nor taken. A release
needs a reason of at least `MIN_RELEASE_REASON` characters. Both write an audit event (ids and
keys only), audited `critical` with who did it. A hold on a descriptor without a workspace
column would hold nothing and is refused (`hold_holds_nothing`). `review_at` is a date to
review the hold on; nothing releases a hold but `release`.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from sqlalchemy import Connection

from timeline_pipeline.domain.errors import IdempotencyConflict, InvalidInput
from timeline_pipeline.lifecycle.errors import (
    HoldCannotHold,
    HoldNotActive,
    HoldNotFound,
    UnknownDescriptorKey,
)
from timeline_pipeline.lifecycle.registry import Registry
from timeline_pipeline.store import legal_holds as store
from timeline_pipeline.store import workspaces
from timeline_pipeline.store.audit import CRITICAL, audit_curation
from timeline_pipeline.store.legal_holds import HoldRow

MIN_RELEASE_REASON: Final = 10
MIN_CREATE_REASON: Final = 10
MAX_REASON: Final = 1000
MAX_IDEMPOTENCY_KEY: Final = 256


@dataclass(frozen=True, slots=True)
class HoldResult:
    hold: HoldRow
    changed: bool
    """False when an earlier call with the same idempotency key already did it."""


def _digest(payload: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


def _check_key(key: str | None, option: str) -> str:
    if key is None or not key.strip():
        raise InvalidInput(f"{option}: an idempotency key is required")
    if len(key) > MAX_IDEMPOTENCY_KEY:
        raise InvalidInput(f"{option}: at most {MAX_IDEMPOTENCY_KEY} characters")
    return key


def _check_reason(reason: str | None, minimum: int, option: str) -> str:
    text = (reason or "").strip()
    if len(text) < minimum:
        raise InvalidInput(f"{option}: give a reason of at least {minimum} characters")
    if len(text) > MAX_REASON:
        raise InvalidInput(f"{option}: at most {MAX_REASON} characters")
    return text


REVIEW_FROM: Final = datetime(2000, 1, 1, tzinfo=UTC)
REVIEW_UNTIL: Final = datetime(2100, 1, 1, tzinfo=UTC)


def _check_review_at(review_at: datetime | None) -> datetime | None:
    if review_at is None:
        return None
    try:
        moment = review_at.astimezone(UTC)
    except (OverflowError, ValueError):
        moment = REVIEW_FROM - timedelta(days=1)
    if review_at.tzinfo is None or not REVIEW_FROM <= moment < REVIEW_UNTIL:
        raise InvalidInput("review_at: give a time with a zone, from 2000 to 2099 UTC")
    return moment


def create_hold(
    conn: Connection,
    registry: Registry,
    *,
    workspace_id: str,
    descriptor_key: str | None,
    reason: str,
    idempotency_key: str,
    actor: str,
    review_at: datetime | None = None,
    now: datetime | None = None,
) -> HoldResult:
    key = _check_key(idempotency_key, "idempotency key")
    text = _check_reason(reason, MIN_CREATE_REASON, "reason")
    review_at = _check_review_at(review_at)
    if descriptor_key is not None and descriptor_key not in registry.descriptors:
        raise UnknownDescriptorKey(f"descriptor: unknown key {descriptor_key!r}")
    if descriptor_key is not None and registry.get(descriptor_key).workspace_column is None:
        raise HoldCannotHold(
            f"descriptor: {descriptor_key} has no workspace column, so a workspace hold on it "
            "would hold nothing; hold the workspace (no descriptor) or a workspace-scoped table"
        )
    request_hash = _digest(
        {
            "workspace_id": workspace_id,
            "descriptor_key": descriptor_key,
            "reason": text,
            "review_at": review_at.isoformat() if review_at else None,
        }
    )
    earlier = store.by_create_key(conn, workspace_id, key)
    if earlier is not None:
        return _replayed(earlier.create_request_hash, request_hash, earlier)
    workspaces.require(conn, workspace_id)
    stamp = now or datetime.now(UTC)
    hold_id = f"hold_{secrets.token_hex(8)}"
    inserted = store.insert(
        conn,
        {
            "id": hold_id,
            "workspace_id": workspace_id,
            "descriptor_key": descriptor_key,
            "status": store.ACTIVE,
            "reason": text,
            "review_at": review_at,
            "created_by": actor[:128],
            "create_idempotency_key": key,
            "create_request_hash": request_hash,
            "created_at": stamp,
            "updated_at": stamp,
        },
    )
    if not inserted:  # a concurrent call with the same key won
        raced = store.by_create_key(conn, workspace_id, key)
        assert raced is not None
        return _replayed(raced.create_request_hash, request_hash, raced)
    audit_curation(
        conn,
        actor=actor,
        action="lifecycle.hold.create",
        subject_type="legal_hold",
        subject_id=hold_id,
        workspace_id=workspace_id,
        details={"descriptor_key": descriptor_key, "idempotency_key": key},
        now=stamp,
        severity=CRITICAL,
    )
    made = store.get(conn, hold_id)
    assert made is not None
    return HoldResult(made, changed=True)


def _replayed(stored_hash: str | None, request_hash: str, hold: HoldRow) -> HoldResult:
    if stored_hash != request_hash:
        raise IdempotencyConflict(
            "idempotency key: already used with other input; use a new key for a new request"
        )
    return HoldResult(hold, changed=False)


def release_hold(
    conn: Connection,
    *,
    hold_id: str,
    reason: str | None,
    idempotency_key: str | None,
    actor: str,
    now: datetime | None = None,
) -> HoldResult:
    key = _check_key(idempotency_key, "idempotency key")
    text = _check_reason(reason, MIN_RELEASE_REASON, "reason")
    request_hash = _digest({"hold_id": hold_id, "reason": text})
    hold = store.get(conn, hold_id)
    if hold is None:
        raise HoldNotFound(f"hold: no hold {hold_id!r}")
    earlier = store.by_release_key(conn, hold.workspace_id, key)
    if earlier is not None:
        return _replayed(earlier.release_request_hash, request_hash, earlier)
    if hold.status != store.ACTIVE:
        raise HoldNotActive(f"hold: {hold_id!r} is already released")
    stamp = now or datetime.now(UTC)
    released = store.release(
        conn,
        hold,
        {
            "released_at": stamp,
            "released_by": actor[:128],
            "release_reason": text,
            "release_idempotency_key": key,
            "release_request_hash": request_hash,
            "updated_at": stamp,
        },
    )
    if released is None:
        raise HoldNotActive(f"hold: {hold_id!r} changed meanwhile; read it again")
    audit_curation(
        conn,
        actor=actor,
        action="lifecycle.hold.release",
        subject_type="legal_hold",
        subject_id=hold_id,
        workspace_id=hold.workspace_id,
        details={"descriptor_key": hold.descriptor_key, "idempotency_key": key},
        now=stamp,
        severity=CRITICAL,
    )
    return HoldResult(released, changed=True)
