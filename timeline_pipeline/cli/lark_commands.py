"""`timeline-pipeline lark ...`: run the local Lark and push simulated events at the receiver.

Both commands are loopback-only by construction: a stand-in that accepts any app secret, or a
pusher that signs with a real encrypt key, has no business being reachable from another host.
"""

from __future__ import annotations

import functools
import json
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

import click

from timeline_pipeline.cli.output import refuse
from timeline_pipeline.lark.simulator.events import (
    EventIdentity,
    card_action_event,
    item_recalled_event,
    message_receive_event,
    reaction_event,
)
from timeline_pipeline.lark.simulator.faults import SimulatorFaults
from timeline_pipeline.lark.simulator.pusher import EventPusher, send_signed
from timeline_pipeline.lark.simulator.runner import (
    DEFAULT_APP_ID,
    DEFAULT_APP_SECRET,
    SimulatorServer,
    is_loopback_host,
)
from timeline_pipeline.lark.simulator.store import ChatStore, StoreError


def _load_store(chats: Path) -> ChatStore:
    try:
        return ChatStore.load_jsonl(chats)
    except (OSError, StoreError) as exc:
        refuse(f"cannot load {chats}: {exc}")


def _check_receiver(receiver: str) -> None:
    if not is_loopback_host(urlsplit(receiver).hostname or ""):
        refuse(f"--receiver {receiver} is not a loopback URL")


@dataclass(frozen=True, slots=True)
class _OneEvent:
    """Where and how a one-event command sends: the options every such command shares."""

    receiver: str
    identity: EventIdentity
    event_id: str | None
    encrypt_key: str | None
    as_json: bool

    def send(
        self, payload: dict[str, Any], shown: Callable[[Any], Any] = lambda body: body
    ) -> None:
        """Send the signed event; print the answer; exit 1 unless the receiver said 200."""
        answer = send_signed(self.receiver, payload, encrypt_key=self.encrypt_key or None)
        if self.as_json:
            click.echo(json.dumps(answer.body))
        else:
            click.echo(f"HTTP {answer.status}: {shown(answer.body)}")
        if answer.status != 200:
            sys.exit(1)


def _one_event_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options of every command that sends one signed event and prints the answer: the
    command gets them as one `_OneEvent` (`event`), its receiver checked first."""

    @functools.wraps(command)
    def run(
        *,
        receiver: str,
        event_id: str | None,
        encrypt_key: str | None,
        verification_token: str,
        app_id: str,
        as_json: bool,
        **options: Any,
    ) -> None:
        _check_receiver(receiver)
        identity = EventIdentity(app_id=app_id, verification_token=verification_token)
        command(_OneEvent(receiver, identity, event_id, encrypt_key, as_json), **options)

    wrapped: Callable[..., None] = run
    for option in reversed(
        (
            click.option("--event-id", default=None, help="Reuse an event id (a redelivery)."),
            click.option("--encrypt-key", envvar="LARK_ENCRYPT_KEY", default=None),
            click.option("--verification-token", envvar="LARK_VERIFICATION_TOKEN", default=""),
            click.option(
                "--app-id", envvar="LARK_APP_ID", default=DEFAULT_APP_ID, show_default=True
            ),
            click.option(
                "--json", "as_json", is_flag=True, help="Print the receiver's answer as JSON."
            ),
        )
    ):
        wrapped = option(wrapped)
    return wrapped


def _toast(body: Any) -> Any:
    toast = (body.get("toast") or {}).get("content") if body else None
    return toast or body


@click.group(name="lark")
def lark_group() -> None:
    """The local Lark: a loopback OpenAPI stand-in and a signed-event pusher."""


@lark_group.command("simulate")
@click.option(
    "--chats",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help='JSONL of Lark history list items, plus optional {"kind": "user"} lines.',
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Loopback address only.")
@click.option("--port", type=int, default=0, show_default=True, help="0 picks a free port.")
@click.option("--app-id", envvar="LARK_APP_ID", default=DEFAULT_APP_ID, show_default=True)
@click.option(
    "--app-secret", envvar="LARK_APP_SECRET", default=DEFAULT_APP_SECRET, show_default=False
)
@click.option("--fail-page", type=int, default=None, help="Fail this history page number.")
@click.option(
    "--fail-page-attempts",
    type=int,
    default=None,
    help="Fail --fail-page only for its first K requests (default: always).",
)
@click.option("--rate-limit-every", type=int, default=None, help="Answer every Nth call with 429.")
@click.option("--retry-after", type=int, default=1, show_default=True, help="429 retry-after (s).")
@click.option("--latency-ms", type=int, default=0, show_default=True)
@click.option("--deny-chat", multiple=True, help="A chat the bot cannot read (repeatable).")
@click.option("--json", "as_json", is_flag=True, help='Print one JSON line {"base_url": ...}.')
def simulate(
    chats: Path,
    host: str,
    port: int,
    app_id: str,
    app_secret: str,
    fail_page: int | None,
    fail_page_attempts: int | None,
    rate_limit_every: int | None,
    retry_after: int,
    latency_ms: int,
    deny_chat: tuple[str, ...],
    as_json: bool,
) -> None:
    """Serve the local Lark until interrupted; point LARK_BASE_URL at the printed URL."""
    if not is_loopback_host(host):
        refuse(f"--host {host} is not a loopback address; the local Lark binds loopback only")
    faults = SimulatorFaults(
        fail_page=fail_page,
        fail_page_attempts=fail_page_attempts,
        rate_limit_every=rate_limit_every,
        retry_after_seconds=retry_after,
        latency_ms=latency_ms,
        permission_denied_chats=set(deny_chat),
    )
    stop = threading.Event()

    def _on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    server = SimulatorServer(
        _load_store(chats),
        faults=faults,
        app_id=app_id,
        app_secret=app_secret,
        host=host,
        port=port,
    )
    with server:
        if as_json:
            click.echo(json.dumps({"base_url": server.base_url, "app_id": app_id}))
        else:
            click.echo(f"local Lark listening on {server.base_url} (app_id {app_id})")
            click.echo(f"export LARK_BASE_URL={server.base_url}")
        sys.stdout.flush()
        previous = signal.signal(signal.SIGTERM, _on_term)
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)


def _events_for(store: ChatStore, identity: EventIdentity) -> list[dict[str, Any]]:
    """Receive events for people's messages (Lark never pushes the bot its own), then recalls."""
    events: list[dict[str, Any]] = []
    for item in store.messages():
        if (item.get("sender") or {}).get("sender_type", "user") != "user":
            continue
        events.append(message_receive_event(item, identity))
        if item.get("deleted"):
            events.append(item_recalled_event(item, identity))
    return events


