"""``/mcp``: MCP over streamable HTTP, served by the API's own web process (WSGI).

The SDK's streamable-HTTP transport is an ASGI application. Engram keeps its WSGI server (the
API's latency is measured there: docs/mcp.md, "Serving") and runs the transport per request:
the view authenticates, then hands the request to the SDK's ``StreamableHTTPSessionManager`` in
stateless JSON mode, on an event loop in this thread that stops while the tools' Django code runs
(``core.mcp.inline``).
Stateless mode needs no session shared between requests, so any web process may answer any
request, however many there are.

- ``POST``: authenticated as the API authenticates (401 with ``WWW-Authenticate`` before the body
  is even decoded), then the body is decoded as the API decodes JSON (``core.parsers.json_loads``:
  its depth bounded, so no nesting reaches a RecursionError) and counted by the API's throttle
  in the budget of what it asks for (``registry.route_of_message``: the tool a ``tools/call``
  names, from the body, never from a header), then served by the SDK. A body that is not JSON,
  or nests deeper than an API body may (plus the envelope), is the JSON-RPC parse error
  (-32700, id null, HTTP 400), as the SDK answers one that is not JSON.
- ``GET`` from a browser: a short page saying what this is. ``GET`` asking for an event stream
  (a client opening the optional server-to-client stream) is 405: every answer comes back on
  its request, and stateless servers offer no such stream.
"""

from __future__ import annotations

from typing import Any

import anyio
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.html import escape
from django.views.decorators.csrf import csrf_exempt
from mcp.server._streamable_http_modern import handle_modern_request
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from rest_framework import exceptions as drf
from starlette.types import Message

from core.errors import ValidationFailed, error_answer
from core.mcp import inline, messages
from core.mcp.auth import CALLER, authenticate
from core.mcp.registry import Route, Scope, route_of_message, tools
from core.mcp.server import http_server

Headers = list[tuple[bytes, bytes]]


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    if request.method in ("GET", "HEAD"):
        if "text/event-stream" in request.headers.get("Accept", ""):
            return HttpResponse(status=405, headers={"Allow": "POST"})
        return HttpResponse(_note(request), content_type="text/html; charset=utf-8")
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    try:
        body = _Body(request.body)  # over DATA_UPLOAD_MAX_MEMORY_SIZE: 413 request_too_large
        # The key first; the body is decoded only to count the request in its budget, once
        # the key is known (core.mcp.auth).
        caller = authenticate(request, body.scope)
        route = body.route()
        if caller.throttled_for is not None and route.tool is None:
            # A tool call answers a throttled tool error; the rest of the protocol, as the API.
            raise drf.Throttled(caller.throttled_for)
        if body.error is not None:
            return parse_error(body.error)
    except Exception as exc:
        answer = error_answer(exc)
        if answer is None:
            raise
        return JsonResponse(answer.body, status=answer.status, headers=answer.headers)
    token = CALLER.set(caller)
    try:
        scope = _scope(request)
        status, headers, content = inline.run(lambda: _serve(scope, body.raw))
    finally:
        CALLER.reset(token)
    response = HttpResponse(content, status=status)
    for name, value in headers:
        response[name.decode("latin-1")] = value.decode("latin-1")
    return response


class _Body:
    """The request's JSON-RPC body, decoded once, when first needed."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.error: ValidationFailed | None = None
        self._route: Route | None = None

    def route(self) -> Route:
        if self._route is None:
            try:
                message = messages.decode(self.raw)
            except ValidationFailed as exc:
                self.error, self._route = exc, Route(None, None)
            else:
                self._route = route_of_message(message)
        return self._route

    def scope(self) -> Scope:
        return self.route().scope


def parse_error(exc: ValidationFailed) -> HttpResponse:
    """The JSON-RPC parse error the SDK answers for a body that is not JSON (id null)."""
    return HttpResponse(
        messages.parse_error(exc).model_dump_json(by_alias=True, exclude_unset=True),
        status=400,
        content_type="application/json",
    )


def _scope(request: HttpRequest) -> dict[str, Any]:
    """The ASGI scope of a WSGI request, as the SDK's transport reads it."""
    server_port = request.META.get("SERVER_PORT") or "80"
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "root_path": "",
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in request.headers.items()
        ],
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
        "server": (request.META.get("SERVER_NAME", ""), int(server_port)),
    }


async def _serve(scope: dict[str, Any], body: bytes) -> tuple[int, Headers, bytes]:
    """One request through the SDK's transport, stateless and answering JSON.

    A request of the stateless revision (2026-07-28, what the official client sends) goes
    straight to the SDK's handler of one such POST, as its session manager would route it: no
    manager, task group or lifespan to set up for it (the server's lifespan is the SDK's
    default, an empty state). A handshake-era request goes through a stateless manager, which
    runs a transport and a dispatcher for it."""
    delivered = False
    status, headers, chunks = 500, [], []

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()  # the client stays connected until the answer is sent
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status, headers = int(message["status"]), list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    version = _protocol_version(scope)
    if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
        await handle_modern_request(http_server(), None, True, {}, scope, receive, send)
        return status, headers, b"".join(chunks)
    manager = StreamableHTTPSessionManager(
        app=http_server(),
        stateless=True,
        json_response=True,
        max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
    )
    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return status, headers, b"".join(chunks)


def _protocol_version(scope: dict[str, Any]) -> str | None:
    return next(
        (v.decode("latin-1") for k, v in scope["headers"] if k == b"mcp-protocol-version"), None
    )


def _note(request: HttpRequest) -> str:
    url = escape(request.build_absolute_uri())
    count = len(tools())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Engram MCP endpoint</title></head>
<body style="font-family: sans-serif; max-width: 42em; margin: 2em auto; line-height: 1.5">
<h1>Engram MCP endpoint</h1>
<p>This URL speaks the <a href="https://modelcontextprotocol.io">Model Context Protocol</a>
over streamable HTTP for AI agents: {count} tools for memory, shared pools, knowledge bases,
the knowledge graph, skills and pages. It is not meant for a browser.</p>
<p>Point an MCP client at <code>{url}</code> with an Engram API key in the
<code>Authorization: Bearer eng_...</code> header (or <code>X-API-Key</code>). Desktop clients
that launch a command can run <code>ENGRAM_API_KEY=eng_... ./engram mcp</code> instead.</p>
<p>Configuration for Claude Desktop, Cursor and the Python SDK: <code>docs/mcp.md</code>.
The REST API: <a href="/api/docs/">/api/docs/</a>.</p>
</body></html>
"""
