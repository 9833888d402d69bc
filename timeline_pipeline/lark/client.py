"""The product's only door to the Lark OpenAPI (or to `timeline-pipeline lark simulate`).

Every call goes through lark-oapi so that token handling and wire details match what Lark's own
SDK does; this module adds what the SDK leaves to callers: every history page is followed,
retries follow the product's one `RetryPolicy` (full-jitter exponential backoff, a capped
Retry-After), Lark's per-app rate limit is respected before Lark has to enforce it, and failures
arrive as typed errors so reconciliation can tell "try later" from "this chat is not readable".

Logs carry ids and counts only: never message bodies, tokens or request payloads.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, cast

import lark_oapi as lark
import requests
import structlog
from lark_oapi.api.contact.v3 import BatchUserRequest
from lark_oapi.api.im.v1 import (
    CreateMessageRequest,
    CreateMessageRequestBody,
    GetMessageRequest,
    ListMessageRequest,
    PatchMessageRequest,
    PatchMessageRequestBody,
    ReplyMessageRequest,
    ReplyMessageRequestBody,
)
from lark_oapi.core.exception import ObtainAccessTokenException
from lark_oapi.core.token import TokenManager
from tenacity import RetryCallState

from timeline_pipeline.lark.rate_limit import RateLimiter, shared_rate_limiter
from timeline_pipeline.retry import RetryPolicy

log = structlog.get_logger(__name__)

MAX_PAGE_SIZE: Final = 50
USERS_PER_BATCH: Final = 50

TOKEN_INVALID_CODES: Final = frozenset({99991661, 99991663, 99991664, 99991668, 99991671, 99991677})
"""The tenant token was missing, malformed, expired or revoked: refresh it once and try again."""

PERMISSION_CODES: Final = frozenset(
    {230002, 230006, 230027, 99991672, 10003, 10014}
    # Docs, Drive and Tasks (lark/documents.py): a document the app may not edit (1770032), a
    # folder token Lark does not know (1770039) or that the app may not create in (1770040), a
    # Drive node the app may not touch or the wrong identity for it (1061004, 1061005), a task
    # the app may not edit (1470403).
    | {1770032, 1770039, 1770040, 1061004, 1061005, 1470403}
)
"""Bot not in the chat, a missing scope, wrong app credentials, or a document, folder or task
the app may not use: retrying cannot help."""

RATE_LIMIT_CODES: Final = frozenset({99991400, 230020})

_TRANSPORT_CODE: Final = -1
_MSG_LIMIT: Final = 200

DEFAULT_RETRY: Final = RetryPolicy(
    attempts=5, backoff_base=0.5, backoff_cap=8.0, max_retry_after=30.0
)
"""For a client built without settings (tests, the simulator's own checks); the product builds
its policy from the settings with `RetryPolicy.for_lark_calls`."""


@dataclass(frozen=True)
class LarkClientConfig:
    """Connection and resilience settings; every bound is explicit so operators can tune it."""

    app_id: str
    app_secret: str
    base_url: str
    page_size: int = MAX_PAGE_SIZE
    max_requests_per_second: float = 50.0
    max_requests_per_minute: int = 1000
    retry: RetryPolicy = DEFAULT_RETRY
    timeout_seconds: float = 10.0

    def __post_init__(self) -> None:
        if not 1 <= self.page_size <= MAX_PAGE_SIZE:
            raise ValueError(f"page_size must be within 1..{MAX_PAGE_SIZE}")
        if self.max_requests_per_second <= 0 or self.max_requests_per_minute <= 0:
            raise ValueError("rate limits must be positive")


@dataclass(frozen=True)
class MessagePage:
    """One history page; `items` keep Lark's list-item JSON exactly as it came off the wire.

    `has_more` tells whether the iterator will yield another page (a thread listing cut short at
    `not_before` reports False even if Lark had older pages).
    """

    items: list[dict[str, Any]]
    has_more: bool
    page_token: str | None
    page_number: int


class LarkApiError(Exception):
    """A Lark call failed; the text names the operation, code and status, never a payload."""

    def __init__(
        self,
        code: int,
        msg: str,
        *,
        http_status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        operation: str = "lark",
    ) -> None:
        self.code = code
        self.msg = msg[:_MSG_LIMIT]
        self.http_status = http_status
        self.retryable = retryable
        self.retry_after = retry_after
        self.operation = operation
        super().__init__(
            f"{operation} failed: code={code} http_status={http_status} msg={self.msg}"
        )


class LarkPermissionError(LarkApiError):
    """The app cannot read or write here (bot not in chat, missing scope, bad credentials)."""


class LarkTokenError(LarkPermissionError):
    """Lark rejected the tenant token even after one refresh."""


@dataclass(frozen=True)
class _Reply:
    status: int | None
    headers: Mapping[str, str]
    body: dict[str, Any]


def _header(headers: Mapping[str, str], name: str) -> str | None:
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return None


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Lark's gateway says when to come back in `x-ogw-ratelimit-reset`; HTTP says Retry-After."""
    for name in ("Retry-After", "x-ogw-ratelimit-reset"):
        raw = _header(headers, name)
        if raw is None:
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        if value >= 0:
            return value
    return None


def _classify(op: str, reply: _Reply) -> LarkApiError | None:
    code_raw = reply.body.get("code", _TRANSPORT_CODE)
    code = code_raw if isinstance(code_raw, int) else _TRANSPORT_CODE
    status = reply.status
    if code == 0 and (status is None or status < 400):
        return None
    msg = str(reply.body.get("msg", ""))
    if code in TOKEN_INVALID_CODES:
        return LarkTokenError(code, msg, http_status=status, operation=op)
    if code in PERMISSION_CODES:
        return LarkPermissionError(code, msg, http_status=status, operation=op)
    if status == 429 or code in RATE_LIMIT_CODES:
        return LarkApiError(
            code,
            msg,
            http_status=status,
            retryable=True,
            retry_after=_retry_after(reply.headers),
            operation=op,
        )
    retryable = status is None or status >= 500
    return LarkApiError(code, msg, http_status=status, retryable=retryable, operation=op)


def _was_refused(exc: BaseException) -> bool:
    """Lark refused the call before acting on it: a rate limit, retried as any other."""
    return isinstance(exc, LarkApiError) and exc.code in RATE_LIMIT_CODES and exc.retryable


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, LarkApiError) and exc.retryable


