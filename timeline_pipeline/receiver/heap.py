"""The receiver's heap after startup: frozen, so garbage collection stops pausing the server.

Importing the receiver (lark-oapi, SQLAlchemy, FastAPI, pydantic) leaves about half a million
objects that live as long as the process. CPython's full collection traverses every object of
the oldest generation, and under load it runs each time the objects promoted there since the
last one (request state that was alive at a younger collection) reach a quarter of that
generation: every few seconds at a few hundred events/s, for 300-400 ms on two cores. For that
long the event loop and the evidence writer both stand still, which was the ack latency's p99
and max (see bench/ingest/NOTES.md). `gc.freeze` moves the startup objects to the permanent
generation, which no collection visits; collections still run, over what requests create.
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> int:
    """Collect what startup left as garbage, then freeze the rest; returns the frozen count.

    Call once, after the application is built and before it serves.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
