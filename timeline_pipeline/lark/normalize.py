"""Turn a Lark message, as an event or as a history item, into one stable shape.

The same message reaches us twice: pushed as an `im.message.receive_v1` event and pulled again by
reconciliation from `GET /open-apis/im/v1/messages`. Both must produce the same evidence (same
text, same metadata, same content hash), or every reconciliation pass would look like an edit.
So each shape is first read into a private envelope, and one code path builds the result.

Payloads come from outside: every field is checked for presence and JSON type, and any problem is
reported as `MalformedMessageError` with a short reason code that is safe to log and count (it
never carries message text). No other exception type may escape, which the property tests check.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, TypeGuard, TypeVar

from pydantic import BaseModel, ConfigDict, field_validator

from timeline_pipeline.domain.message_types import SUPPORTED_MESSAGE_TYPES
from timeline_pipeline.lark.message_policy import (
    VOLATILE_METADATA_KEYS,
    is_ai_eligible,
    redacted_metadata,
    sender_kind,
)

EARLIEST_MESSAGE_TIME: Final = datetime(2000, 1, 1, tzinfo=UTC)
"""Lark did not exist before this; a smaller value is almost always seconds mistaken for ms."""

LATEST_MESSAGE_TIME: Final = datetime(2100, 1, 1, tzinfo=UTC)

MAX_METADATA_TEXT_CHARS: Final = 256
"""File names and card titles are labels; a longer one is not worth keeping in metadata."""

MAX_IDENTIFIER_CHARS: Final = 256
"""Thread, root, parent and mention ids: kept in the metadata document, which has no length."""

MAX_MESSAGE_ID_CHARS: Final = 256
MAX_CHAT_ID_CHARS: Final = 200
"""The ids stored in columns have the columns' limits: a chat id is the evidence `scope_key`
(VARCHAR 256) and as long as a bindable chat id (domain.keys); with a message id at its limit the
`source_key` `chat/<chat>/message/<message>` is 470 of its 512 characters."""

MAX_OPEN_ID_CHARS: Final = 128
"""A sender's open_id is the evidence `actor_id` (VARCHAR 128)."""

ELLIPSIS: Final = "…"

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MILLIS: Final = re.compile(r"[0-9]{1,15}")
# Ids end up inside evidence source keys (`chat/<chat_id>/message/<message_id>`), so a slash or
# whitespace would make two different messages share, or break, a key.
_IDENTIFIER: Final = re.compile(rf"[\x21-\x2e\x30-\x7e]{{1,{MAX_IDENTIFIER_CHARS}}}")
_PLACEHOLDER: Final = re.compile(r"@_user_[0-9]+|@_all")
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_LOCALE_PREFERENCE: Final = ("en_us", "zh_cn")
_T = TypeVar("_T")


