"""The configuration reference, rendered from the settings models. Pure.

The reference table in docs/configuration.md is this module's output, checked by a test, so a
key added, renamed or re-bounded in `settings.py` cannot leave the documentation behind.
Descriptions are the fields' docstrings; a field without one makes rendering fail rather than
print a gap.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import SecretStr
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from timeline_pipeline.settings import (
    ENV_PREFIX,
    YAML_SECTION,
    LarkTimelineSettings,
    RuntimeEnvironment,
)

__all__ = [
    "BLOCK_END",
    "BLOCK_START",
    "TIMELINE_GROUPS",
    "ReferenceIncomplete",
    "render_reference",
    "replace_block",
]

BLOCK_START = "<!-- config-reference:start -->"
BLOCK_END = "<!-- config-reference:end -->"

TIMELINE_GROUPS: tuple[tuple[str, str], ...] = (
    ("enabled", "Feature flags"),
    ("ingestion_lookback", "Time bounds"),
    ("evidence_batch_limit", "Synthesis bounds"),
    ("max_concurrent_synthesis", "Concurrency and backlog"),
    ("max_message_chars", "Event receiver"),
    ("lark_page_size", "Lark OpenAPI client"),
    ("review_cards_enabled", "Review cards"),
    ("pin_from_chat_enabled", "Pins from the chat"),
    ("locale", "Language and time"),
    ("report_enabled", "The incident report"),
)
"""Headings by the first field of each group: a field belongs to the group above it in
`settings.py`, so a new key lands under the heading of the block it was written in."""

_TYPE_NAMES: dict[Any, str] = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    timedelta: "duration",
    SecretStr: "secret",
}


class ReferenceIncomplete(Exception):
    """The models cannot be rendered completely (a field without a description, a lost group)."""


def _type_name(annotation: Any) -> str:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(members) == 1:
            return _type_name(members[0])
    if origin is Literal:
        return "one of " + ", ".join(f"`{value}`" for value in get_args(annotation))
    if origin is list:
        (item,) = get_args(annotation)
        return f"list of {_type_name(item)}s"
    if annotation in _TYPE_NAMES:
        return _TYPE_NAMES[annotation]
    raise ReferenceIncomplete(f"no reference name for type {annotation!r}")


def _duration(value: timedelta) -> str:
    """`30s`, `2m`, `72h`: the spelling of docs/design.md §13, hours as the largest unit."""
    millis = round(value.total_seconds() * 1000)
    seconds, rest = divmod(millis, 1000)
    parts = [f"{rest}ms"] if rest else []
    for unit, size in (("s", 60), ("m", 60), ("h", None)):
        seconds, count = divmod(seconds, size) if size else (0, seconds)
        if count:
            parts.insert(0, f"{count}{unit}")
    return "".join(parts) or "0s"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, timedelta):
        return _duration(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    return str(value)


def _default(field: FieldInfo) -> str:
    value = field.get_default(call_default_factory=True)
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if value is None or value == "":
        return "(none)"
    return f"`{_value(value)}`"


def _bounds(field: FieldInfo) -> str:
    low: str | None = None
    high: str | None = None
    parts: list[str] = []
    for item in field.metadata:
        if isinstance(item, annotated_types.Ge):
            low = _value(item.ge)
        elif isinstance(item, annotated_types.Gt):
            parts.append(f"> {_value(item.gt)}")
        elif isinstance(item, annotated_types.Le):
            high = _value(item.le)
        elif isinstance(item, annotated_types.Lt):
            parts.append(f"< {_value(item.lt)}")
        elif isinstance(item, annotated_types.MinLen):
            parts.append("not empty" if item.min_length == 1 else f"at least {item.min_length}")
    if low is not None and high is not None:
        parts.insert(0, f"{low} .. {high}")
    elif low is not None:
        parts.insert(0, f">= {low}")
    elif high is not None:
        parts.append(f"<= {high}")
    return ", ".join(parts)


def _description(model: type[BaseSettings], name: str, field: FieldInfo) -> str:
    if not field.description:
        raise ReferenceIncomplete(
            f"{model.__name__}.{name} has no description: write a docstring under the field"
        )
    return " ".join(field.description.split()).replace("|", "\\|")


def _env_name(field: FieldInfo, name: str) -> str:
    alias = field.validation_alias
    choices = getattr(alias, "choices", None)
    if choices:
        return str(choices[0])
    return name.upper()


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _timeline_groups(model: type[BaseSettings]) -> list[tuple[str, list[str]]]:
    names = list(model.model_fields)
    starts = {first: heading for first, heading in TIMELINE_GROUPS}
    missing = [first for first in starts if first not in names]
    if missing:
        raise ReferenceIncomplete(
            f"group heading(s) for unknown field(s) {missing}: update the groups"
        )
    if names and names[0] not in starts:
        raise ReferenceIncomplete(f"field {names[0]} comes before the first group heading")
    groups: list[tuple[str, list[str]]] = []
    for name in names:
        if name in starts:
            groups.append((starts[name], []))
        groups[-1][1].append(name)
    return groups


def _timeline_section(model: type[BaseSettings]) -> list[str]:
    fields = model.model_fields
    lines = [
        f"### `{YAML_SECTION}`",
        "",
        "Each key is read from the YAML file named by `TIMELINE_CONFIG` (camelCase, under "
        f"`{YAML_SECTION}`) and from its environment variable, which wins. Durations are written "
        "`30s`, `2m`, `72h`; a list is JSON in the environment "
        f"(`{ENV_PREFIX}WORKSPACE_TYPES='[\"incident\"]'`).",
    ]
    for heading, names in _timeline_groups(model):
        rows = [
            (
                f"`{to_camel(name)}`",
                f"`{ENV_PREFIX}{name.upper()}`",
                _type_name(fields[name].annotation),
                _default(fields[name]),
                _bounds(fields[name]),
                _description(model, name, fields[name]),
            )
            for name in names
        ]
        header = ("YAML key", "environment variable", "type", "default", "bounds", "description")
        lines += ["", f"#### {heading}", "", *_table(header, rows)]
    return lines


def _runtime_section(model: type[BaseSettings]) -> list[str]:
    fields = model.model_fields
    rows = [
        (
            f"`{_env_name(field, name)}`",
            _type_name(field.annotation),
            _default(field),
            _bounds(field),
            _description(model, name, field),
        )
        for name, field in fields.items()
    ]
    header = ("environment variable", "type", "default", "bounds", "description")
    return [
        "### Environment only",
        "",
        "Connections and secrets are read from the environment only, never from the YAML file.",
        "",
        *_table(header, rows),
    ]


def render_reference(
    timeline: type[BaseSettings] = LarkTimelineSettings,
    runtime: type[BaseSettings] = RuntimeEnvironment,
) -> str:
    """The reference as Markdown: the timeline section by group, then the environment."""
    return "\n".join([*_timeline_section(timeline), "", *_runtime_section(runtime)]) + "\n"


def replace_block(document: str, rendered: str) -> str:
    """`document` with the text between the reference markers replaced by `rendered`.

    Blank lines separate the markers from the tables, so that Markdown ends each table before
    the closing comment.
    """
    start = document.find(BLOCK_START)
    end = document.find(BLOCK_END)
    if start < 0 or end < start:
        raise ReferenceIncomplete(f"no {BLOCK_START} ... {BLOCK_END} block in the document")
    head = document[: start + len(BLOCK_START)]
    return f"{head}\n\n{rendered}\n{document[end:]}"
