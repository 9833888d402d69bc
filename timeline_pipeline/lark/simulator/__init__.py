"""The local Lark: a loopback OpenAPI stand-in and an event pusher for tests and the demo.

Nothing here ever talks to the real Lark; the product's real client and receiver talk to this.
"""

from timeline_pipeline.lark.simulator.events import (
    EventIdentity,
    card_action_event,
    message_recalled_event,
    message_receive_event,
    url_verification_event,
)
from timeline_pipeline.lark.simulator.faults import SimulatorFaults
from timeline_pipeline.lark.simulator.fixtures import make_chat_messages, user_lines, write_jsonl
from timeline_pipeline.lark.simulator.pusher import EventPusher, PushReport
from timeline_pipeline.lark.simulator.runner import (
    LoopbackUvicorn,
    SimulatorServer,
    is_loopback_host,
)
from timeline_pipeline.lark.simulator.signing import SignedRequest, sign_payload
from timeline_pipeline.lark.simulator.store import ChatStore

__all__ = [
    "ChatStore",
    "EventIdentity",
    "EventPusher",
    "LoopbackUvicorn",
    "PushReport",
    "SignedRequest",
    "SimulatorFaults",
    "SimulatorServer",
    "card_action_event",
    "is_loopback_host",
    "make_chat_messages",
    "message_recalled_event",
    "message_receive_event",
    "sign_payload",
    "url_verification_event",
    "user_lines",
    "write_jsonl",
]