class MalformedMessageError(ValueError):
    """A payload that cannot become evidence; `reason` is a stable snake_case code for metrics."""

    def __init__(self, reason: str, *, message_id: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.message_id = message_id


class UnsupportedMessageTypeError(MalformedMessageError):
    """A well-formed message of a type we choose not to store: callers count it and move on."""

    def __init__(self, message_type: str, *, message_id: str | None = None) -> None:
        super().__init__("unsupported_type", message_id=message_id)
        self.message_type = message_type


class NormalizedLarkMessage(BaseModel):
    """The one shape that evidence, windows and synthesis see, whichever path delivered it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    message_id: str
    chat_id: str
    chat_type: str | None
    thread_id: str | None
    root_id: str | None
    parent_id: str | None
    sender_id: str | None
    sender_type: str
    message_type: str
    text: str
    created_at: datetime
    updated_at: datetime
    deleted: bool
    ai_eligible: bool
    metadata: dict[str, Any]

    @field_validator("created_at", "updated_at")
    @classmethod
    def _must_be_aware(cls, value: datetime) -> datetime:
        # Windows are UTC buckets; a naive time would silently land in the wrong one.
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("timestamps must be timezone-aware")
        return value.astimezone(UTC)


@dataclass(frozen=True)
class _Mention:
    key: str
    name: str
    open_id: str | None


@dataclass(frozen=True)
class _Envelope:
    """The fields both shapes share, after each shape's own spelling has been read."""

    message_id: str
    chat_id: str
    chat_type: str | None
    thread_id: str | None
    root_id: str | None
    parent_id: str | None
    message_type: str
    content: str | None
    create_time: object
    update_time: object
    deleted: bool
    updated: bool
    sender_type: str
    sender_id: str | None
    mentions: tuple[_Mention, ...]


# --- public API -----------------------------------------------------------------------------


def normalize_event_message(
    event: Mapping[str, Any], *, max_text_chars: int, app_id: str | None = None
) -> NormalizedLarkMessage:
    """Normalize the `event` object of an `im.message.receive_v1` (schema 2.0) callback."""
    _check_bound(max_text_chars)
    return _build(_read_event(event), max_text_chars=max_text_chars, app_id=app_id)


def normalize_list_item(
    item: Mapping[str, Any], *, max_text_chars: int, app_id: str | None = None
) -> NormalizedLarkMessage:
    """Normalize one element of `data.items` from `GET /open-apis/im/v1/messages`."""
    _check_bound(max_text_chars)
    return _build(_read_list_item(item), max_text_chars=max_text_chars, app_id=app_id)


def redact(message: NormalizedLarkMessage, *, recalled_at: datetime) -> NormalizedLarkMessage:
    """Apply the deletion policy: a recalled message keeps its identity and loses its content.

    Redacting twice keeps the first recall time, so a recall seen by both the event and the
    history path records one moment.
    """
    if recalled_at.tzinfo is None or recalled_at.utcoffset() is None:
        raise ValueError("recalled_at must be timezone-aware")
    recalled_at = recalled_at.astimezone(UTC)
    earlier = message.metadata.get("recalled_at") if message.deleted else None
    recalled_iso = earlier if isinstance(earlier, str) else recalled_at.isoformat()
    return NormalizedLarkMessage(
        **{
            **message.model_dump(),
            "text": "",
            "deleted": True,
            "ai_eligible": False,
            "updated_at": max(message.updated_at, recalled_at),
            "metadata": redacted_metadata(message.metadata, recalled_at_iso=recalled_iso),
        }
    )


def semantic_content(message: NormalizedLarkMessage) -> str:
    """The canonical text that evidence hashes, so that only a real change moves the hash.

    Times and sender are left out: they have their own evidence columns, and a refreshed
    `update_time` alone is not a new fact. So is bookkeeping such as the recall time, which
    differs between the event and the history path for the same recall.
    """
    return semantic_document(
        deleted=message.deleted,
        message_type=message.message_type,
        metadata=message.metadata,
        text=message.text,
    )


def semantic_document(
    *, deleted: bool, message_type: str, metadata: Mapping[str, Any], text: str
) -> str:
    """`semantic_content` from its parts: what a maintenance backfill recomputes from a stored
    row without rebuilding the whole message."""
    kept = {key: value for key, value in metadata.items() if key not in VOLATILE_METADATA_KEYS}
    document = {
        "deleted": deleted,
        "message_type": message_type,
        "metadata": kept,
        "text": text,
    }
    return json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# --- reading the two shapes -----------------------------------------------------------------


def _read_event(event: object) -> _Envelope:
    root = _mapping(event, "bad_event")
    message = _required_mapping(root, "message")
    message_id = _required_id(message, "message_id")
    try:
        sender = _required_mapping(root, "sender")
        sender_ids = _optional_mapping(sender, "sender_id")
        return _Envelope(
            message_id=message_id,
            chat_id=_required_id(message, "chat_id"),
            chat_type=_optional_str(message, "chat_type"),
            thread_id=_optional_id(message, "thread_id"),
            root_id=_optional_id(message, "root_id"),
            parent_id=_optional_id(message, "parent_id"),
            message_type=_required_str(message, "message_type"),
            content=_optional_raw_str(message, "content"),
            create_time=message.get("create_time"),
            update_time=message.get("update_time"),
            deleted=False,
            updated=False,
            sender_type=sender_kind(_optional_str(sender, "sender_type")),
            sender_id=_optional_id(sender_ids, "open_id", reason="bad_sender_id"),
            mentions=_mentions(message, _event_mention),
        )
    except MalformedMessageError as error:
        raise _with_id(error, message_id) from None


def _read_list_item(item: object) -> _Envelope:
    root = _mapping(item, "bad_item")
    message_id = _required_id(root, "message_id")
    try:
        # Without a sender we could not tell our own bot's output from a person's words.
        sender = _required_mapping(root, "sender")
        body = _optional_mapping(root, "body")
        sender_type = sender_kind(_optional_str(sender, "sender_type"))
        return _Envelope(
            message_id=message_id,
            chat_id=_required_id(root, "chat_id"),
            chat_type=None,
            thread_id=_optional_id(root, "thread_id"),
            root_id=_optional_id(root, "root_id"),
            parent_id=_optional_id(root, "parent_id"),
            message_type=_required_str(root, "msg_type", name="message_type"),
            content=_optional_raw_str(body, "content"),
            create_time=root.get("create_time"),
            update_time=root.get("update_time"),
            deleted=_optional_bool(root, "deleted"),
            updated=_optional_bool(root, "updated"),
            sender_type=sender_type,
            sender_id=_list_sender_id(sender, sender_type),
            mentions=_mentions(root, _list_mention),
        )
    except MalformedMessageError as error:
        raise _with_id(error, message_id) from None


def _list_sender_id(sender: Mapping[str, Any], sender_type: str) -> str | None:
    """Users must be identified by open_id, as events identify them, or the shapes disagree."""
    sender_id = _optional_id(sender, "id", reason="bad_sender_id")
    id_type = _optional_str(sender, "id_type")
    if sender_type == "user" and sender_id is not None and id_type not in (None, "open_id"):
        raise MalformedMessageError("unexpected_sender_id_type")
    return sender_id


def _mentions(
    holder: Mapping[str, Any], read_one: Callable[[Mapping[str, Any]], _Mention]
) -> tuple[_Mention, ...]:
    raw = _optional_list(holder, "mentions")
    return tuple(read_one(_mapping(entry, "bad_mentions")) for entry in raw)


def _event_mention(entry: Mapping[str, Any]) -> _Mention:
    ids = _optional_mapping(entry, "id", reason="bad_mentions")
    return _Mention(
        key=_required_str(entry, "key", reason="bad_mentions"),
        name=_optional_str(entry, "name", reason="bad_mentions") or "",
        open_id=_optional_id(ids, "open_id", reason="bad_mentions"),
    )


def _list_mention(entry: Mapping[str, Any]) -> _Mention:
    mention_id = _optional_id(entry, "id", reason="bad_mentions")
    id_type = _optional_str(entry, "id_type", reason="bad_mentions")
    return _Mention(
        key=_required_str(entry, "key", reason="bad_mentions"),
        name=_optional_str(entry, "name", reason="bad_mentions") or "",
        open_id=mention_id if id_type in (None, "open_id") else None,
    )


# --- building the result --------------------------------------------------------------------


def _build(
    envelope: _Envelope, *, max_text_chars: int, app_id: str | None
) -> NormalizedLarkMessage:
    try:
        return _build_checked(envelope, max_text_chars=max_text_chars, app_id=app_id)
    except MalformedMessageError as error:
        raise _with_id(error, envelope.message_id) from None


def _check_stored_id_lengths(envelope: _Envelope) -> None:
    """Refuse ids longer than the columns that store them, before any database sees them."""
    limits = (
        (envelope.message_id, MAX_MESSAGE_ID_CHARS, "bad_message_id"),
        (envelope.chat_id, MAX_CHAT_ID_CHARS, "bad_chat_id"),
        (envelope.sender_id, MAX_OPEN_ID_CHARS, "bad_sender_id"),
    )
    for value, limit, reason in limits:
        if value is not None and len(value) > limit:
            raise MalformedMessageError(reason)


def _build_checked(
    envelope: _Envelope, *, max_text_chars: int, app_id: str | None
) -> NormalizedLarkMessage:
    _check_stored_id_lengths(envelope)
    if envelope.message_type not in SUPPORTED_MESSAGE_TYPES:
        raise UnsupportedMessageTypeError(envelope.message_type)
    created_at = _millis(envelope.create_time, "create_time")
    updated_at = created_at
    if envelope.update_time not in (None, ""):
        # Clock skew must not make an update look older than the message it updates.
        updated_at = max(created_at, _millis(envelope.update_time, "update_time"))
    _check_sender(envelope)
    identity = _identity_metadata(envelope)
    if envelope.deleted:
        # History keeps only a tombstone ("This message was recalled"), not the content JSON.
        message = _message(envelope, created_at, updated_at, "", False, identity)
        return redact(message, recalled_at=updated_at)
    text, extra = _content(envelope, max_text_chars)
    eligible = is_ai_eligible(
        message_type=envelope.message_type,
        sender_type=envelope.sender_type,
        sender_id=envelope.sender_id,
        deleted=False,
        text=text,
        app_id=app_id,
    )
    metadata = {**identity, **extra, "updated": envelope.updated}
    return _message(envelope, created_at, updated_at, text, eligible, metadata)


def _message(
    envelope: _Envelope,
    created_at: datetime,
    updated_at: datetime,
    text: str,
    ai_eligible: bool,
    metadata: dict[str, Any],
) -> NormalizedLarkMessage:
    """Built (and validated) once, with its final content: every event pays for this."""
    return NormalizedLarkMessage(
        message_id=envelope.message_id,
        chat_id=envelope.chat_id,
        chat_type=envelope.chat_type,
        thread_id=envelope.thread_id,
        root_id=envelope.root_id,
        parent_id=envelope.parent_id,
        sender_id=envelope.sender_id,
        sender_type=envelope.sender_type,
        message_type=envelope.message_type,
        text=text,
        created_at=created_at,
        updated_at=updated_at,
        deleted=False,
        ai_eligible=ai_eligible,
        metadata=metadata,
    )


def _check_sender(envelope: _Envelope) -> None:
    """A person's words must be attributable; system notices have no author to attribute."""
    missing = envelope.sender_type == "user" and envelope.sender_id is None
    if missing and envelope.message_type != "system":
        raise MalformedMessageError("missing_sender_id")


def _identity_metadata(envelope: _Envelope) -> dict[str, Any]:
    return {
        "chat_id": envelope.chat_id,
        "thread_id": envelope.thread_id,
        "root_id": envelope.root_id,
        "parent_id": envelope.parent_id,
        "message_type": envelope.message_type,
        "deleted": False,
    }


def _content(envelope: _Envelope, max_text_chars: int) -> tuple[str, dict[str, Any]]:
    """Dispatch on type; returns the bounded text and the type's whitelisted metadata."""
    mention_ids = _mention_open_ids(envelope.mentions)
    extra: dict[str, Any] = {"mention_open_ids": mention_ids} if mention_ids else {}
    if envelope.message_type == "merge_forward":
        # A placeholder whose children are separate messages; its content says nothing.
        return "", extra
    content = _parse_content(envelope.content)
    if envelope.message_type == "text":
        raw = _text_content(content, envelope.mentions)
    elif envelope.message_type == "post":
        raw = _post_content(content, envelope.mentions)
    else:
        raw = ""
        extra.update(_ATTACHMENT_READERS[envelope.message_type](content))
    return _bound(_clean(raw), max_text_chars), extra


def _mention_open_ids(mentions: Sequence[_Mention]) -> list[str]:
    seen: dict[str, None] = {}
    for mention in mentions:
        # History lists "@all" as a mention with a pseudo id; events do not, so skip it.
        if mention.open_id is not None and mention.key != "@_all":
            seen.setdefault(mention.open_id, None)
    return list(seen)


def _parse_content(content: str | None) -> Mapping[str, Any]:
    if content is None:
        raise MalformedMessageError("missing_content")
    try:
        parsed = json.loads(content)
    except (ValueError, RecursionError):
        raise MalformedMessageError("bad_content_json") from None
    return _mapping(parsed, "bad_content_json")


# --- text and post --------------------------------------------------------------------------


def _text_content(content: Mapping[str, Any], mentions: Sequence[_Mention]) -> str:
    text = _required_raw_str(content, "text", prefix="content_")
    return _resolve_placeholders(text, mentions)


def _resolve_placeholders(text: str, mentions: Sequence[_Mention]) -> str:
    """`@_user_1` means nothing to a reader; the mention list says who it was."""
    names = {mention.key: mention.name for mention in mentions if mention.name}

    def replace(match: re.Match[str]) -> str:
        key = match.group(0)
        if key == "@_all":
            return "@all"
        return f"@{names[key]}" if key in names else key

    return _PLACEHOLDER.sub(replace, text)


def _post_content(content: Mapping[str, Any], mentions: Sequence[_Mention]) -> str:
    post = _unwrap_locale(content)
    title = _optional_raw_str(post, "title", prefix="content_") or ""
    paragraphs = _optional_list(post, "content", reason="bad_content_post")
    lines = [title]
    for paragraph in paragraphs:
        elements = _list(paragraph, "bad_content_post")
        lines.append("".join(_post_element(element, mentions) for element in elements))
    return "\n".join(lines)


def _unwrap_locale(content: Mapping[str, Any]) -> Mapping[str, Any]:
    """Posts arrive bare (`{"title","content"}`) or wrapped per locale; prefer English."""
    if "content" in content or "title" in content:
        return content
    locales = [*_LOCALE_PREFERENCE, *sorted(content)]
    for locale in locales:
        if locale in content:
            return _mapping(content[locale], "bad_content_post")
    raise MalformedMessageError("bad_content_post")


def _post_element(raw: object, mentions: Sequence[_Mention]) -> str:
    element = _mapping(raw, "bad_content_element")
    tag = _required_str(element, "tag", reason="bad_content_element")
    text = _optional_raw_str(element, "text", reason="bad_content_element") or ""
    if tag in ("text", "code_block", "md"):
        return text
    if tag == "a":
        return text or _optional_raw_str(element, "href", reason="bad_content_element") or ""
    if tag == "at":
        return _at_text(element, mentions)
    if tag == "emotion":
        emoji = _optional_str(element, "emoji_type", reason="bad_content_element")
        return f":{emoji}:" if emoji else ""
    # img, media, hr and tags Lark may add later carry no words we can use.
    return ""


def _at_text(element: Mapping[str, Any], mentions: Sequence[_Mention]) -> str:
    name = _optional_str(element, "user_name", reason="bad_content_element")
    user_id = _optional_str(element, "user_id", reason="bad_content_element") or ""
    if name:
        return f"@{name}"
    if user_id in ("all", "@_all"):
        return "@all"
    if not user_id:
        return ""
    resolved = _resolve_placeholders(user_id, mentions)
    return resolved if resolved.startswith("@") else f"@{resolved}"


# --- attachment-like types ------------------------------------------------------------------


def _image(content: Mapping[str, Any]) -> dict[str, Any]:
    return {"image_key": _required_id(content, "image_key", prefix="content_")}


def _file(content: Mapping[str, Any]) -> dict[str, Any]:
    return {"file_key": _required_id(content, "file_key", prefix="content_"), **_file_name(content)}


def _media(content: Mapping[str, Any]) -> dict[str, Any]:
    return {**_file(content), **_duration(content)}


def _audio(content: Mapping[str, Any]) -> dict[str, Any]:
    return {"file_key": _required_id(content, "file_key", prefix="content_"), **_duration(content)}


def _sticker(content: Mapping[str, Any]) -> dict[str, Any]:
    return {"file_key": _required_id(content, "file_key", prefix="content_")}


def _share_chat(content: Mapping[str, Any]) -> dict[str, Any]:
    return {"shared_chat_id": _required_id(content, "chat_id", prefix="content_")}


def _system(content: Mapping[str, Any]) -> dict[str, Any]:
    # Join/leave notices matter only to reconciliation, which needs the id, not the template.
    return {}


def _interactive(content: Mapping[str, Any]) -> dict[str, Any]:
    """Cards are mostly our own output; a title is enough to recognise one in the evidence."""
    title = _card_title(content)
    if title is None:
        json_card = content.get("json_card")
        if isinstance(json_card, str):
            try:
                inner = json.loads(json_card)
            except (ValueError, RecursionError):
                inner = None
            title = _card_title(inner) if isinstance(inner, Mapping) else None
    label = _bound(_clean(title), MAX_METADATA_TEXT_CHARS) if title else ""
    return {"card_title": label} if label else {}


def _card_title(card: Mapping[str, Any]) -> str | None:
    """Card layouts vary too much to validate; take a title only where one plainly is."""
    title = card.get("title")
    if isinstance(title, str) and title.strip():
        return title
    header = card.get("header")
    header_title = header.get("title") if isinstance(header, Mapping) else None
    nested = header_title.get("content") if isinstance(header_title, Mapping) else None
    return nested if isinstance(nested, str) and nested.strip() else None


def _file_name(content: Mapping[str, Any]) -> dict[str, Any]:
    name = _optional_raw_str(content, "file_name", prefix="content_")
    label = _bound(_clean(name), MAX_METADATA_TEXT_CHARS) if name else ""
    return {"file_name": label} if label else {}


def _duration(content: Mapping[str, Any]) -> dict[str, Any]:
    value = content.get("duration")
    if value is None:
        return {}
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedMessageError("bad_content_duration")
    return {"duration": value}


_ATTACHMENT_READERS: Final[dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]]] = {
    "image": _image,
    "file": _file,
    "media": _media,
    "audio": _audio,
    "sticker": _sticker,
    "share_chat": _share_chat,
    "system": _system,
    "interactive": _interactive,
}


