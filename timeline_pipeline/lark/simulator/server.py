"""A loopback stand-in for the slice of the Lark OpenAPI the product uses.

It answers in Lark's `{"code", "msg", "data"}` envelope with Lark's error codes and HTTP statuses,
so the product's real lark-oapi client runs unchanged against it (`LARK_BASE_URL`). Behaviour
the design leans on is emulated on purpose: second-granularity time bounds, opaque page tokens,
a chat listing that hides thread replies, tenant tokens that can expire under the client.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse

from timeline_pipeline.lark.simulator.documents import DocumentsState, register_document_routes
from timeline_pipeline.lark.simulator.envelope import (
    LarkError,
    handle_lark_errors,
    json_object_body,
    lark_reply,
    rate_limited,
)
from timeline_pipeline.lark.simulator.faults import FaultCounters, SimulatorFaults, malformed_item
from timeline_pipeline.lark.simulator.paging import (
    PageCursor,
    PageTokenCodec,
    PageTokenError,
    query_fingerprint,
)
from timeline_pipeline.lark.simulator.store import ChatStore

ROUTE_TOKEN: Final = "POST /open-apis/auth/v3/tenant_access_token/internal"  # noqa: S105
ROUTE_LIST_MESSAGES: Final = "GET /open-apis/im/v1/messages"
ROUTE_CREATE_MESSAGE: Final = "POST /open-apis/im/v1/messages"
ROUTE_REPLY_MESSAGE: Final = "POST /open-apis/im/v1/messages/{message_id}/reply"
ROUTE_PATCH_MESSAGE: Final = "PATCH /open-apis/im/v1/messages/{message_id}"
ROUTE_GET_MESSAGE: Final = "GET /open-apis/im/v1/messages/{message_id}"
ROUTE_USERS_BATCH: Final = "GET /open-apis/contact/v3/users/batch"
ROUTE_BOT_INFO: Final = "GET /open-apis/bot/v3/info"

CODE_INVALID_PARAM: Final = 230001
CODE_BOT_NOT_IN_CHAT: Final = 230002
CODE_NOT_SENDER: Final = 230012
CODE_MISSING_TOKEN: Final = 99991661
CODE_INVALID_TOKEN: Final = 99991663
CODE_FIELD_VALIDATION: Final = 99992402
CODE_BAD_APP_ID: Final = 10003
CODE_BAD_APP_SECRET: Final = 10014

MAX_PAGE_SIZE: Final = 50
DEFAULT_PAGE_SIZE: Final = 20
MAX_USERS_PER_BATCH: Final = 50
SORTS: Final = frozenset({"ByCreateTimeAsc", "ByCreateTimeDesc"})


@dataclass
class _Token:
    app_id: str
    expires_at: float


class SimulatorState:
    """Everything the routes share: the store, faults, credentials, tokens and counters."""

    def __init__(
        self,
        store: ChatStore,
        faults: SimulatorFaults,
        apps: Mapping[str, str],
        *,
        token_ttl_seconds: int = 7200,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.faults = faults
        self.apps = dict(apps)
        self.token_ttl_seconds = token_ttl_seconds
        self.counters = FaultCounters()
        self.page_tokens = PageTokenCodec()
        self.documents = DocumentsState()
        self._clock = clock
        self._tokens: dict[str, _Token] = {}
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    # tokens
    def issue_token(self, app_id: str) -> str:
        token = f"t-sim-{secrets.token_hex(16)}"
        with self._lock:
            self._tokens[token] = _Token(app_id, self._clock() + self.token_ttl_seconds)
        return token

    def invalidate_tokens(self) -> None:
        """Revoke every issued token, as if they had all expired: clients must fetch new ones."""
        with self._lock:
            self._tokens.clear()

    def app_for(self, authorization: str | None) -> str:
        if not authorization or not authorization.startswith("Bearer "):
            raise LarkError(CODE_MISSING_TOKEN, "Missing access token for authorization")
        token = authorization.removeprefix("Bearer ").strip()
        with self._lock:
            entry = self._tokens.get(token)
            if entry is None or entry.expires_at <= self._clock():
                self._tokens.pop(token, None)
                raise LarkError(CODE_INVALID_TOKEN, "Invalid access token for authorization")
            return entry.app_id

    @staticmethod
    def bot_open_id(app_id: str) -> str:
        return "ou_bot_" + query_fingerprint("bot", app_id)

    # counters
    def count(self, route: str) -> None:
        with self._lock:
            self._counts[route] += 1

    def request_counts(self) -> Counter[str]:
        with self._lock:
            return Counter(self._counts)

    def reset_counts(self) -> None:
        with self._lock:
            self._counts.clear()
        self.counters.reset()


def _int_param(value: str | None, name: str, default: int | None = None) -> int | None:
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise LarkError(CODE_INVALID_PARAM, f"{name} must be an integer") from None


def _require_json_text(content: Any) -> str:
    if not isinstance(content, str):
        raise LarkError(CODE_INVALID_PARAM, "content must be a JSON string")
    try:
        json.loads(content)
    except ValueError:
        raise LarkError(CODE_INVALID_PARAM, "content is not valid JSON") from None
    return content


def create_app(state: SimulatorState) -> FastAPI:
    """Build the FastAPI app; `state` stays reachable as `app.state.sim` for tests."""

    async def count_and_delay(request: Request) -> None:
        route = request.scope.get("route")
        state.count(f"{request.method} {getattr(route, 'path', request.url.path)}")
        if state.faults.latency_ms > 0:
            await asyncio.sleep(state.faults.latency_ms / 1000)

    app = FastAPI(title="timeline-pipeline local Lark", dependencies=[Depends(count_and_delay)])
    app.state.sim = state

    handle_lark_errors(app)

    def authorize(request: Request) -> str:
        app_id = state.app_for(request.headers.get("authorization"))
        if state.counters.should_rate_limit(state.faults):
            raise rate_limited(state.faults.retry_after_seconds)
        return app_id

    register_document_routes(app, state.documents, authorize)

    def deny_if_blocked(chat_id: str | None) -> None:
        if chat_id and chat_id in state.faults.permission_denied_chats:
            raise LarkError(CODE_BOT_NOT_IN_CHAT, "Bot is not in the chat")

    def stored(message_id: str) -> dict[str, Any]:
        message = state.store.get(message_id)
        if message is None:
            raise LarkError(CODE_INVALID_PARAM, "message not found")
        return message

    @app.post("/open-apis/auth/v3/tenant_access_token/internal")
    async def tenant_token(request: Request) -> JSONResponse:
        body = await json_object_body(request, CODE_INVALID_PARAM)
        app_id, secret = body.get("app_id"), body.get("app_secret")
        if not isinstance(app_id, str) or app_id not in state.apps:
            raise LarkError(CODE_BAD_APP_ID, "app_id is invalid")
        if not isinstance(secret, str) or not secrets.compare_digest(secret, state.apps[app_id]):
            raise LarkError(CODE_BAD_APP_SECRET, "app secret invalid")
        return JSONResponse(
            {
                "code": 0,
                "msg": "ok",
                "tenant_access_token": state.issue_token(app_id),
                "expire": state.token_ttl_seconds,
            }
        )

    @app.get("/open-apis/im/v1/messages")
    async def list_messages(request: Request) -> JSONResponse:
        authorize(request)
        return _list_messages(state, request.query_params, deny_if_blocked)

    @app.post("/open-apis/im/v1/messages")
    async def create_message(request: Request) -> JSONResponse:
        app_id = authorize(request)
        if request.query_params.get("receive_id_type") != "chat_id":
            raise LarkError(CODE_INVALID_PARAM, "receive_id_type must be chat_id here")
        body = await json_object_body(request, CODE_INVALID_PARAM)
        chat_id = body.get("receive_id")
        msg_type = body.get("msg_type")
        if not isinstance(chat_id, str) or not chat_id or not isinstance(msg_type, str):
            raise LarkError(CODE_INVALID_PARAM, "receive_id and msg_type are required")
        deny_if_blocked(chat_id)
        message, _ = state.store.create_bot_message(
            app_id=app_id,
            chat_id=chat_id,
            msg_type=msg_type,
            content=_require_json_text(body.get("content")),
            idempotency_uuid=_uuid(body),
        )
        return lark_reply(message)

    @app.post("/open-apis/im/v1/messages/{message_id}/reply")
    async def reply_message(message_id: str, request: Request) -> JSONResponse:
        app_id = authorize(request)
        body = await json_object_body(request, CODE_INVALID_PARAM)
        parent = stored(message_id)
        deny_if_blocked(parent["chat_id"])
        msg_type = body.get("msg_type")
        if not isinstance(msg_type, str):
            raise LarkError(CODE_INVALID_PARAM, "msg_type is required")
        message, _ = state.store.create_bot_message(
            app_id=app_id,
            chat_id=parent["chat_id"],
            msg_type=msg_type,
            content=_require_json_text(body.get("content")),
            idempotency_uuid=_uuid(body),
            parent=parent,
            in_thread=bool(body.get("reply_in_thread")),
        )
        return lark_reply(message)

    @app.get("/open-apis/im/v1/messages/{message_id}")
    async def get_message(message_id: str, request: Request) -> JSONResponse:
        """One message in the list's item shape, under `items` as Lark answers it."""
        authorize(request)
        message = stored(message_id)
        deny_if_blocked(message["chat_id"])
        return lark_reply({"items": [message]})

    @app.patch("/open-apis/im/v1/messages/{message_id}")
    async def patch_message(message_id: str, request: Request) -> JSONResponse:
        app_id = authorize(request)
        body = await json_object_body(request, CODE_INVALID_PARAM)
        message = stored(message_id)
        sender = message.get("sender") or {}
        if sender.get("sender_type") != "app" or sender.get("id") != app_id:
            raise LarkError(CODE_NOT_SENDER, "Bot is NOT the sender of the message")
        if message.get("msg_type") != "interactive":
            raise LarkError(CODE_INVALID_PARAM, "only interactive messages can be patched")
        state.store.patch_content(message_id, _require_json_text(body.get("content")))
        return lark_reply()

    @app.get("/open-apis/contact/v3/users/batch")
    async def users_batch(request: Request) -> JSONResponse:
        authorize(request)
        ids = request.query_params.getlist("user_ids")
        if request.query_params.get("user_id_type", "open_id") != "open_id":
            raise LarkError(CODE_FIELD_VALIDATION, "only user_id_type=open_id is simulated")
        if not ids or len(ids) > MAX_USERS_PER_BATCH:
            raise LarkError(CODE_FIELD_VALIDATION, "user_ids must hold 1..50 ids")
        return lark_reply({"items": state.store.users(ids)})

    @app.get("/_sim/cards")
    async def sent_cards(request: Request) -> JSONResponse:
        """The simulator's own API: cards sent and patched, for tests and the demo."""
        return JSONResponse({"items": state.store.card_log(request.query_params.get("message_id"))})

    @app.get("/open-apis/bot/v3/info")
    async def bot_info(request: Request) -> JSONResponse:
        app_id = authorize(request)
        # Lark returns this object at the top level, not under "data".
        return JSONResponse(
            {
                "code": 0,
                "msg": "ok",
                "bot": {
                    "activate_status": 2,
                    "app_name": f"sim-{app_id}",
                    "avatar_url": "",
                    "ip_white_list": [],
                    "open_id": state.bot_open_id(app_id),
                },
            }
        )

    return app


