"""The official ``mcp`` client against a live server over HTTP (pytest-django's live server:
Django's own threaded WSGI server, serving ``/mcp`` as gunicorn does), on committed data."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from core import services
from core.actors import actor_for_account
from core.mcp.registry import tools
from memory.models import MemoryEntry
from tests.factories import AgentFactory
from tests.support.mcp import CONTRACT, NEWER, with_client
from tests.support.world import Side, build_side

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ALL_TOOLS = CONTRACT | NEWER


def _key(agent: Any, scopes: tuple[str, ...] = ("read", "write")) -> str:
    _, secret = services.api_key_create(
        actor=actor_for_account(agent.account_id), agent=agent, scopes=list(scopes)
    )
    return secret


@pytest.fixture
def url(live_server: Any) -> str:
    return f"{live_server.url}/mcp"


@pytest.fixture
def side(django_capture_on_commit_callbacks: Any) -> Side:
    return build_side("OWNQX", django_capture_on_commit_callbacks)


def test_the_tools_are_listed_with_input_schemas_that_state_their_bounds(url: str) -> None:
    secret = _key(AgentFactory.create())

    async def listing(client: Client) -> Any:
        return (await client.list_tools()).tools, client.protocol_version

    listed, version = with_client(url, secret, listing)
    assert version in MODERN_PROTOCOL_VERSIONS
    by_name = {tool.name: tool for tool in listed}
    assert set(by_name) == ALL_TOOLS == set(tools())
    for tool in listed:
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False, tool.name
        assert "$ref" not in str(schema) and "$ref" not in str(tool.output_schema), tool.name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert tool.description and len(tool.description) > 60, tool.name
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint == tools()[tool.name].read_only
        for parameter, described in schema["properties"].items():
            assert described.get("description"), (tool.name, parameter)
    search = by_name["memory_search"].input_schema["properties"]
    assert search["top_k"]["minimum"] == 1 and search["top_k"]["maximum"] == 100
    assert search["tiers"]["items"]["enum"] == ["working", "short_term", "long_term", "shared"]
    write = by_name["memory_write"].input_schema
    assert write["properties"]["tier"]["default"] == "long_term"
    memory_mode = write["oneOf"][0]  # kind memory: key + value, or content
    assert [mode["required"] for mode in memory_mode["oneOf"]] == [["key", "value"], ["content"]]
    assert write["properties"]["tier"]["enum"] == ["working", "short_term", "long_term"]
    assert {"key", "content", "value", "session_id", "context", "tags"} <= set(write["properties"])
    neighbours = by_name["get_graph_neighbors"].input_schema["properties"]
    assert neighbours["direction"]["enum"] == ["out", "in", "both"]
    assert neighbours["hops"]["maximum"] == 5
    pool = by_name["write_shared_memory"].input_schema["properties"]
    assert pool["pool_id"]["pattern"].startswith("^") and "expected_version" in pool
    assert by_name["add_document"].input_schema["required"] == ["knowledge_base_id"]


@pytest.mark.real_embeddings  # similar memories and summaries are found by the model's cosine
def test_every_tool_answers_on_its_happy_path(url: str, side: Side) -> None:
    """Each call's structured content is checked by the client against the tool's output
    schema (the official client raises when it does not conform)."""
    secret = _key(side.agent)
    session = side.session_id
    node, other, skill, target = side.graph_node, side.graph_other_node, side.skill, side.page
    assert node and other and skill and target
    called: list[str] = []
    entries: list[int] = []

    async def walk(client: Client) -> None:
        async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(name, arguments)
            assert not result.is_error, (name, result.content)
            assert result.structured_content is not None
            assert result.content and result.content[0].type == "text"
            called.append(name)
            return result.structured_content

        await call(
            "memory_write",
            {"tier": "working", "session_id": session, "key": "plan", "value": {"step": 1}},
        )
        written = await call(
            "memory_write",
            {"tier": "long_term", "content": "The release train leaves on Fridays.", "tags": ["x"]},
        )
        entries.append(written["entry_id"])
        read = await call("memory_read", {"key": "plan", "session_id": session})
        assert (read["tier"], read["value"]) == ("working", {"step": 1})
        found = await call("memory_search", {"query": "release train Fridays", "top_k": 5})
        assert found["results"][0]["content"] == "The release train leaves on Fridays."
        graph = await call(
            "memory_search",
            {"kind": "long_term", "query": "When does the release train leave?", "mode": "graph"},
        )
        assert graph["results"][0]["retrieval"]["late_score"] is not None
        assert (await call("memory_stats", {"session_id": session}))["working"]["keys"] >= 1
        assert (await call("memory_consolidate", {"session_id": session, "dry_run": True}))[
            "dry_run"
        ]

        await call("create_memory_pool", {"pool_id": "trading_ops", "name": "Trading"})
        await call(
            "write_shared_memory",
            {
                "pool_id": "trading_ops",
                "key": "agent_bulletin.market_regime",
                "value": {"regime": "risk_off", "confidence": 0.82},
            },
        )
        value = await call(
            "read_shared_memory",
            {"pool_id": "trading_ops", "key": "agent_bulletin.market_regime"},
        )
        assert value["value"] == {"regime": "risk_off", "confidence": 0.82}
        events = await call("read_pool_events", {"pool_id": "trading_ops"})
        assert [e["path"] for e in events["results"]] == ["agent_bulletin.market_regime"]
        assert events["next_cursor"]
        pools = await call("list_memory_pools", {"page_size": 1})
        assert len(pools["results"]) == 1 and pools["next_cursor"]
        more = await call("list_memory_pools", {"cursor": pools["next_cursor"]})
        assert more["results"]
        assert (await call("delete_memory_pool", {"pool_id": "trading_ops"}))["deleted"]

        hits = await call("search_documents", {"query": "tomatoes basil", "top_k": 3})
        assert hits["results"][0]["document_id"] == side.document.pk
        answer = await call("query_knowledge_base", {"query": "tomatoes", "token_budget": 200})
        assert answer["sources"] and "[1]" in answer["context"]
        agentic = await call(
            "query_knowledge_base",
            {"kind": "agentic", "query": "tomatoes and basil", "max_rounds": 2},
        )
        assert agentic["sources"][0]["document_id"] == side.document.pk
        assert agentic["rounds"] and "[1]" in agentic["answer"]
        added = await call(
            "add_document",
            {"knowledge_base_id": side.kb.pk, "title": "Peppers", "text": "Peppers like sun."},
        )
        await call("process_document", {"document_id": added["id"], "force": True})

        nodes = await call("search_knowledge_graph", {"query": "harbour on the coast"})
        assert nodes["results"]
        graph_context = await call(
            "query_knowledge_base",
            {"kind": "graph", "query": "harbour on the coast", "token_budget": 300},
        )
        assert graph_context["tokens"] <= 300 and "sections" in graph_context
        near = await call(
            "get_graph_neighbors", {"node_id": node.pk, "hops": 2, "direction": "out"}
        )
        assert near["results"][0]["node"]["id"] == other.pk

        skills = await call("discover_skills", {"description": "deploy a service to the cluster"})
        assert skills["results"][0]["skill"]["id"] == skill.pk
        context = await call("get_skill_context", {"skill_id": skill.pk})
        assert context["skill"]["id"] == skill.pk and context["version"]
        assert (await call("list_skills", {"status": "active"}))["results"]
        proposal = await call(
            "propose_skill", {"name": "Roll back a release", "description": "Undo a deploy."}
        )
        assert proposal["status"] == "draft"
        usage = await call(
            "record_skill_usage",
            {"skill_id": skill.pk, "task_type": "deployment", "success": True},
        )
        assert usage["records"][0]["agent_id"] == side.agent.pk
        ranked = await call("rank_agents", {"title": "deploy the service"})
        assert ranked["results"][0]["agent_id"] == side.agent.pk
        profile = await call("get_learning_profile", {})
        assert profile["agent_id"] == side.agent.pk and profile["task_types"]

        page = await call(
            "write_page", {"title": "Tide Tables", "content": "See [[Harbour Notes]]."}
        )
        assert page["title"] == "Tide Tables"
        again = await call("write_page", {"title": "tide tables", "content": "[[Harbour Notes]]!"})
        assert again["id"] == page["id"] and again["content"] == "[[Harbour Notes]]!"
        read_page = await call("read_page", {"title": "harbour notes"})
        assert read_page["id"] == target.pk
        backlinks = await call("page_backlinks", {"page_id": target.pk})
        assert {"Tide Tables", side.page_title} <= {b["title"] for b in backlinks["results"]}
        pages = await call("search_pages", {"query": "Harbour Notes"})
        assert target.pk in [hit["page"]["id"] for hit in pages["results"]]

        memory = await call(
            "memory_write",
            {
                "kind": "structured",
                "text": "The harbour crane schedule changes with the spring tides every year.",
                "related": [{"kind": "page", "id": target.pk}],
                "run_id": "live-run",
            },
        )
        assert memory["written"], memory
        close = await call(
            "memory_search", {"kind": "similar", "query": "when does the crane schedule change?"}
        )
        assert close["results"][0]["id"] == memory["memory"]["id"]
        about = await call(
            "memory_search", {"kind": "related", "related": [{"kind": "page", "id": target.pk}]}
        )
        assert [hit["id"] for hit in about["results"]] == [memory["memory"]["id"]]
        summary = await call("memory_search", {"kind": "summary", "query": "crane schedule"})
        assert "[1]" in summary["summary"]

        put = await call(
            "memory_write",
            {
                "kind": "knowledge_item",
                "base": "harbour",
                "key": "crane.capacity",
                "content": "The harbour crane lifts forty tonnes.",
                "metadata": {"unit": "t"},
                "sources": [{"source_type": "page", "source_id": str(target.pk)}],
            },
        )
        assert put["version"] == 1 and put["key"] == "crane.capacity"
        await call(
            "memory_write",
            {"kind": "knowledge_item", "base": "harbour", "key": "crane", "content": "A crane."},
        )
        got = await call(
            "memory_read", {"kind": "knowledge_item", "base": "harbour", "key": "crane.capacity"}
        )
        assert got["metadata"] == {"unit": "t"}
        known = await call(
            "memory_search", {"kind": "knowledge_item", "query": "how much does the crane lift"}
        )
        assert known["results"][0]["item"]["key"] == "crane.capacity"
        related = await call(
            "memory_write",
            {
                "kind": "knowledge_relationship",
                "source": {"base": "harbour", "key": "crane.capacity"},
                "target": {"base": "harbour", "key": "crane"},
                "relationship_type": "describes",
                "strength": 0.5,
            },
        )
        assert related["strength"] == 0.5

        assert side.conversation is not None
        chat = side.conversation.pk
        added = await call(
            "conversation",
            {
                "action": "add_messages",
                "conversation_id": chat,
                "messages": [
                    {"role": "user", "name": "Ana", "content": "The ferry leaves at nine."},
                    {"role": "assistant", "content": "Noted.", "metadata": {"dia_id": "D9:1"}},
                ],
            },
        )
        assert [m["turn_number"] for m in added["results"]] == [3, 4]
        recent = await call(
            "conversation", {"action": "recent", "conversation_id": chat, "last": 2}
        )
        assert recent["results"][1]["metadata"] == {"dia_id": "D9:1"}
        summary = await call("conversation", {"action": "summarize", "conversation_id": chat})
        assert (summary["start_turn"], summary["end_turn"]) == (1, 4)
        context = await call(
            "get_context",
            {"query": "When does the ferry leave?", "conversation_id": chat, "token_budget": 300},
        )
        assert context["tokens"] <= 300 and "The ferry leaves at nine." in context["context"]

        planned = await call("memory_consolidate", {"action": "maintenance", "dry_run": True})
        assert planned["job_id"] and planned["status_url"], planned
        # Celery is eager here: the job ran once the request's transaction committed.
        followed = await call(
            "memory_consolidate", {"action": "maintenance_status", "job_id": planned["job_id"]}
        )
        assert followed["status"] == "completed", followed
        assert followed["dry_run"] and followed["report_id"] is not None

    with_client(url, secret, walk)
    assert set(called) == ALL_TOOLS
    assert MemoryEntry.objects.get(pk=entries[0]).tags == ["x"]


def test_handshake_era_clients_initialize_and_call_tools(url: str) -> None:
    """Clients of the 2024-11-05 to 2025-11-25 revisions open with ``initialize``."""
    secret = _key(AgentFactory.create())

    async def legacy(client: Client) -> Any:
        listed = await client.list_tools()
        written = await client.call_tool(
            "memory_write", {"tier": "long_term", "content": "Handshakes still work."}
        )
        found = await client.call_tool("memory_search", {"query": "handshakes", "top_k": 5})
        return client.protocol_version, len(listed.tools), written, found

    version, count, written, found = with_client(url, secret, legacy, mode="legacy")
    assert version in HANDSHAKE_PROTOCOL_VERSIONS
    assert count == len(ALL_TOOLS)
    assert not written.is_error and not found.is_error
    assert found.structured_content["results"][0]["content"] == "Handshakes still work."


def test_a_read_only_key_is_refused_on_every_write_tool(url: str) -> None:
    agent = AgentFactory.create()
    secret = _key(agent, scopes=("read",))
    writers = [
        (tool.name, {tool.selector: job.value} if tool.selector else {})
        for tool in tools().values()
        for job in tool.jobs
        if job.scope != "read"
    ]
    assert len(writers) == 16
    assert ("memory_write", {"kind": "knowledge_item"}) in writers

    async def refused(client: Client) -> list[tuple[str, dict[str, Any]]]:
        answers = []
        for name, picked in writers:
            result = await client.call_tool(name, picked)
            assert result.is_error, (name, picked)
            answers.append((name, result.structured_content["error"]))
        return answers

    for name, error in with_client(url, secret, refused):
        assert error["code"] == "insufficient_scope", name
        assert error["details"] == {"required_scope": "write", "key_scopes": ["read"]}, name
    assert not MemoryEntry.objects.exists()


def test_a_bad_key_gets_401_before_any_mcp_processing(url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx2.Client(timeout=30) as http:
        bad = http.post(url, json=body, headers={**accept, "Authorization": "Bearer eng_x_y"})
        missing = http.post(url, json=body, headers=accept)
        wrong = http.post(url, json=body, headers={**accept, "X-API-Key": "eng_aaaaaaaaaaaa_nope"})
    for response, code in ((bad, "invalid_api_key"), (missing, "not_authenticated")):
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="engram"'
        assert response.json()["error"]["code"] == code
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_api_key"

    async def connect(client: Client) -> None:  # pragma: no cover - never connects
        raise AssertionError("connected with a bad key")

    with pytest.raises(Exception):  # noqa: B017 - the client reports the 401 its own way
        with_client(url, "eng_aaaaaaaaaaaa_nope", connect)


def test_the_x_api_key_header_works_too(url: str) -> None:
    secret = _key(AgentFactory.create())

    async def listing(client: Client) -> int:
        return len((await client.list_tools()).tools)

    assert with_client(url, secret, listing, header="X-API-Key") == len(ALL_TOOLS)


def test_another_accounts_ids_answer_like_missing_ones(url: str, side: Side) -> None:
    """The full walk over every tool is tests/test_tenancy_mcp.py; this is the live one."""
    secret = _key(AgentFactory.create())
    assert side.page and side.skill
    foreign: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
        "read_shared_memory": ({"pool_id": side.pool_id}, {"pool_id": "pool-none"}),
        "read_page": ({"page_id": side.page.pk}, {"page_id": 987_654_321}),
        "get_skill_context": ({"skill_id": side.skill.pk}, {"skill_id": 987_654_321}),
        "memory_read": ({"key": side.memory_key}, {"key": "k987654321"}),
    }

    async def walk(client: Client) -> list[tuple[Any, Any]]:
        pairs = []
        for name, (theirs, missing) in foreign.items():
            pairs.append(
                (
                    (await client.call_tool(name, theirs)).structured_content,
                    (await client.call_tool(name, missing)).structured_content,
                )
            )
        return pairs

    for theirs, missing in with_client(url, secret, walk):
        assert theirs["error"]["code"] == missing["error"]["code"]
        assert theirs["error"]["code"].endswith("not_found")
        assert "OWNQX" not in str(theirs)


def test_a_browser_gets_a_note_and_an_event_stream_405(url: str) -> None:
    with httpx2.Client(timeout=30) as http:
        page = http.get(url, headers={"Accept": "text/html"})
        stream = http.get(url, headers={"Accept": "text/event-stream"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "Model Context Protocol" in page.text and "Authorization: Bearer" in page.text
    assert stream.status_code == 405 and stream.headers["Allow"] == "POST"
