"""``/mcp`` in-process (the real view and SDK transport through Django's test client): bad
arguments answer tool errors with the API's codes, the API's throttle and outage answers, and
what the transport answers around the tools."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client as DjangoClient

from tests.conftest import AuthedAgent
from tests.support.mcp import error_code, rpc, tool_call

pytestmark = pytest.mark.django_db

QUERY_TOO_LONG = "x" * 4001


def _rest(agent: AuthedAgent, method: str, path: str, body: Any = None) -> dict[str, Any]:
    response = getattr(agent.client, method)(f"/api/v1{path}", body, format="json")
    assert response.status_code >= 400, (path, response.content)
    error: dict[str, Any] = response.json()["error"]
    return error


@pytest.mark.parametrize(
    ("tool", "arguments", "method", "path"),
    [
        ("memory_search", {"query": "x", "top_k": 0}, "post", "/memory/search"),
        ("memory_search", {"query": "x", "top_k": 101}, "post", "/memory/search"),
        ("memory_search", {"query": "x", "top_k": "5"}, "post", "/memory/search"),
        ("memory_search", {"query": "x", "topk": 5}, "post", "/memory/search"),
        ("memory_search", {"query": "x", "tiers": ["attic"]}, "post", "/memory/search"),
        (
            "memory_write",
            {"tier": "attic", "key": "k", "value": 1, "session_id": "s1"},
            "post",
            "/memory/write",
        ),
        (
            "memory_write",
            {"tier": "working", "key": "k", "value": "x" * 2000, "session_id": "s1"},
            "post",
            "/memory/write",
        ),
        (
            "memory_write",
            {"tier": "working", "key": "bad key!", "value": 1, "session_id": "s1"},
            "post",
            "/memory/write",
        ),
        ("memory_write", {"tier": "short_term", "key": "k", "value": 1}, "post", "/memory/write"),
        (
            "memory_search",
            {"kind": "long_term", "query": "x", "mode": "psychic"},
            "post",
            "/memory/long-term/search",
        ),
        (
            "memory_search",
            {"kind": "long_term", "query": "x", "mode": "graph", "max_hops": 9},
            "post",
            "/memory/long-term/search",
        ),
        ("search_documents", {"query": QUERY_TOO_LONG}, "post", "/rag/search"),
        ("search_documents", {"query": "x", "mode": "psychic"}, "post", "/rag/search"),
        ("discover_skills", {"description": "x", "top_k": 101}, "post", "/skills/discover"),
        ("list_memory_pools", {"page_size": 0}, "get", "/memory/pools?page_size=0"),
        ("list_memory_pools", {"cursor": "garbage"}, "get", "/memory/pools?cursor=garbage"),
        ("rank_agents", {"title": ""}, "post", "/agents/rank"),
    ],
)
def test_bad_arguments_get_tool_errors_with_the_apis_codes(
    agent_client: AuthedAgent,
    settings: Any,
    tool: str,
    arguments: dict[str, Any],
    method: str,
    path: str,
) -> None:
    settings.WORKING_MEMORY_MAX_VALUE_BYTES = 1024
    result = tool_call(agent_client.secret, tool, arguments)
    body = {k: v for k, v in arguments.items() if k != "kind"}  # the tool's choice of job
    expected = _rest(agent_client, method, path, None if method == "get" else body)
    error = result["structuredContent"]["error"]
    assert error["code"] == expected["code"], (error, expected)
    assert error["details"] == expected["details"]
    assert result["content"][0]["text"].startswith(f"Error {expected['code']}: ")


def test_tool_specific_rules_answer_validation_errors(agent_client: AuthedAgent) -> None:
    secret = agent_client.secret
    both = tool_call(secret, "memory_write", {"tier": "long_term", "key": "k", "content": "c"})
    neither = tool_call(secret, "memory_write", {"tier": "long_term"})
    content_to_working = tool_call(
        secret, "memory_write", {"tier": "working", "content": "c", "session_id": "s1"}
    )
    no_value = tool_call(secret, "memory_write", {"tier": "working", "key": "k"})
    two_pages = tool_call(secret, "read_page", {"page_id": 1, "title": "x"})
    for result in (both, neither, content_to_working, no_value, two_pages):
        assert error_code(result) == "validation_error", result
    assert "content" in content_to_working["structuredContent"]["error"]["details"]
    assert error_code(tool_call(secret, "read_shared_memory", {"pool_id": "bad id!"})) == (
        "invalid_pool_id"
    )
    assert error_code(tool_call(secret, "read_page", {"title": "Nowhere"})) == "page_not_found"


def test_the_apis_rate_limits_apply_per_scope(agent_client: AuthedAgent, settings: Any) -> None:
    # An hour's window, so that no window ends in the middle of the test.
    settings.API_THROTTLE_RATES = {"read": "2/hour", "write": "1/hour"}
    secret = agent_client.secret
    written = {"tier": "working", "key": "k", "value": 1, "session_id": "s1"}
    assert not tool_call(secret, "memory_write", written)["isError"]
    throttled = tool_call(secret, "memory_write", written)
    assert error_code(throttled) == "throttled"
    assert 1 <= throttled["structuredContent"]["error"]["details"]["retry_after"] <= 3600
    # Reads have their own budget: a search and a listing pass, then a listing is a 429 (the
    # protocol's own requests answer as the API does) and a search a throttled tool error.
    assert not tool_call(secret, "memory_search", {"query": "k"})["isError"]
    assert rpc(secret, "tools/list", {}).status_code == 200
    listing = rpc(secret, "tools/list", {})
    assert listing.status_code == 429 and int(listing["Retry-After"]) >= 1
    assert json.loads(listing.content)["error"]["code"] == "throttled"
    assert error_code(tool_call(secret, "memory_search", {"query": "k"})) == "throttled"


def test_a_store_outage_is_the_apis_503_code(agent_client: AuthedAgent, settings: Any) -> None:
    settings.REDIS_URL = "unix:///nonexistent/engram-redis.sock"
    result = tool_call(
        agent_client.secret,
        "memory_write",
        {"tier": "working", "key": "k", "value": 1, "session_id": "s1"},
    )
    assert error_code(result) == "memory_unavailable"
    assert result["structuredContent"]["error"]["details"] == {
        "store": "redis",
        "tier": "working",
        "retry_after": 10,
    }
    # The other tiers keep answering.
    assert not tool_call(agent_client.secret, "memory_stats", {})["isError"]


def test_an_unexpected_error_is_a_logged_tool_error_not_a_500(
    agent_client: AuthedAgent, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    def boom(*args: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr("memory.context.mcp.router.memory_stats_answer", boom)
    result = tool_call(agent_client.secret, "memory_stats", {})
    assert error_code(result) == "internal_error"
    assert set(result["structuredContent"]["error"]["details"]) == {"request_id"}
    assert "a bug" not in json.dumps(result)
    assert "MCP tool memory_stats failed" in caplog.text


def test_protocol_errors_are_json_rpc_errors(agent_client: AuthedAgent) -> None:
    secret = agent_client.secret
    unknown = json.loads(rpc(secret, "tools/call", {"name": "nope", "arguments": {}}).content)
    assert unknown["error"]["code"] == -32602 and "nope" in unknown["error"]["message"]
    response = DjangoClient().post(
        "/mcp",
        "{not json",
        content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
    )
    assert response.status_code == 400
    assert json.loads(response.content)["error"]["code"] == -32700


def test_initialize_and_notifications_in_a_stateless_exchange(agent_client: AuthedAgent) -> None:
    secret = agent_client.secret
    init = rpc(
        secret,
        "initialize",
        {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    )
    result = json.loads(init.content)["result"]
    assert result["protocolVersion"] == "2025-03-26"
    assert result["serverInfo"]["name"] == "engram" and "memory_write" in result["instructions"]
    assert "mcp-session-id" not in init  # stateless: any web process answers any request
    notified = DjangoClient().post(
        "/mcp",
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
        HTTP_MCP_PROTOCOL_VERSION="2025-03-26",
    )
    assert notified.status_code == 202


def test_the_body_limit_is_the_apis(agent_client: AuthedAgent, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = rpc(
        agent_client.secret,
        "tools/call",
        {"name": "memory_search", "arguments": {"query": "x" * 2000}},
    )
    assert response.status_code == 413
    assert json.loads(response.content)["error"]["code"] == "request_too_large"


def test_methods_other_than_post_and_get(agent_client: AuthedAgent) -> None:
    client = DjangoClient()
    assert client.delete("/mcp").status_code == 405
    assert client.get("/mcp", HTTP_ACCEPT="text/event-stream")["Allow"] == "POST"
    assert client.head("/mcp").status_code == 200


def test_memory_write_defaults_to_long_term_memory(agent_client: AuthedAgent) -> None:
    secret = agent_client.secret
    text = tool_call(secret, "memory_write", {"content": "Lisbon has the office."})
    keyed = tool_call(secret, "memory_write", {"key": "office", "value": "in Lisbon"})
    assert text["structuredContent"]["tier"] == keyed["structuredContent"]["tier"] == "long_term"
    read = tool_call(secret, "memory_read", {"key": "office"})["structuredContent"]
    assert (read["tier"], read["value"]) == ("long_term", "in Lisbon")
    found = tool_call(secret, "memory_search", {"query": "Lisbon office", "top_k": 5})
    assert len(found["structuredContent"]["results"]) == 2