def _uuid(body: Mapping[str, Any]) -> str | None:
    value = body.get("uuid")
    if value is not None and (not isinstance(value, str) or len(value) > 50):
        raise LarkError(CODE_INVALID_PARAM, "uuid must be a string of at most 50 characters")
    return value or None


def _list_messages(
    state: SimulatorState,
    params: Any,
    deny_if_blocked: Callable[[str | None], None],
) -> JSONResponse:
    container_type = params.get("container_id_type")
    container_id = params.get("container_id")
    sort_type = params.get("sort_type") or "ByCreateTimeAsc"
    start = params.get("start_time")
    end = params.get("end_time")
    if container_type not in ("chat", "thread") or not container_id:
        raise LarkError(CODE_INVALID_PARAM, "container_id_type must be chat or thread")
    if sort_type not in SORTS:
        raise LarkError(CODE_INVALID_PARAM, "sort_type is invalid")
    page_size = _int_param(params.get("page_size"), "page_size", DEFAULT_PAGE_SIZE)
    assert page_size is not None
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise LarkError(CODE_INVALID_PARAM, "page_size must be between 1 and 50")
    start_s = _int_param(start, "start_time")
    end_s = _int_param(end, "end_time")
    if container_type == "thread" and (start_s is not None or end_s is not None):
        raise LarkError(CODE_INVALID_PARAM, "a thread container takes no start_time/end_time")

    chat_id = container_id if container_type == "chat" else state.store.chat_of_thread(container_id)
    deny_if_blocked(chat_id)
    if container_type == "chat" and not state.store.has_chat(container_id):
        raise LarkError(CODE_BOT_NOT_IN_CHAT, "Bot is not in the chat")

    fingerprint = query_fingerprint(container_type, container_id, sort_type, start, end)
    token = params.get("page_token")
    cursor: PageCursor | None = None
    if token:
        try:
            cursor = state.page_tokens.decode(token, fingerprint)
        except PageTokenError as exc:
            raise LarkError(CODE_INVALID_PARAM, str(exc)) from None
    page_number = cursor.page_number if cursor else 1
    after = (cursor.create_time_ms, cursor.message_id) if cursor else None

    faults = state.faults
    if state.counters.should_fail_page(faults, container_id, page_number):
        raise LarkError(
            faults.fail_page_code,
            "simulated page failure",
            status=faults.fail_page_http_status,
        )

    descending = sort_type == "ByCreateTimeDesc"
    if container_type == "chat":
        listed = state.store.list_chat(
            container_id,
            start_ms=None if start_s is None else start_s * 1000,
            end_ms=None if end_s is None else end_s * 1000 + 999,
            descending=descending,
            after=after,
            limit=page_size,
        )
    else:
        listed = state.store.list_thread(
            container_id, descending=descending, after=after, limit=page_size
        )
    items = listed.items
    if faults.malformed_item_page == page_number:
        items = [*items, malformed_item(chat_id or container_id, page_number)]
    next_token = ""
    if listed.has_more and listed.last_key is not None:
        next_token = state.page_tokens.encode(
            PageCursor(page_number + 1, *listed.last_key), fingerprint
        )
    return lark_reply({"has_more": listed.has_more, "page_token": next_token, "items": items})
