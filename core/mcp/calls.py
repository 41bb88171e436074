"""Running a tool: the API's checks in the API's order, then the tool, then its answer.

Scope first (403 ``insufficient_scope``, as ``HasApiKeyScope`` answers), then the rate limit
(429 ``throttled``), then the arguments: their characters and depth as the API's parser checks a
body (``core.parsers.check_json_value``: a NUL or a lone surrogate in any string or key, however
nested, is ``invalid_characters`` with its path; PostgreSQL stores neither), then the tool's
input serializer (``validation_error``, ``unknown_field``, ...), then the tool's one service or
selector call. Whatever the call raises
is answered as the API answers it (``core.errors.error_answer``: domain errors with their codes,
a store or provider outage as 503 ``store_unavailable`` / ``provider_unavailable``), but as an
MCP tool error: a result with ``isError`` whose structured content is the API's error body, so
a model reads the code and can correct itself. An unexpected exception is logged and answered
``internal_error``; it never breaks the transport.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

import mcp_types as types
from django.core.serializers.json import DjangoJSONEncoder
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from rest_framework import exceptions as drf

from core.errors import PermissionDenied, ValidationFailed, error_answer, error_body
from core.logging import current_request_id
from core.mcp.auth import Caller
from core.mcp.registry import Call, Tool, tool_named
from core.parsers import check_json_value

logger = logging.getLogger("engram.mcp")


def call_tool(
    name: str, arguments: Mapping[str, Any] | None, caller: Callable[[Tool], Caller]
) -> types.CallToolResult:
    """Run the tool ``name`` for the caller ``caller(tool)`` names (it may raise, as an
    authentication does). An unknown tool is a protocol error (INVALID_PARAMS), as the MCP
    specification asks; everything else is the tool's answer or a tool error."""
    tool = tool_named(name)
    if tool is None:
        raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}")
    args = dict(arguments or {})
    try:
        who = caller(tool)
        job = tool.job_for(args)
        scope = job.scope if job is not None else tool.scope
        if not who.key.has_scope(scope):
            raise PermissionDenied(
                f"This API key lacks the '{scope}' scope.",
                code="insufficient_scope",
                details={"required_scope": scope, "key_scopes": list(who.key.scopes)},
            )
        if who.throttled_for is not None:
            raise drf.Throttled(who.throttled_for)
        if job is None:
            raise ValidationFailed(
                "Invalid input.",
                details={
                    tool.selector: [f"Choose one of: {', '.join(j.value for j in tool.jobs)}."]
                },
            )
        check_json_value(args, root="(arguments)")
        if tool.selector:
            args.pop(tool.selector, None)
        serializer = job.input(data=args)
        serializer.is_valid(raise_exception=True)
        out = job.run(Call(actor=who.actor, key=who.key, data=dict(serializer.validated_data)))
    except MCPError:
        raise
    except Exception as exc:
        return tool_error(exc, tool=name)
    return tool_result(out, job.summary(out))


def tool_result(out: Mapping[str, Any], summary: str) -> types.CallToolResult:
    """The structured answer, and a text rendering for clients that read only text: the
    summary line, then the same JSON (as the MCP specification recommends)."""
    text = json.dumps(out, cls=DjangoJSONEncoder, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{summary}\n{text}")],
        structured_content=json.loads(text),
        is_error=False,
    )


def error_content(exc: Exception, *, tool: str) -> dict[str, Any]:
    """The API's error body for ``exc`` (``retry_after`` in its details when the API would send
    ``Retry-After``); an unexpected error is logged and answered ``internal_error``."""
    answer = error_answer(exc)
    if answer is None:
        logger.exception("MCP tool %s failed", tool)
        return error_body(
            "internal_error",
            "An unexpected error occurred; it has been logged.",
            {"request_id": current_request_id()},
        )
    body = answer.body
    retry_after = answer.headers.get("Retry-After")
    if retry_after and isinstance(body["error"]["details"], dict):
        body["error"]["details"].setdefault("retry_after", int(retry_after))
    return body


def tool_error(exc: Exception, *, tool: str) -> types.CallToolResult:
    body = error_content(exc, tool=tool)
    text = json.dumps(body, cls=DjangoJSONEncoder, ensure_ascii=False, separators=(",", ":"))
    error = body["error"]
    return types.CallToolResult(
        content=[
            types.TextContent(
                type="text", text=f"Error {error['code']}: {error['message']}\n{text}"
            )
        ],
        structured_content=json.loads(text),
        is_error=True,
    )
