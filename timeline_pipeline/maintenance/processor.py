"""The processor interface and its registry (docs/maintenance.md, "Adding a processor").

A processor is code, registered under a type and a version: it validates its scope and
parameters, checks preflight conditions, and performs one bounded step inside the transaction
the job service supplies, returning versioned checkpoint, progress and result JSON and whether
its pass is complete. It never commits, opens another connection or causes side effects outside
that transaction: the service's atomic commit of data and checkpoint covers only what the step
did through `conn`. Unknown types or versions and malformed state fail closed. This is not an
SQL endpoint: a request names a processor and parameters that processor validates, nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Protocol

from sqlalchemy import Connection

from timeline_pipeline.domain.errors import InvalidInput
from timeline_pipeline.domain.maintenance import MaintenancePhase
from timeline_pipeline.maintenance.errors import ProcessorRefused, UnknownProcessor

STATE_VERSION_KEY: Final = "v"
WORKSPACE_ID_RE: Final = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


@dataclass(frozen=True)
class ValidatedInput:
    """A processor's normalized parameters and the scope key they claim."""

    parameters: dict[str, Any]
    scope_key: str


@dataclass(frozen=True)
class StepRequest:
    parameters: Mapping[str, Any]
    apply: bool
    phase: MaintenancePhase
    checkpoint: Mapping[str, Any]
    """The phase's checkpoint; `{}` at the start of a pass."""
    progress: Mapping[str, Any]
    """Cumulative counters of the whole job so far."""
    batch_size: int
    now: datetime
    job_id: str = ""
    """The job's id: the key of what a processor keeps in a scratch namespace of its own (the
    rerun preview's rows)."""


@dataclass(frozen=True)
class StepOutcome:
    checkpoint: dict[str, Any]
    progress: dict[str, Any]
    done: bool
    result: dict[str, Any] | None = None
    violation: dict[str, Any] | None = None
    """Verification found a residual row: the job pauses with it and the checkpoint stays."""
    details: dict[str, Any] = field(default_factory=dict)


class Processor(Protocol):
    """One registered maintenance processor."""

    type: str
    version: str
    rewrites: tuple[str, ...]
    """Lifecycle descriptors whose rows an apply deletes or whose content it rewrites: the job
    service asks the legal-hold gate for them before and after every apply batch
    (docs/maintenance.md, "Legal holds"); empty for a processor that never destroys content."""

    def validate(self, parameters: Mapping[str, Any]) -> ValidatedInput:
        """Normalized parameters or InvalidInput; never touches the database."""
        ...

    def preflight(self, conn: Connection, parameters: Mapping[str, Any]) -> None:
        """Raise ProcessorRefused when the database is not in a state this processor serves."""
        ...

    def step(self, conn: Connection, request: StepRequest) -> StepOutcome:
        """One bounded batch of the request's phase, inside `conn`'s transaction."""
        ...


class Registry:
    def __init__(self) -> None:
        self._processors: dict[tuple[str, str], Processor] = {}
        self._latest: dict[str, Processor] = {}

    def register(self, processor: Processor) -> None:
        key = (processor.type, processor.version)
        if key in self._processors:
            raise ValueError(f"processor {processor.type} v{processor.version} registered twice")
        self._processors[key] = processor
        self._latest[processor.type] = processor

    def latest(self, job_type: str) -> Processor:
        """The processor new jobs of this type use (the last version registered)."""
        try:
            return self._latest[job_type]
        except KeyError:
            raise UnknownProcessor(f"unknown maintenance job type {job_type!r}") from None

    def get(self, job_type: str, version: str) -> Processor:
        """The exact processor a stored job was created with; an unknown one fails closed."""
        try:
            return self._processors[(job_type, version)]
        except KeyError:
            raise UnknownProcessor(
                f"no processor {job_type!r} version {version!r} is registered"
            ) from None

    def types(self) -> list[str]:
        return sorted(self._latest)


# --- helpers processors share ---------------------------------------------------------------


def require_object(parameters: Any) -> Mapping[str, Any]:
    if not isinstance(parameters, Mapping):
        raise InvalidInput("parameters must be a JSON object")
    return parameters


def check_keys(parameters: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(parameters) - allowed)
    if unknown:
        raise InvalidInput(f"unknown parameter(s): {', '.join(unknown)}")


def workspace_scope(parameters: Mapping[str, Any]) -> str:
    """Every processor's scope: `{"workspace_id": W}`."""
    workspace_id = parameters.get("workspace_id")
    if not isinstance(workspace_id, str) or not WORKSPACE_ID_RE.match(workspace_id):
        raise InvalidInput("parameters.workspace_id is required (letters, digits, . _ -)")
    return workspace_id


def scoped_parameters(parameters: Any, allowed: set[str]) -> tuple[Mapping[str, Any], str]:
    """Every processor's first check: a JSON object with no key it does not know, and the
    workspace it is scoped to."""
    params = require_object(parameters)
    check_keys(params, allowed)
    return params, workspace_scope(params)


def state_version(state: Mapping[str, Any], expected: int, what: str) -> None:
    """A stored checkpoint or progress written by another state version fails closed."""
    if state and state.get(STATE_VERSION_KEY) != expected:
        raise ProcessorRefused("malformed_state", f"{what} is not version {expected}")


def int_field(state: Mapping[str, Any], key: str, what: str) -> int:
    value = state.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProcessorRefused("malformed_state", f"{what}.{key} is not a count")
    return value


def counters(progress: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, int]:
    return {key: int_field(progress, key, "progress") for key in keys}
