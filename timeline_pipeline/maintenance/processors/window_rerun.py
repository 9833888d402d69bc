"""`window_rerun`: the explicit, bounded full regeneration of a workspace's windows under a new
processor version namespace (docs/dagster.md).

After a prompt or schema upgrade the windows are synthesized again as
`chat/<chat_id>/processor/<version>/window/<start>`: new state rows beside the old ones, which
the window sensor then runs oldest first within the backlog limits. Scan: walk each bound chat's
non-empty windows in the order the sensor will run them, oldest first across chats
(`rerun_walk`), one index seek per window (never a scan of the messages); dry-run counts
windows and evidence, apply creates the missing versioned state rows, both in batches of
`batch_size` windows with the position as checkpoint. Only windows discovery itself
would take get a row (`windows.rerun.held_back`: closed, and with reconciliation on collected
past their end), since the sensor requests every such row as soon as there is room; the others
are counted as held, and a later rerun job adds them. Whether a window waits for collection at
all is discovery's own predicate (`windows.collection.waits_for_collection`): a finished incident
is no longer collected, so its windows are taken on what is stored. Verification: a fresh walk
that rejects a window that should have a row and has none, naming its source key, and reports
the windows it held and why (`verify_held_open`, `verify_held_collecting`, and the first few
held source keys with their reason under `held`).

Version 2's dry-run is also the rerun's preview (docs/maintenance.md, "Preview a rerun"):
each window the apply would create is synthesized into the scratch table of `rerun_preview`,
and the completed job's result carries the report under `preview`. Version 1 (jobs stored
before) only counts.

Parameters: `{"workspace_id": W, "processor_version": V, "chat_id"?: C, "since"?: ISO,
"until"?: ISO}`; `since` defaults to the workspace's creation, `until` to the first batch's time.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import Connection

from timeline_pipeline.domain.errors import InvalidInput
from timeline_pipeline.domain.keys import (
    SOURCE_SYSTEM,
    SOURCE_TYPE_WINDOW,
    InvalidKey,
    check_lark_id,
    check_processor_version,
)
from timeline_pipeline.domain.maintenance import MaintenancePhase
from timeline_pipeline.domain.window_keys import WindowRef, window_start_of
from timeline_pipeline.maintenance.errors import ProcessorRefused
from timeline_pipeline.maintenance.processor import (
    StepOutcome,
    StepRequest,
    ValidatedInput,
    counters,
    scoped_parameters,
)
from timeline_pipeline.maintenance.processors.rerun_preview import (
    PREVIEW_COUNTERS,
    RerunPreview,
    SynthesizerFactory,
)
from timeline_pipeline.maintenance.processors.rerun_walk import RerunWalk, stored_time
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import checkpoints, evidence, sync_states, window_states, workspaces
from timeline_pipeline.windows.planning import DiscoveryLimits
from timeline_pipeline.windows.rerun import Held, held_back

STATE_VERSION: Final = 1
ENTRIES: Final = "entries.workspace_timeline_entries"
SUMMARIES: Final = "summaries.workspace_timeline_summaries"
COUNTERS: Final = (
    "windows",
    "evidence",
    "would_create",
    "created",
    "already_present",
    "held_open",
    "held_collecting",
    "verified",
    "verify_held_open",
    "verify_held_collecting",
)
HELD_COUNTERS: Final = {Held.OPEN: "held_open", Held.COLLECTING: "held_collecting"}
MAX_LISTED_HELD: Final = 20
"""Held windows named in the verify pass's progress (the counters hold the full figures)."""
PARAMETERS: Final = {"workspace_id", "processor_version", "chat_id", "since", "until"}
EARLIEST: Final = datetime(1970, 1, 1, tzinfo=UTC)
LATEST: Final = datetime(9000, 1, 1, tzinfo=UTC)
"""The times a rerun accepts: window arithmetic (a window's end, the lookback) near
`datetime.min` or `datetime.max` would overflow, and no chat was written outside them."""


def _time(value: Any, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"parameters.{name} must be an ISO 8601 string")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"parameters.{name} is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        raise InvalidInput(f"parameters.{name} needs a timezone, e.g. Z")
    try:
        utc = parsed.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+14:00: before the first UTC instant
        utc = None
    if utc is None or not EARLIEST <= utc < LATEST:
        raise InvalidInput(
            f"parameters.{name} must lie between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d} UTC"
        )
    return utc


def _stored_time(state: Mapping[str, Any], key: str) -> datetime | None:
    return stored_time(state.get(key), f"checkpoint.{key}")