@lark_group.command("push")
@click.option(
    "--chats", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True
)
@click.option(
    "--receiver", required=True, help="Receiver URL, e.g. http://127.0.0.1:8000/lark/events"
)
@click.option("--encrypt-key", envvar="LARK_ENCRYPT_KEY", default=None)
@click.option("--verification-token", envvar="LARK_VERIFICATION_TOKEN", default="")
@click.option("--app-id", envvar="LARK_APP_ID", default=DEFAULT_APP_ID, show_default=True)
@click.option("--plain", is_flag=True, help="Sign but do not encrypt, even with an encrypt key.")
@click.option("--drop-fraction", type=click.FloatRange(0, 1), default=0.0, show_default=True)
@click.option("--duplicate-fraction", type=click.FloatRange(0, 1), default=0.0, show_default=True)
@click.option("--shuffle", is_flag=True, help="Deliver in a seeded random order.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--concurrency", type=click.IntRange(1, 64), default=1, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the delivery report as JSON.")
def push(
    chats: Path,
    receiver: str,
    encrypt_key: str | None,
    verification_token: str,
    app_id: str,
    plain: bool,
    drop_fraction: float,
    duplicate_fraction: float,
    shuffle: bool,
    seed: int,
    concurrency: int,
    as_json: bool,
) -> None:
    """Deliver the chats' messages to the receiver as signed Lark callbacks."""
    _check_receiver(receiver)
    store = _load_store(chats)
    identity = EventIdentity(app_id=app_id, verification_token=verification_token)
    pusher = EventPusher(
        receiver,
        encrypt_key=encrypt_key or None,
        encrypt_body=False if plain else None,
        drop_fraction=drop_fraction,
        duplicate_fraction=duplicate_fraction,
        shuffle=shuffle,
        seed=seed,
        concurrency=concurrency,
    )
    report = pusher.push(_events_for(store, identity))
    summary = report.as_dict()
    if as_json:
        click.echo(json.dumps(summary))
    else:
        click.echo(
            f"sent {summary['sent']}, dropped {summary['dropped']}, "
            f"duplicated {summary['duplicated']}, errors {summary['errors']}, "
            f"statuses {summary['status_counts']}"
        )
    if not report.all_accepted:
        sys.exit(1)


@lark_group.command("push-card-action")
@click.option(
    "--receiver", required=True, help="Receiver URL, e.g. http://127.0.0.1:8080/lark/events"
)
@click.option("--message-id", required=True, help="The card's message id (open_message_id).")
@click.option("--chat", "chat_id", required=True, help="The card's chat (open_chat_id).")
@click.option("--operator", required=True, help="The open_id of the person who clicked.")
@click.option(
    "--value", "value_json", required=True, help="The control's value as JSON (from the card)."
)
@click.option("--option", default=None, help="The option picked in a select.")
@click.option("--form-value", "form_json", default=None, help="A form's values as JSON.")
@_one_event_options
def push_card_action(
    event: _OneEvent,
    message_id: str,
    chat_id: str,
    operator: str,
    value_json: str,
    option: str | None,
    form_json: str | None,
) -> None:
    """Send one signed card.action.trigger callback, as Lark does when someone clicks a card."""
    value = _json_object(value_json, "--value")
    payload = card_action_event(
        event.identity,
        operator_open_id=operator,
        open_message_id=message_id,
        open_chat_id=chat_id,
        action_value=value,
        event_id=event.event_id,
    )
    if option is not None:
        payload["event"]["action"]["option"] = option
    if form_json is not None:
        payload["event"]["action"]["form_value"] = _json_object(form_json, "--form-value")
    event.send(payload, shown=_toast)


@lark_group.command("push-reaction")
@click.option(
    "--receiver", required=True, help="Receiver URL, e.g. http://127.0.0.1:8080/lark/events"
)
@click.option("--message-id", required=True, help="The message reacted to.")
@click.option("--operator", required=True, help="The open_id of the person who reacted.")
@click.option("--emoji", "emoji_type", default="Pin", show_default=True, help="emoji_type.")
@click.option("--removed", is_flag=True, help="Send the reaction's removal (deleted_v1).")
@_one_event_options
def push_reaction(
    event: _OneEvent,
    message_id: str,
    operator: str,
    emoji_type: str,
    removed: bool,
) -> None:
    """Send one signed im.message.reaction.created_v1 (or deleted_v1) event, as Lark does
    when someone adds (or removes) an emoji reaction (docs/pins.md)."""
    payload = reaction_event(
        event.identity,
        message_id=message_id,
        emoji_type=emoji_type,
        operator_open_id=operator,
        removed=removed,
        event_id=event.event_id,
    )
    event.send(payload)


def _json_object(raw: str, option: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        refuse(f"{option} is not JSON")
    if not isinstance(value, dict):
        refuse(f"{option} must be a JSON object")
    return value