def _error_retry_after(exc: BaseException) -> float | None:
    return exc.retry_after if isinstance(exc, LarkApiError) else None


def _utc_seconds(value: datetime, *, round_up: bool) -> str:
    if value.tzinfo is None:
        raise ValueError("datetimes passed to the Lark client must be timezone-aware")
    seconds = value.timestamp()
    return str(math.ceil(seconds) if round_up else math.floor(seconds))


def _create_time_ms(item: Mapping[str, Any]) -> int | None:
    try:
        return int(item["create_time"])
    except (KeyError, TypeError, ValueError):
        return None


def _list_messages(
    kind: str, container_id: str, *, sort: str, size: int, seconds: tuple[str, str] | None = None
) -> Callable[[str | None], Any]:
    """One page request of im.v1.message.list for `_paginate`: a chat (optionally bounded by
    whole seconds, start and end) or a thread, in the given order (docs/design.md §3)."""

    def build(page_token: str | None) -> Any:
        builder = ListMessageRequest.builder().container_id_type(kind).container_id(container_id)
        if seconds is not None:
            builder = builder.start_time(seconds[0]).end_time(seconds[1])
        builder = builder.sort_type(sort).page_size(size)
        if page_token:
            builder = builder.page_token(page_token)
        return builder.build()

    return build


