"""The callback types the receiver acts on (lark-oapi's names, schema 2.0).

Routing is a lookup on `header.event_type` after verification. lark-oapi's dispatcher could route
too, but it decrypts, re-checks and unmarshals every callback into typed models a second time;
on the benchmark machine that took 0.2-0.8 ms per callback, as much as verification,
normalization and the database write together, and the typed models would go unused
(normalization reads the JSON). So lark-oapi contributes the
decryption (`AESCipher`) and the header names here, and serves as the reference that the tests
check our verification against.
"""

from __future__ import annotations

from typing import Final

URL_VERIFICATION: Final = "url_verification"
MESSAGE_RECEIVE: Final = "im.message.receive_v1"
MESSAGE_RECALLED: Final = "im.message.recalled_v1"
CARD_ACTION: Final = "card.action.trigger"
REACTION_CREATED: Final = "im.message.reaction.created_v1"
REACTION_DELETED: Final = "im.message.reaction.deleted_v1"
