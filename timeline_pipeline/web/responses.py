"""The one JSON encoding of every answer `serve` gives, receiver and API alike.

Starlette's JSONResponse encodes with `ensure_ascii=False` and so raises (a 500 with a
traceback) on a string holding a lone surrogate, which a client can send as `"\\ud800"` in any
JSON body and which the receiver echoes back in a url_verification challenge. Escaping
everything outside ASCII always encodes, and a JSON parser reads the same string back.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi.responses import JSONResponse


def encode_json(content: Any) -> bytes:
    return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode(
        "ascii"
    )


class SafeJSONResponse(JSONResponse):
    """The app's default response class, and what its own routes and handlers answer with."""

    def render(self, content: Any) -> bytes:
        return encode_json(content)