class LarkClient:
    """History, messaging and lookup calls with retries, rate limiting and typed failures."""

    def __init__(
        self,
        config: LarkClientConfig,
        *,
        rate_limiter: RateLimiter | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._config = config
        self._sdk: Any = (
            lark.Client.builder()
            .app_id(config.app_id)
            .app_secret(config.app_secret)
            .domain(config.base_url.rstrip("/"))
            .timeout(config.timeout_seconds)
            .build()
        )
        self._limiter = rate_limiter or shared_rate_limiter(
            config.app_id, config.max_requests_per_second, config.max_requests_per_minute
        )
        self._sleep = sleep
        self._bot_open_id: str | None = None

    # ----------------------------------------------------------------- history

    def iter_chat_messages(
        self, chat_id: str, start: datetime, end: datetime
    ) -> Iterator[MessagePage]:
        """Yield every page of a chat's history in ascending creation order.

        Lark filters by whole seconds; the bounds are widened outward (floor/ceil) because a
        reconciliation that sees one message too many is harmless and one too few is data loss.
        """
        start_s = _utc_seconds(start, round_up=False)
        end_s = _utc_seconds(end, round_up=True)

        build = _list_messages(
            "chat",
            chat_id,
            sort="ByCreateTimeAsc",
            size=self._config.page_size,
            seconds=(start_s, end_s),
        )

        yield from self._paginate("list_chat_messages", {"chat_id": chat_id}, build)

    def newest_chat_messages_before(
        self, chat_id: str, before: datetime, not_before: datetime, *, limit: int
    ) -> MessagePage:
        """One page: the chat's newest `limit` messages in [not_before, before), newest first.

        Reconciliation reads it for thread ids only: a thread whose root was posted just before
        the ingestion floor has replies inside it that only a thread listing finds.
        """
        start_s = _utc_seconds(not_before, round_up=False)
        end_s = _utc_seconds(before, round_up=True)
        size = max(1, min(limit, MAX_PAGE_SIZE))

        build = _list_messages(
            "chat", chat_id, sort="ByCreateTimeDesc", size=size, seconds=(start_s, end_s)
        )

        # The first page only: the pagination stops at the first `next`, no further call.
        return next(iter(self._paginate("list_chat_messages_before", {"chat_id": chat_id}, build)))

    def iter_thread_messages(
        self, thread_id: str, *, not_before: datetime | None = None
    ) -> Iterator[MessagePage]:
        """Yield a thread's messages newest first, stopping at `not_before`.

        Lark's thread listing takes no time bounds, so the newest-first order is what keeps a
        long-lived thread from being re-read in full on every reconciliation.
        """
        floor_ms = None
        if not_before is not None:
            if not_before.tzinfo is None:
                raise ValueError("datetimes passed to the Lark client must be timezone-aware")
            floor_ms = math.floor(not_before.timestamp() * 1000)

        build = _list_messages(
            "thread", thread_id, sort="ByCreateTimeDesc", size=self._config.page_size
        )

        for page in self._paginate("list_thread_messages", {"thread_id": thread_id}, build):
            if floor_ms is None:
                yield page
                continue
            kept = [
                item
                for item in page.items
                if (created := _create_time_ms(item)) is None or created >= floor_ms
            ]
            if len(kept) < len(page.items):
                yield MessagePage(kept, False, None, page.page_number)
                return
            yield page

    def _paginate(
        self, op: str, ids: dict[str, str], build: Callable[[str | None], Any]
    ) -> Iterator[MessagePage]:
        page_token: str | None = None
        seen_tokens: set[str] = set()
        page_number = 0
        while True:
            page_number += 1

            def send(token: str | None = page_token) -> Any:
                return self._sdk.im.v1.message.list(build(token))

            reply = self._call(op, send, {**ids, "page": str(page_number)})
            data = reply.get("data")
            data = data if isinstance(data, dict) else {}
            raw_items = data.get("items")
            raw_items = raw_items if isinstance(raw_items, list) else []
            items = [item for item in raw_items if isinstance(item, dict)]
            if len(items) != len(raw_items):
                log.warning(
                    "lark.history_page.items_dropped",
                    **ids,
                    op=op,
                    page_number=page_number,
                    dropped=len(raw_items) - len(items),
                )
            has_more = bool(data.get("has_more"))
            next_token = data.get("page_token") or None
            log.info(
                "lark.history_page.read",
                **ids,
                op=op,
                page_number=page_number,
                item_count=len(items),
                has_more=has_more,
            )
            if has_more and (not isinstance(next_token, str) or next_token in seen_tokens):
                raise LarkApiError(
                    _TRANSPORT_CODE,
                    "has_more without a fresh page_token",
                    http_status=200,
                    operation=op,
                )
            yield MessagePage(items, has_more, next_token if has_more else None, page_number)
            if not has_more:
                return
            assert isinstance(next_token, str)
            seen_tokens.add(next_token)
            page_token = next_token

    # --------------------------------------------------------------- messaging

    def send_message(
        self, chat_id: str, *, msg_type: str, content: dict[str, Any], idempotency_uuid: str
    ) -> str:
        """Post into a chat; the uuid makes a retried send land once (Lark dedupes for 1 h)."""
        body = (
            CreateMessageRequestBody.builder()
            .receive_id(chat_id)
            .msg_type(msg_type)
            .content(json.dumps(content, ensure_ascii=False))
            .uuid(idempotency_uuid)
            .build()
        )
        request = CreateMessageRequest.builder().receive_id_type("chat_id").request_body(body)
        reply = self._call(
            "send_message",
            lambda: self._sdk.im.v1.message.create(request.build()),
            {"chat_id": chat_id},
        )
        return self._message_id(reply, "send_message")

    def reply_message(
        self,
        message_id: str,
        *,
        msg_type: str,
        content: dict[str, Any],
        idempotency_uuid: str,
        in_thread: bool = False,
    ) -> str:
        """Reply to a message; `in_thread` puts the reply in the message's thread (Lark makes
        one when the message is a plain top-level one), which is where a thread's review goes."""
        builder = (
            ReplyMessageRequestBody.builder()
            .msg_type(msg_type)
            .content(json.dumps(content, ensure_ascii=False))
            .uuid(idempotency_uuid)
        )
        if in_thread:
            builder = builder.reply_in_thread(True)
        body = builder.build()
        request = ReplyMessageRequest.builder().message_id(message_id).request_body(body)
        reply = self._call(
            "reply_message",
            lambda: self._sdk.im.v1.message.reply(request.build()),
            {"message_id": message_id},
        )
        return self._message_id(reply, "reply_message")

    def patch_message(self, message_id: str, *, content: dict[str, Any]) -> None:
        """Replace a card's content; a patch is idempotent, so retrying it is safe."""
        body = (
            PatchMessageRequestBody.builder()
            .content(json.dumps(content, ensure_ascii=False))
            .build()
        )
        request = PatchMessageRequest.builder().message_id(message_id).request_body(body)
        self._call(
            "patch_message",
            lambda: self._sdk.im.v1.message.patch(request.build()),
            {"message_id": message_id},
        )

    @staticmethod
    def _message_id(reply: dict[str, Any], op: str) -> str:
        message_id = (reply.get("data") or {}).get("message_id")
        if not isinstance(message_id, str) or not message_id:
            raise LarkApiError(
                _TRANSPORT_CODE, "reply carried no message_id", http_status=200, operation=op
            )
        return message_id

    def get_message(self, message_id: str) -> dict[str, Any] | None:
        """One message by id, in the history list's item shape (it names its chat), or None
        when Lark has no such message for this app. A pin of a message the product has not
        collected yet reads it here (docs/pins.md)."""
        request = GetMessageRequest.builder().message_id(message_id).build()
        reply = self._call(
            "get_message",
            lambda: self._sdk.im.v1.message.get(request),
            {"message_id": message_id},
        )
        items = (reply.get("data") or {}).get("items") or []
        for item in items:
            # A merged-forward message lists its children too; the one asked for is the one
            # with its own id.
            if isinstance(item, dict) and item.get("message_id") == message_id:
                return item
        return None

    # ------------------------------------------------------------------ lookups

    def batch_user_names(self, open_ids: Sequence[str]) -> dict[str, str]:
        """Resolve display names, 50 ids per call; unknown ids are simply absent."""
        unique = list(dict.fromkeys(i for i in open_ids if i))
        names: dict[str, str] = {}
        for offset in range(0, len(unique), USERS_PER_BATCH):
            chunk = unique[offset : offset + USERS_PER_BATCH]

            def send(chunk: list[str] = chunk) -> Any:
                request = BatchUserRequest.builder().user_ids(chunk).user_id_type("open_id").build()
                return self._sdk.contact.v3.user.batch(request)

            reply = self._call("batch_user_names", send, {"count": str(len(chunk))})
            for user in (reply.get("data") or {}).get("items") or []:
                if not isinstance(user, dict):
                    continue
                open_id, name = user.get("open_id"), user.get("name")
                if isinstance(open_id, str) and isinstance(name, str):
                    names[open_id] = name
        return names

    def bot_open_id(self) -> str:
        """The bot's own open_id, cached: it never changes for an app."""
        if self._bot_open_id is not None:
            return self._bot_open_id

        def send() -> Any:
            request = (
                lark.BaseRequest.builder()
                .http_method(lark.HttpMethod.GET)
                .uri("/open-apis/bot/v3/info")
                .token_types({lark.AccessTokenType.TENANT})
                .build()
            )
            return self._sdk.request(request)

        reply = self._call("bot_info", send, {"app_id": self._config.app_id})
        bot = reply.get("bot") or (reply.get("data") or {}).get("bot") or {}
        open_id = bot.get("open_id") if isinstance(bot, dict) else None
        if not isinstance(open_id, str) or not open_id:
            raise LarkApiError(
                _TRANSPORT_CODE,
                "bot info carried no open_id",
                http_status=200,
                operation="bot_info",
            )
        self._bot_open_id = open_id
        return open_id

    # ---------------------------------------------------------------- plumbing

    @property
    def sdk(self) -> Any:
        """The lark-oapi client, for the package's other doors to Lark (lark/documents.py)."""
        return self._sdk

    def call(
        self,
        op: str,
        send: Callable[[], Any],
        ids: dict[str, str],
        *,
        idempotent: bool = True,
    ) -> dict[str, Any]:
        """`_call` for the package's other doors to Lark (lark/documents.py): one retry policy,
        token refresh, rate limit and error typing for every call (docs/design.md §11).

        A call Lark cannot dedupe (`idempotent=False`: creating a document) is retried only
        when Lark refused it before doing anything (a rate limit); after a 5xx or a lost
        answer it may have happened, so the error goes to the caller, which finds out."""
        return self._call(op, send, ids, retry_on=_is_retryable if idempotent else _was_refused)

    def _call(
        self,
        op: str,
        send: Callable[[], Any],
        ids: dict[str, str],
        *,
        retry_on: Callable[[BaseException], bool] | None = None,
    ) -> dict[str, Any]:
        return self._config.retry.call(
            lambda: self._attempt(op, send),
            retry_on=retry_on or _is_retryable,
            retry_after=_error_retry_after,
            before_sleep=lambda state: self._log_retry(op, ids, state),
            sleep=self._sleep,
        )

    def _log_retry(self, op: str, ids: dict[str, str], state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        code = exc.code if isinstance(exc, LarkApiError) else None
        status = exc.http_status if isinstance(exc, LarkApiError) else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        log.warning(
            "lark.call.retry",
            **ids,
            op=op,
            attempt=state.attempt_number,
            lark_code=code,
            http_status=status,
            wait_seconds=round(wait, 3),
        )

    def _attempt(self, op: str, send: Callable[[], Any]) -> dict[str, Any]:
        """One attempt; an invalid token is refreshed once inside it, as Lark's docs advise."""
        refreshed = False
        while True:
            # Without a cached tenant token lark-oapi fetches one inside this call: one more
            # request that the per-app quota counts too.
            with self._limiter.hold(1 if self._token_cached() else 2):
                reply = self._send_once(op, send)
            error = _classify(op, reply)
            if error is None:
                return reply.body
            if isinstance(error, LarkTokenError) and not refreshed:
                log.info(
                    "lark.tenant_token.refreshed",
                    op=op,
                    app_id=self._config.app_id,
                    lark_code=error.code,
                )
                self._forget_token()
                refreshed = True
                continue
            raise error

    def _send_once(self, op: str, send: Callable[[], Any]) -> _Reply:
        try:
            response = send()
        except ObtainAccessTokenException as exc:
            code = exc.code if isinstance(exc.code, int) else _TRANSPORT_CODE
            if code in PERMISSION_CODES:
                raise LarkPermissionError(code, str(exc.msg), operation=op) from None
            raise LarkApiError(
                code, "tenant token request failed", retryable=True, operation=op
            ) from None
        except requests.RequestException as exc:
            raise LarkApiError(
                _TRANSPORT_CODE,
                f"transport error {type(exc).__name__}",
                retryable=True,
                operation=op,
            ) from None
        except ValueError:
            # The typed SDK calls parse the body before we see the status: a gateway error page.
            raise LarkApiError(
                _TRANSPORT_CODE, "response was not JSON", retryable=True, operation=op
            ) from None
        raw = getattr(response, "raw", None)
        status = cast(int | None, getattr(raw, "status_code", None))
        headers = cast(Mapping[str, str], getattr(raw, "headers", None) or {})
        content = cast(bytes | None, getattr(raw, "content", None))
        try:
            body = json.loads(content) if content else {}
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        return _Reply(status, headers, body)

    def _token_cached(self) -> bool:
        return bool(TokenManager.cache.get(self._token_cache_key()))

    def _token_cache_key(self) -> str:
        # lark-oapi's own key for an app's tenant token (core/token/manager.py).
        return f"self_tenant_token:{self._config.app_id}"

    def _forget_token(self) -> None:
        """Drop the SDK's cached tenant token (its cache is process-global, keyed by app_id)."""
        TokenManager.cache.set(self._token_cache_key(), "", 0)
