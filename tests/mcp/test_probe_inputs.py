"""``/mcp`` against the probe's inputs (issue 35, item 4): a tool call counts in its own tool's
budget whatever the headers say; a NUL or a lone surrogate anywhere in a tool's arguments is the
API's ``invalid_characters``, never ``internal_error`` or a row attempted in PostgreSQL; and a
body nested 1,100 levels deep is 401 without a key (authentication first) and the JSON-RPC parse
error with one, never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client as DjangoClient

from core.parsers import MAX_JSON_DEPTH
from memory.models import KnowledgeItem, MemoryEntry, MemoryPool, WorkingMemorySnapshot
from memory.working import services as working_services
from memory.working import store as wr
from memory.working.selectors import read_session
from tests.conftest import AuthedAgent
from tests.support.mcp import error_code, rpc, tool_call

pytestmark = pytest.mark.django_db

WRITE = {"tier": "working", "key": "k", "value": 1, "session_id": "s1"}


def _post(secret: str | None, body: str, **headers: str) -> Any:
    extra: dict[str, Any] = {"HTTP_MCP_PROTOCOL_VERSION": "2025-06-18", **headers}
    if secret is not None:
        extra["HTTP_AUTHORIZATION"] = f"Bearer {secret}"
    return DjangoClient().post(
        "/mcp",
        body,
        content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream",
        **extra,
    )


def _keys(authed: AuthedAgent) -> int:
    """How many entries the agent's working memory session ``s1`` holds."""
    namespace = wr.session_namespace(authed.agent.account_id, authed.agent.pk, "s1")
    return len(read_session(namespace))


def _call(name: str, arguments: dict[str, Any], id_: int = 1) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


# --- budgets -------------------------------------------------------------------------------


def test_a_write_with_a_read_methods_headers_counts_as_a_write(
    agent_client: AuthedAgent, settings: Any
) -> None:
    settings.API_THROTTLE_RATES = {"read": "1/hour", "write": "1/hour"}
    secret = agent_client.secret
    # The probe's request: memory_write, with headers naming tools/list.
    disguised = _post(
        secret,
        json.dumps(_call("memory_write", WRITE)),
        HTTP_MCP_METHOD="tools/list",
        HTTP_MCP_NAME="memory_search",
    )
    assert disguised.status_code == 200
    assert not json.loads(disguised.content)["result"]["isError"]
    # The read budget is untouched: a search passes. The write budget is spent.
    assert not tool_call(secret, "memory_search", {"query": "k"})["isError"]
    assert error_code(tool_call(secret, "memory_write", WRITE)) == "throttled"


def test_a_read_with_a_write_tools_headers_counts_as_a_read(
    agent_client: AuthedAgent, settings: Any
) -> None:
    settings.API_THROTTLE_RATES = {"read": "1/hour", "write": "1/hour"}
    secret = agent_client.secret
    disguised = _post(
        secret,
        json.dumps(_call("memory_search", {"query": "k"})),
        HTTP_MCP_METHOD="tools/call",
        HTTP_MCP_NAME="memory_write",
    )
    assert not json.loads(disguised.content)["result"]["isError"]
    assert not tool_call(secret, "memory_write", WRITE)["isError"]
    assert error_code(tool_call(secret, "memory_search", {"query": "k"})) == "throttled"


def test_a_batch_is_refused_and_counts_as_its_widest_call(
    agent_client: AuthedAgent, settings: Any
) -> None:
    settings.API_THROTTLE_RATES = {"read": "5/hour", "write": "1/hour"}
    secret = agent_client.secret
    batch = [_call("memory_search", {"query": "k"}, 1), _call("memory_write", WRITE, 2)]
    refused = _post(secret, json.dumps(batch))
    # The transport takes one message per POST (JSON-RPC batches left the protocol in
    # 2025-06-18): nothing runs.
    assert refused.status_code == 400
    assert "error" in json.loads(refused.content)
    assert _keys(agent_client) == 0
    # It counted against the write budget, as its write would have.
    assert error_code(tool_call(secret, "memory_write", WRITE)) == "throttled"


# --- characters ----------------------------------------------------------------------------

NUL_CASES = [
    ("memory_write", {"tier": "long_term", "content": "peanut\x00allergy"}, "content"),
    (
        "memory_write",
        {"tier": "long_term", "content": "ok", "tags": ["fine", "ba\x00d"]},
        "tags[1]",
    ),
    (
        "memory_write",
        {"tier": "working", "key": "k", "value": "a\x00", "session_id": "s1"},
        "value",
    ),
    (
        "memory_write",
        {"tier": "working", "key": "k", "value": {"deep": [{"x\x00": 1}]}, "session_id": "s1"},
        "value.deep[0]",
    ),
    (
        "memory_write",
        {
            "kind": "knowledge_item",
            "base": "facts",
            "key": "k",
            "content": "c",
            "metadata": {"a": {"b": "\x00"}},
        },
        "metadata.a.b",
    ),
    ("write_shared_memory", {"pool_id": "p1", "key": "a", "value": ["\x00"]}, "value[0]"),
    ("memory_search", {"query": "x\x00y"}, "query"),
]


