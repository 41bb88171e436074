"""Engram's MCP server on the official SDK's low-level ``Server``: the registry's tools, listed
with their schemas and called through ``core.mcp.calls``.

The SDK owns the protocol (framing, the ``initialize`` handshake of the 2024-11-05 to
2025-11-25 revisions, ``server/discover`` and the per-request envelope of 2026-07-28, the result
shapes of each revision). The tools run Django code, which must not run on an event loop: each
call runs through ``core.mcp.inline.run_sync``, in the thread that serves the HTTP request (whose
database connection and request lifecycle it uses) with the request's loop stopped, or in the
stdio server's one thread for Django.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import mcp_types as types
from django.conf import settings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from core.mcp.auth import CALLER, Caller
from core.mcp.calls import call_tool
from core.mcp.inline import run_sync
from core.mcp.registry import Tool, tools
from core.mcp.schemas import tool_schemas

INSTRUCTIONS = (
    "Engram is a memory and knowledge server for AI agents. Remember with memory_write "
    "(working and short-term memory by session and key, long-term memory as text to search "
    "later) and recall with memory_search or memory_read; share state with other agents in "
    "memory pools; search the knowledge bases (query_knowledge_base returns a context block "
    "with numbered sources), the knowledge graph, the skills and the wiki pages. Errors come "
    "back as tool errors whose structured content is {'error': {'code', 'message', 'details'}}."
)


@functools.cache
def tool_listing() -> list[types.Tool]:
    """The tools as ``tools/list`` answers them (made once per process)."""
    schemas = tool_schemas()
    return [
        types.Tool(
            name=tool.name,
            title=tool.title,
            description=tool.description,
            input_schema=schemas[tool.name][0],
            output_schema=schemas[tool.name][1],
            annotations=types.ToolAnnotations(
                title=tool.title,
                read_only_hint=tool.read_only,
                destructive_hint=tool.destructive if not tool.read_only else None,
                idempotent_hint=tool.idempotent if not tool.read_only else None,
                open_world_hint=False,
            ),
        )
        for tool in tools().values()
    ]


def build_server(caller: Callable[[Tool], Caller]) -> Server[Any]:
    """A server whose tool calls act for ``caller(tool)``: the HTTP request's authenticated
    caller, or the stdio server's key."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if tool_listing.cache_info().currsize:
            return types.ListToolsResult(tools=tool_listing())
        return types.ListToolsResult(tools=await run_sync(tool_listing))

    async def call(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await run_sync(lambda: call_tool(params.name, params.arguments, caller))

    server: Server[Any] = Server(
        "engram",
        version=str(settings.SPECTACULAR_SETTINGS.get("VERSION", "")),
        title="Engram",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call,
        # No tool declares x-mcp-header parameters: nothing for the 2026-07-28 transport to
        # check against the headers, and no tools/list walk per call to find that out.
        get_tool_input_schema=lambda name: None,
    )
    server.middleware = []  # the SDK's OpenTelemetry span per message: no exporter here
    return server


def _request_caller(tool: Tool) -> Caller:
    caller = CALLER.get()
    if caller is None:  # pragma: no cover - the view always sets it
        raise RuntimeError("an MCP tool ran outside an authenticated request")
    return caller


@functools.cache
def http_server() -> Server[Any]:
    """The server behind ``/mcp`` (one per process; stateless, so shared by every request)."""
    return build_server(_request_caller)