def _held_listed(progress: Mapping[str, Any]) -> list[dict[str, str]]:
    """The held windows the verify pass has named so far (progress is JSON between batches)."""
    listed = progress.get("held")
    if not isinstance(listed, list):
        return []
    return [
        {"source_key": str(item["source_key"]), "reason": str(item["reason"])}
        for item in listed[:MAX_LISTED_HELD]
        if isinstance(item, dict) and "source_key" in item and "reason" in item
    ]


class WindowRerun:
    type = "window_rerun"
    version = "1"
    rewrites: tuple[str, ...] = (ENTRIES, SUMMARIES)
    """The windows an apply creates are synthesized again, which rewrites the workspace's
    machine drafts and then its machine summary: a hold on either keeps them as they are
    (docs/lifecycle.md, "What a hold stops"), so the job service asks the gate for both before
    and after every apply batch."""

    def __init__(
        self,
        settings: LarkTimelineSettings,
        *,
        preview: bool = True,
        synthesizer: SynthesizerFactory | None = None,
    ) -> None:
        """`preview`: a dry-run previews each window (version 2); `synthesizer` builds the one
        the rerun's runs use (the rule synthesizer when not given)."""
        self._settings = settings
        self._limits = DiscoveryLimits.from_settings(settings)
        self._preview = RerunPreview(settings, synthesizer) if preview else None
        self.version = "2" if preview else "1"

    def validate(self, parameters: Mapping[str, Any]) -> ValidatedInput:
        params, workspace_id = scoped_parameters(parameters, PARAMETERS)
        version = params.get("processor_version")
        chat_id = params.get("chat_id")
        try:
            if not isinstance(version, str):
                raise InvalidKey("parameters.processor_version is required")
            check_processor_version(version)
            if chat_id is not None:
                if not isinstance(chat_id, str):
                    raise InvalidKey("parameters.chat_id must be a string")
                check_lark_id(chat_id)
        except InvalidKey as exc:
            raise InvalidInput(str(exc)) from None
        since = _time(params.get("since"), "since")
        until = _time(params.get("until"), "until")
        if since is not None and until is not None and until <= since:
            raise InvalidInput("parameters.until must be after parameters.since")
        normalized: dict[str, Any] = {"workspace_id": workspace_id, "processor_version": version}
        if chat_id is not None:
            normalized["chat_id"] = chat_id
        if since is not None:
            normalized["since"] = since.isoformat()
        if until is not None:
            normalized["until"] = until.isoformat()
        return ValidatedInput(normalized, workspace_id)

    def preflight(self, conn: Connection, parameters: Mapping[str, Any]) -> None:
        workspace_id = str(parameters["workspace_id"])
        if workspaces.get(conn, workspace_id) is None:
            raise ProcessorRefused("unknown_workspace", "the workspace does not exist")
        chat_id = parameters.get("chat_id")
        if chat_id is not None and chat_id not in workspaces.chats_of(conn, workspace_id):
            raise ProcessorRefused("unbound_chat", "the chat is not bound to the workspace")

    def _chats(self, conn: Connection, parameters: Mapping[str, Any]) -> list[str]:
        chat_id = parameters.get("chat_id")
        if chat_id is not None:
            return [str(chat_id)]
        return sorted(workspaces.chats_of(conn, str(parameters["workspace_id"])))

    def _start(self, conn: Connection, parameters: Mapping[str, Any]) -> datetime:
        since = _stored_time(parameters, "since")
        if since is None:
            workspace = workspaces.get(conn, str(parameters["workspace_id"]))
            if workspace is None:
                raise ProcessorRefused("unknown_workspace", "the workspace does not exist")
            since = workspace.created_at
        return window_start_of(since, self._limits.window)

    def _walk(self, request: StepRequest, chats: list[str], start: datetime) -> RerunWalk:
        """The walk in the apply's order (`rerun_walk`), from the checkpoint or from `start`."""
        if request.checkpoint:
            return RerunWalk.from_checkpoint(request.checkpoint, self._limits.window, chats, start)
        # A pass starts here; verification reuses the scan's end, so that a window closing
        # between the two passes is not taken for one the scan missed.
        until = (
            _stored_time(request.progress, "until")
            or _stored_time(request.parameters, "until")
            or request.now
        )
        return RerunWalk.start(until, self._limits.window, chats, start)

    def step(self, conn: Connection, request: StepRequest) -> StepOutcome:
        params = request.parameters
        workspace_id = str(params["workspace_id"])
        version = str(params["processor_version"])
        chats = self._chats(conn, params)
        start = self._start(conn, params)
        walk = self._walk(request, chats, start)
        progress = counters(request.progress, COUNTERS)
        held_listed = _held_listed(request.progress)
        budget = request.batch_size
        # Which windows are held back is decided as of the first batch, in both passes: a window
        # that closes meanwhile is left to a later rerun, not taken for one the scan missed.
        as_of = _stored_time(request.progress, "as_of") or request.now
        previewed = self._previewed(request)

        def seek(chat: str, at: datetime) -> datetime | None:
            return evidence.first_eligible_at_or_after(conn, workspace_id, chat, at)

        while budget > 0 and (found := walk.next(seek)) is not None:
            budget -= 1
            ref = WindowRef(workspace_id, found[0], found[1], version)
            would_create = progress["would_create"]
            violation = self._window(conn, ref, request, progress, held_listed, as_of)
            if (
                previewed is not None
                and self._preview is not None
                and progress["would_create"] > would_create
            ):
                # A window the apply would create, so the sensor would run: preview it, in the
                # order the sensor runs them (oldest first across chats).
                self._preview.window(
                    conn, ref, job_id=request.job_id, now=request.now, totals=previewed
                )
            if violation is not None:
                return StepOutcome(
                    dict(request.checkpoint), dict(request.progress), False, violation=violation
                )
        done = walk.done
        totals: dict[str, Any] = {
            "v": STATE_VERSION,
            "until": walk.until.isoformat(),
            "as_of": as_of.isoformat(),
            **progress,
        }
        if previewed is not None:
            totals["preview"] = previewed
        if held_listed:
            totals["held"] = held_listed
        result = None
        if done:
            result = {**totals, "processor_version": version}
            if previewed is not None and self._preview is not None:
                result["preview"] = self._preview.report(
                    conn, request.job_id, previewed, processor_version=version
                )
        return StepOutcome(walk.as_json(), totals, done, result)

    def _previewed(self, request: StepRequest) -> dict[str, Any] | None:
        """The preview's running totals, when this is a previewing dry-run's scan."""
        if self._preview is None or request.apply or request.phase is MaintenancePhase.VERIFY:
            return None
        stored = request.progress.get("preview") or {}
        if not isinstance(stored, Mapping):
            raise ProcessorRefused("malformed_state", "progress.preview is not an object")
        totals: dict[str, Any] = counters(stored, PREVIEW_COUNTERS)
        failures = stored.get("failures", [])
        if not isinstance(failures, list):
            raise ProcessorRefused("malformed_state", "progress.preview.failures is not a list")
        totals["failures"] = list(failures)
        return totals

    def _window(
        self,
        conn: Connection,
        ref: WindowRef,
        request: StepRequest,
        progress: dict[str, int],
        held_listed: list[dict[str, str]],
        as_of: datetime,
    ) -> dict[str, Any] | None:
        end = ref.window_end(self._limits.window)
        coverage = None
        if self._limits.reconciliation_enabled:
            coverage = checkpoints.checkpoint_coverage(conn, [ref.chat_key]).get(ref.chat_key)
        reason = held_back(
            ref,
            coverage,
            self._limits,
            as_of,
            workspace=workspaces.get(conn, ref.workspace_id),
            settings=self._settings,
        )
        held = None if reason is None else HELD_COUNTERS[reason]
        existing = sync_states.get_by_key(
            conn, ref.workspace_id, SOURCE_SYSTEM, SOURCE_TYPE_WINDOW, ref.source_key
        )
        if request.phase is MaintenancePhase.VERIFY:
            if held is None and existing is None:
                return {"code": "residual_missing_window", "source_key": ref.source_key}
            progress["verified"] += 1
            if reason is not None and existing is None:
                # Not a violation (discovery would hold it too), but the operator must learn
                # that this rerun is not complete yet and why.
                progress[f"verify_{held}"] += 1
                if len(held_listed) < MAX_LISTED_HELD:
                    held_listed.append({"source_key": ref.source_key, "reason": reason.value})
            return None
        progress["windows"] += 1
        progress["evidence"] += evidence.count_eligible_in(
            conn, ref.workspace_id, ref.chat_id, ref.window_start, end
        )
        if held is not None:
            progress[held] += 1
        elif existing is not None:
            progress["already_present"] += 1
        else:
            progress["would_create"] += 1
            if request.apply:
                created = window_states.create_window_if_evidence(
                    conn,
                    workspace_id=ref.workspace_id,
                    chat_id=ref.chat_id,
                    window_start=ref.window_start,
                    window_end=end,
                    processor_version=ref.processor_version,
                    now=request.now,
                )
                if created is not None:
                    progress["created"] += 1
        return None
