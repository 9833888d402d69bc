"""The product's receiver, live on loopback against the local Lark, for the demo's chat steps.

The pin and review-card steps both need the same thing: the local Lark serving the demo's chats,
the HTTP app pointed at it with the card worker left to the step (so the step decides when cards
are posted), and signed events sent the way Lark sends them (docs/pins.md, docs/changing.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple

from sqlalchemy import Engine

from timeline_pipeline.http.app import create_app
from timeline_pipeline.lark.simulator.events import EventIdentity
from timeline_pipeline.lark.simulator.pusher import Answer, send_signed
from timeline_pipeline.lark.simulator.runner import LoopbackUvicorn, SimulatorServer
from timeline_pipeline.lark.simulator.store import ChatStore
from timeline_pipeline.review_cards.runtime import ReviewCards
from timeline_pipeline.settings import RuntimeEnvironment, Settings


class ChatStep(NamedTuple):
    """What each of the demo's steps in the chat (review, pin, report) works with: the
    database, the settings, the local Lark's chats, the workspace, and where it says what it
    did."""

    engine: Engine
    settings: Settings
    store: ChatStore
    workspace_id: str
    progress: Callable[[str], None]


@contextmanager
def local_lark(
    store: ChatStore, runtime: RuntimeEnvironment
) -> Iterator[tuple[SimulatorServer, RuntimeEnvironment]]:
    """The local Lark serving the demo's chats to the runtime's app, and the runtime pointed at
    it, while it runs."""
    with SimulatorServer(
        store=store,
        app_id=runtime.lark_app_id,
        app_secret=runtime.lark_app_secret.get_secret_value(),
    ) as lark:
        yield lark, runtime.model_copy(update={"lark_base_url": lark.base_url})


@contextmanager
def live_receiver(
    engine: Engine, settings: Settings, store: ChatStore
) -> Iterator[tuple[ReviewCards, str]]:
    """The review-card resource and the receiver's event URL, while both servers run."""
    with local_lark(store, settings.runtime) as (_lark, runtime):
        app = create_app(Settings(settings.timeline, runtime), engine, card_worker=False)
        review = app.state.resources.review_cards
        assert review is not None
        with LoopbackUvicorn(app) as receiver:
            yield review, f"{receiver.base_url}/lark/events"


def identity(settings: Settings) -> EventIdentity:
    runtime = settings.runtime
    return EventIdentity(
        app_id=runtime.lark_app_id,
        verification_token=runtime.lark_verification_token.get_secret_value(),
    )


def send(settings: Settings, events_url: str, payload: Mapping[str, Any]) -> Answer:
    return send_signed(
        events_url, payload, encrypt_key=settings.runtime.lark_encrypt_key.get_secret_value()
    )