@pytest.mark.parametrize(("tool", "arguments", "path"), NUL_CASES)
def test_nul_and_lone_surrogates_are_invalid_characters(
    agent_client: AuthedAgent, tool: str, arguments: dict[str, Any], path: str
) -> None:
    before = (
        MemoryEntry.objects.count(),
        KnowledgeItem.objects.count(),
        MemoryPool.objects.count(),
    )
    result = tool_call(agent_client.secret, tool, arguments)
    assert error_code(result) == "invalid_characters", result
    assert result["structuredContent"]["error"]["details"] == {"path": path}
    after = (MemoryEntry.objects.count(), KnowledgeItem.objects.count(), MemoryPool.objects.count())
    assert after == before
    assert _keys(agent_client) == 0


def test_a_lone_surrogate_is_refused_by_the_transport(agent_client: AuthedAgent) -> None:
    """The SDK's JSON parser refuses an escaped lone surrogate: the parse error, no tool runs."""
    body = json.dumps(_call("memory_write", {"tier": "long_term", "content": "x\ud800"}))
    response = _post(agent_client.secret, body)
    assert response.status_code == 400
    assert json.loads(response.content)["error"]["code"] == -32700
    assert not MemoryEntry.objects.exists()


def test_the_code_is_the_apis(agent_client: AuthedAgent) -> None:
    body = {"tier": "long_term", "content": "ok", "metadata": {"a": "\x00"}}
    rest = agent_client.client.post("/api/v1/memory/write", body, format="json")
    assert rest.status_code == 400
    tool = tool_call(agent_client.secret, "memory_write", body)
    assert tool["structuredContent"] == rest.json()


def test_working_memory_refuses_them_in_every_door(agent_client: AuthedAgent) -> None:
    from core.actors import actor_for_agent
    from core.parsers import InvalidCharacters

    actor = actor_for_agent(agent_client.agent, agent_client.key)
    with pytest.raises(InvalidCharacters):
        working_services.working_store(actor=actor, session_id="s1", key="k", value="a\x00")
    with pytest.raises(InvalidCharacters):
        working_services.working_scratch_pad_append(actor=actor, session_id="s1", content="\x00")
    with pytest.raises(InvalidCharacters):
        working_services.working_conversation_append(
            actor=actor, session_id="s1", message={"content": "\ud800"}
        )
    assert _keys(agent_client) == 0


def test_persisting_a_session_holding_a_nul_is_400_not_500(agent_client: AuthedAgent) -> None:
    """A value that reached Redis before working memory refused NULs (written here straight to
    Redis, as an older version did) makes persisting 400 ``invalid_characters``, naming it."""
    client = agent_client.client
    assert (
        client.put(
            "/api/v1/memory/working/s1/good", {"value": "fine", "ttl": 60}, format="json"
        ).status_code
        == 200
    )
    namespace = wr.session_namespace(agent_client.agent.account_id, agent_client.agent.pk, "s1")
    payload = json.dumps({"note": "a\x00b"}).encode()
    wr.run_script(wr.STORE, namespace, wr.entry_name(wr.VALUE, "legacy"), 60_000, payload)
    answer = client.post("/api/v1/memory/working/s1/_persist", format="json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["code"] == "invalid_characters"
    assert answer.json()["error"]["details"] == {"path": "entries[1].value.note"}
    assert not WorkingMemorySnapshot.objects.exists()
    # Removing the value makes the session persist.
    assert client.delete("/api/v1/memory/working/s1/legacy").status_code == 204
    assert client.post("/api/v1/memory/working/s1/_persist", format="json").status_code in (
        200,
        201,
    )


# --- depth ---------------------------------------------------------------------------------


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_deep_json_without_a_key_is_401_before_anything(agent_client: AuthedAgent) -> None:
    response = _post(None, _nested(1100))
    assert response.status_code == 401
    assert json.loads(response.content)["error"]["code"] == "not_authenticated"
    wrong = _post("eng_aaaaaaaaaaaa_nope", _nested(100_000))
    assert wrong.status_code == 401


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 4, 1100, 100_000])
def test_deep_json_with_a_key_is_the_json_rpc_parse_error(
    agent_client: AuthedAgent, depth: int
) -> None:
    response = _post(agent_client.secret, _nested(depth))
    assert response.status_code == 400
    answer = json.loads(response.content)
    assert answer["id"] is None and answer["error"]["code"] == -32700
    assert str(MAX_JSON_DEPTH + 2) in answer["error"]["message"]


def test_arguments_may_nest_as_deep_as_an_api_body(agent_client: AuthedAgent) -> None:
    def nested(depth: int) -> Any:
        value: Any = "leaf"
        for _ in range(depth - 1):
            value = {"a": value}
        return value

    deepest = {
        "tier": "working",
        "key": "k",
        "session_id": "s1",
        "value": nested(MAX_JSON_DEPTH - 1),
    }
    rest = agent_client.client.post("/api/v1/memory/write", deepest, format="json")
    assert rest.status_code == 200, rest.json()
    tool = tool_call(agent_client.secret, "memory_write", deepest)
    assert not tool["isError"], tool
    deeper = {**deepest, "value": nested(MAX_JSON_DEPTH)}
    assert agent_client.client.post("/api/v1/memory/write", deeper, format="json").status_code == (
        400
    )
    response = rpc(agent_client.secret, "tools/call", {"name": "memory_write", "arguments": deeper})
    assert response.status_code == 400
    assert json.loads(response.content)["error"]["code"] == -32700
