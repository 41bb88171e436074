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
the stream. While serving, fd 0 points at the null device (the protocol is read from a private
duplicate), and so does fd 1 at stderr when no descriptor was passed, as the SDK's own stdio
transport does.

The transport is the SDK's stdio transport with its reading done here: each line is decoded as
``/mcp`` decodes a body (``core.mcp.messages``), so a line that is not JSON, or nests too deep,
is answered with the JSON-RPC parse error (-32700, id null) and JSON that is not a JSON-RPC
message with -32600; the SDK's reader passed both to the server, which answered nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from django.db import close_old_connections
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from core.errors import ValidationFailed
from core.mcp import messages
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
    restore: list[tuple[int, int]] = []
    in_fd = _divert(0, os.open(os.devnull, os.O_RDONLY), restore)
    out_fd = int(fd) if fd.isdigit() else _divert(1, os.dup(2), restore)

    async def run() -> None:
        stdin = anyio.wrap_file(
            io.TextIOWrapper(os.fdopen(in_fd, "rb"), encoding="utf-8", errors="replace")
        )
        stdout = anyio.wrap_file(io.TextIOWrapper(os.fdopen(out_fd, "wb"), encoding="utf-8"))
        async with transport(stdin, stdout) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(run)
    finally:
        for std, private in restore:
            with contextlib.suppress(OSError):
                os.dup2(private, std)


def _divert(std: int, diversion: int, restore: list[tuple[int, int]]) -> int:
    """A private duplicate of ``std`` for the protocol (above the standard descriptors), with
    ``std`` itself pointed at ``diversion`` while serving."""
    private = fcntl.fcntl(std, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(diversion, std)
    os.close(diversion)
    restore.append((std, fcntl.fcntl(private, fcntl.F_DUPFD_CLOEXEC, 3)))
    return private


def read_line(line: str) -> types.JSONRPCMessage | types.JSONRPCError | None:
    """The message a line of stdin holds, the error to answer it with, or None (a blank line)."""
    if not line.strip():
        return None
    try:
        raw = messages.decode(line)
    except ValidationFailed as exc:
        return messages.parse_error(exc)
    try:
        return types.jsonrpc_message_adapter.validate_python(raw, by_name=False)
    except ValidationError:
        return messages.invalid_request(raw)


@contextlib.asynccontextmanager
async def transport(
    stdin: AsyncIterable[str], stdout: anyio.AsyncFile[str]
) -> AsyncIterator[tuple[Any, Any]]:
    """The streams ``Server.run`` reads and writes, over ``stdin`` and ``stdout``: messages
    read go to the server; errors in reading are answered here, through the same writer."""
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    answers = write_stream.clone()

    async def reader() -> None:
        async with read_writer, answers:
            async for line in stdin:
                found = read_line(line)
                if isinstance(found, types.JSONRPCError):
                    await answers.send(SessionMessage(found))
                elif found is not None:
                    await read_writer.send(SessionMessage(found))

    async def writer() -> None:
        async with write_reader:
            async for message in write_reader:
                text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await stdout.write(text + "\n")
                await stdout.flush()

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        group.start_soon(writer)
        yield read_stream, write_stream
