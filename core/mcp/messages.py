"""Decoding one JSON-RPC message, for both transports: ``/mcp`` decodes each POST's body with it
before the SDK does, and ``./engram mcp`` each line read from stdin.

A message is decoded as the API decodes a JSON body (``core.parsers.json_loads``: ``NaN`` and
overflowing numbers refused, the depth bounded without ever reaching a RecursionError). A tool's
arguments sit two levels below the message (its ``params``, then ``arguments``), so the bound
is the API's plus two: arguments nest as deep as an API body. What cannot be decoded is the
JSON-RPC parse error (-32700) with id null, as the SDK answers a body that is not JSON.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from core.errors import ValidationFailed
from core.parsers import MAX_JSON_DEPTH, json_loads

MAX_MESSAGE_DEPTH = MAX_JSON_DEPTH + 2


def decode(raw: bytes | str) -> Any:
    """The decoded message; ``ValidationFailed`` (``invalid_json``) when it is not JSON or is
    nested deeper than ``MAX_MESSAGE_DEPTH``."""
    return json_loads(raw, max_depth=MAX_MESSAGE_DEPTH)


def parse_error(exc: ValidationFailed) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=None,
        error=types.ErrorData(code=types.PARSE_ERROR, message=f"Parse error: {exc.message}"),
    )


def invalid_request(message: Any) -> types.JSONRPCError:
    """The answer to JSON that is not a JSON-RPC 2.0 message (-32600), with its id when it has
    one a JSON-RPC id may be."""
    found = message.get("id") if isinstance(message, dict) else None
    valid = isinstance(found, (str, int)) and not isinstance(found, bool)
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=found if valid else None,
        error=types.ErrorData(
            code=types.INVALID_REQUEST, message="Invalid Request: not a JSON-RPC 2.0 message."
        ),
    )
