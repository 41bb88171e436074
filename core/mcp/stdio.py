"""``./engram mcp``: the same tools over stdio, for desktop clients that launch a command.

It serves in-process, on the same services and the same database as the web server (the
embedded servers are shared by lease, so it works whether or not ``./engram run`` is running),
rather than relaying to a web server's ``/mcp``: one hop less, nothing else to start or
configure, and nothing that a relay would add (the HTTP endpoint is there for clients that can
reach a server; docs/mcp.md). The key comes from ``ENGRAM_API_KEY`` and is authenticated as the
API authenticates, before serving and again for every tool call (a revoked key stops working at
once; the rate limits apply per call).

Only the protocol may reach stdout: the launcher (``./engram mcp``) points the process's stdout
at stderr before anything starts and passes the real one as a file descriptor
(``ENGRAM_MCP_STDOUT_FD``), so no stray output (a library's print, a child process) can corrupt
the stream.
"""

from __future__ import annotations

import io
import os
from typing import Any

import anyio
from django.db import close_old_connections
from mcp.server.stdio import stdio_server

from core.mcp.auth import Caller, authenticate_key
from core.mcp.registry import Tool
from core.mcp.server import build_server

STDOUT_FD_VARIABLE = "ENGRAM_MCP_STDOUT_FD"


def caller_of(secret: str) -> Any:
    def caller(tool: Tool) -> Caller:
        close_old_connections()  # as a request starts: drop a connection the database closed
        return authenticate_key(secret, tool.scope)

    return caller


def serve(secret: str) -> None:
    """Serve until the client closes stdin. The key was checked by the caller."""
    server = build_server(caller_of(secret))
    fd = os.environ.pop(STDOUT_FD_VARIABLE, "")

    async def run() -> None:
        stdout = None
        if fd.isdigit():
            stream = io.TextIOWrapper(os.fdopen(int(fd), "wb"), encoding="utf-8")
            stdout = anyio.wrap_file(stream)
        async with stdio_server(stdout=stdout) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