# --- text hygiene ---------------------------------------------------------------------------


def _clean(raw: str) -> str:
    """Collapse whitespace per line and drop blank lines, so spacing edits do not look like edits.

    Lone surrogates and control characters are removed as well: the text is later UTF-8 encoded
    for hashing and stored in PostgreSQL, which rejects both.
    """
    safe = raw.encode("utf-8", "replace").decode("utf-8")
    safe = _CONTROL.sub(" ", safe.replace("\r\n", "\n"))
    lines = (" ".join(line.split()) for line in safe.splitlines())
    return "\n".join(line for line in lines if line)


def _bound(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + ELLIPSIS


def _check_bound(max_text_chars: int) -> None:
    if isinstance(max_text_chars, bool) or max_text_chars < 1:
        raise ValueError("max_text_chars must be a positive integer")


# --- times ----------------------------------------------------------------------------------


def epoch_millis(value: object) -> datetime | None:
    """A Lark time: epoch milliseconds as a string (sometimes an int), inside the plausible
    message range; None for anything else. Messages, reactions and recalls share it, so one
    time field cannot be accepted on one path and refused on another; each caller decides
    what absent means and how to refuse (docs/design.md §2, docs/pins.md)."""
    if isinstance(value, str) and _MILLIS.fullmatch(value):
        millis = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        millis = value
    else:
        return None
    if not 0 <= millis < 10**15:
        return None
    moment = _EPOCH + timedelta(milliseconds=millis)
    if not EARLIEST_MESSAGE_TIME <= moment < LATEST_MESSAGE_TIME:
        return None
    return moment


def read_time(
    value: object, key: str, refuse: Callable[[str], Exception], *, absent: datetime | None
) -> datetime:
    """A time field of a message or event: `absent` when not sent (None refuses it as
    `missing_<key>`), `bad_<key>` when `epoch_millis` cannot read it. Each path raises its own
    error with these codes (docs/design.md §2, docs/pins.md)."""
    if value is None or value == "":
        if absent is None:
            raise refuse(f"missing_{key}")
        return absent
    moment = epoch_millis(value)
    if moment is None:
        raise refuse(f"bad_{key}")
    return moment


def _millis(value: object, field: str) -> datetime:
    """Lark sends epoch milliseconds as strings (sometimes ints); anything else is refused."""
    return read_time(value, field, MalformedMessageError, absent=None)


# --- typed field access ---------------------------------------------------------------------
# Each helper either returns a value of the promised type or raises MalformedMessageError, so
# that the code above never meets a KeyError, TypeError or AttributeError.


def _with_id(error: MalformedMessageError, message_id: str) -> MalformedMessageError:
    if error.message_id is None:
        error.message_id = message_id
    return error


def _mapping(value: object, reason: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise MalformedMessageError(reason)
    return value


def _list(value: object, reason: str) -> list[Any]:
    if not isinstance(value, list):
        raise MalformedMessageError(reason)
    return value


def _required_mapping(holder: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = holder.get(key)
    if value is None:
        raise MalformedMessageError(f"missing_{key}")
    return _mapping(value, f"bad_{key}")


def _optional_mapping(
    holder: Mapping[str, Any], key: str, *, reason: str | None = None
) -> Mapping[str, Any]:
    value = holder.get(key)
    if value is None:
        return {}
    return _mapping(value, reason or f"bad_{key}")


def _optional_list(holder: Mapping[str, Any], key: str, *, reason: str | None = None) -> list[Any]:
    value = holder.get(key)
    if value is None:
        return []
    return _list(value, reason or f"bad_{key}")


def _checked(
    value: object,
    valid: Callable[[object], TypeGuard[_T]],
    bad: str,
    refuse: Callable[[str], Exception] = MalformedMessageError,
) -> _T:
    """A field that was sent: its value if `valid`, else the `bad` refusal."""
    if not valid(value):
        raise refuse(bad)
    return value


def _is_bool(value: object) -> TypeGuard[bool]:
    return isinstance(value, bool)


def _is_str(value: object) -> TypeGuard[str]:
    return isinstance(value, str)


def _optional_bool(holder: Mapping[str, Any], key: str) -> bool:
    value = holder.get(key)
    return False if value is None else _checked(value, _is_bool, f"bad_{key}")


def _optional_raw_str(
    holder: Mapping[str, Any], key: str, *, prefix: str = "", reason: str | None = None
) -> str | None:
    """A string kept as sent (content, text), where whitespace may matter."""
    value = holder.get(key)
    return None if value is None else _checked(value, _is_str, reason or f"bad_{prefix}{key}")


def _present(value: str | None, reason: str) -> str:
    """A required field's value, or the `missing_...` refusal when it is absent."""
    if value is None:
        raise MalformedMessageError(reason)
    return value


def _required_raw_str(holder: Mapping[str, Any], key: str, *, prefix: str = "") -> str:
    return _present(_optional_raw_str(holder, key, prefix=prefix), f"missing_{prefix}{key}")


def _optional_str(holder: Mapping[str, Any], key: str, *, reason: str | None = None) -> str | None:
    """A short label (type, name): blank counts as absent."""
    value = _optional_raw_str(holder, key, reason=reason)
    if value is None or not value.strip():
        return None
    return value.strip()


def _required_str(
    holder: Mapping[str, Any], key: str, *, reason: str | None = None, name: str | None = None
) -> str:
    """`name` lets both shapes report one code although they spell the key differently."""
    label = name or key
    value = _optional_str(holder, key, reason=reason or f"bad_{label}")
    return _present(value, reason or f"missing_{label}")


def is_lark_identifier(value: object) -> TypeGuard[str]:
    """An id that may become part of a stored key (`chat/<chat>/message/<id>`): printable
    ASCII without `/`, at most MAX_IDENTIFIER_CHARS. Messages, reactions and recalls check
    their ids with this one rule (docs/design.md §2)."""
    return isinstance(value, str) and _IDENTIFIER.fullmatch(value) is not None


def read_identifier(value: object, key: str, refuse: Callable[[str], Exception]) -> str:
    """A required id of an event: `missing_<key>` when absent or blank, `bad_<key>` when it
    breaks `is_lark_identifier`; each path raises its own error with these codes."""
    if value is None or value == "":
        raise refuse(f"missing_{key}")
    return _checked(value, is_lark_identifier, f"bad_{key}", refuse)


def _optional_id(
    holder: Mapping[str, Any], key: str, *, prefix: str = "", reason: str | None = None
) -> str | None:
    value = holder.get(key)
    if value is None or value == "":
        return None
    return _checked(value, is_lark_identifier, reason or f"bad_{prefix}{key}")


def _required_id(holder: Mapping[str, Any], key: str, *, prefix: str = "") -> str:
    return read_identifier(holder.get(key), f"{prefix}{key}", MalformedMessageError)
