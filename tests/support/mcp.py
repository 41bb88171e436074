"""Calling the MCP endpoint in tests: JSON-RPC through Django's test client (the real view, the
real SDK transport, in the test's transaction), and the official ``mcp`` client against a live
server over HTTP."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import httpx2
from django.test import Client as DjangoClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

# The MCP tool names of the contract (issue 15).
CONTRACT = {
    "memory_write",
    "memory_read",
    "memory_search",
    "memory_consolidate",
    "memory_stats",
    "create_memory_pool",
    "list_memory_pools",
    "read_shared_memory",
    "write_shared_memory",
    "read_pool_events",
    "delete_memory_pool",
    "query_knowledge_base",
    "search_documents",
    "add_document",
    "process_document",
    "search_knowledge_graph",
    "get_graph_neighbors",
    "discover_skills",
    "get_skill_context",
    "list_skills",
    "propose_skill",
    "record_skill_usage",
    "rank_agents",
    "get_learning_profile",
    "read_page",
    "write_page",
    "page_backlinks",
    "search_pages",
}
# The tools for capabilities added since (issue 37: at most 30 in all).
NEWER = {"conversation", "get_context"}


T = TypeVar("T")
HANDSHAKE_VERSION = "2025-06-18"


def rpc(
    secret: str | None,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    version: str = HANDSHAKE_VERSION,
    client: DjangoClient | None = None,
    **headers: str,
) -> Any:
    """One JSON-RPC request to ``/mcp`` in a stateless handshake-era exchange (a client that
    initialized before)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    extra: dict[str, Any] = {"HTTP_MCP_PROTOCOL_VERSION": version, **headers}
    if secret is not None:
        extra["HTTP_AUTHORIZATION"] = f"Bearer {secret}"
    return (client or DjangoClient()).post(
        "/mcp",
        json.dumps(body),
        content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream",
        **extra,
    )


def tool_call(secret: str, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """The result of ``tools/call`` (``content``, ``structuredContent``, ``isError``)."""
    response = rpc(secret, "tools/call", {"name": name, "arguments": arguments or {}})
    assert response.status_code == 200, response.content
    answer = json.loads(response.content)
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def error_code(result: dict[str, Any]) -> str:
    assert result["isError"], result
    return str(result["structuredContent"]["error"]["code"])


def with_client(
    url: str,
    secret: str | None,
    body: Callable[[Client], Awaitable[T]],
    *,
    mode: str = "auto",
    header: str = "Authorization",
) -> T:
    """Run ``body`` with the official client connected to ``url`` with the key."""

    async def run() -> T:
        headers = {}
        if secret is not None:
            headers[header] = f"Bearer {secret}" if header == "Authorization" else secret
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport, mode=mode) as client:
                return await body(client)

    return anyio.run(run)
