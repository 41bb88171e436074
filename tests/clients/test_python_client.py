"""The Python client (clients/python) against a live server: pytest-django's live server, Django's
own threaded WSGI server, on committed data. An agent's loop, sync and async: a conversation and
its messages, the context, memories in every tier and their search, knowledge items, a document
uploaded and found, pages, skills, the graph, pages of lists followed to the end, and errors as
exceptions carrying the API's code."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.clients.conftest import api_key

import engram_client  # isort: skip
from engram_client import (  # isort: skip
    AsyncEngram,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    Engram,
    NotFoundError,
)

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_the_key_and_url_default_to_the_environment(
    live_server: Any, agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_URL", live_server.url)
    monkeypatch.setenv("ENGRAM_API_KEY", api_key(agent))
    with Engram() as engram:
        me = engram.agents.me()
    assert me["id"] == agent.id and me["name"] == agent.name
    monkeypatch.delenv("ENGRAM_API_KEY")
    with pytest.raises(engram_client.EngramError, match="ENGRAM_API_KEY"):
        Engram()


def test_an_agent_loop_conversation_messages_and_context(client: Engram) -> None:
    conversation = client.conversations.create(title="Harbour support", user_id="user-7")
    cid = conversation["id"]
    added = client.conversations.messages.add(
        cid,
        messages=[
            {"role": "user", "content": "Our crane quota at Quayside Nine is 14 lifts a day."},
            {"role": "assistant", "content": "Noted: 14 lifts a day at Quayside Nine."},
        ],
    )
    assert [m["turn_number"] for m in added["results"]] == [1, 2]
    client.conversations.add_turn(
        cid, user_input="And the night shift?", agent_response="Night shift lifts are capped."
    )
    page = client.conversations.messages.list(cid, page_size=3)
    assert len(page.results) == 3 and page.next is not None
    every = list(page)  # iterating a page follows next to the end
    assert [m["turn_number"] for m in every] == [1, 2, 3, 4]
    assert every[-1]["content"] == "Night shift lifts are capped."
    assert [m["role"] for m in client.conversations.messages.list(cid, last=1)] == ["assistant"]

    detail = client.conversations.retrieve(cid)
    assert detail["message_count"] == 4 and detail["user_id"] == "user-7"
    assert client.conversations.update(cid, title="Quayside")["title"] == "Quayside"
    for n in range(2):
        client.conversations.create(title=f"other {n}")
    listed = client.conversations.list(page_size=1)
    assert len(listed.results) == 1 and len(list(listed.iter_pages())) == 3
    assert {c["title"] for c in listed} == {"Quayside", "other 0", "other 1"}

    context = client.context.get(query="crane quota at Quayside Nine", conversation_id=cid)
    assert context["tokens"] <= context["token_budget"]
    assert "14 lifts" in context["context"]
    assert {section["name"] for section in context["sections"]}

    client.conversations.delete(cid)
    with pytest.raises(NotFoundError) as caught:
        client.conversations.retrieve(cid)
    assert caught.value.status == 404 and caught.value.code
    assert caught.value.request_id


def test_memories_in_every_tier_and_their_search(client: Engram) -> None:
    memories = client.memories
    stored = memories.working.set("s1", "plan", value={"step": 1}, ttl=600)
    assert stored["value"] == {"step": 1}
    assert memories.working.get("s1", "plan")["value"] == {"step": 1}
    assert memories.working.exists("s1", "plan")["exists"] is True
    assert memories.working.keys("s1")["count"] == 1

    memories.short_term.set("s1", "mood", value="the user is in a hurry", ttl=3600)
    assert memories.short_term.get("s1", "mood")["value"] == "the user is in a hurry"
    assert [e["key"] for e in memories.short_term.list("s1")] == ["mood"]

    entry = memories.long_term.add(content="The release train leaves on Fridays.", tags=["ops"])
    assert memories.long_term.retrieve(entry["id"])["content"].startswith("The release train")
    routed = memories.write(tier="long_term", content="Zanzibar invoices go out monthly.")
    assert routed["tier"] == "long_term" and routed["entry_id"]
    found = memories.long_term.search(query="release train Fridays", top_k=3)
    assert found["results"][0]["content"] == "The release train leaves on Fridays."
    across = memories.search(query="release train Fridays", top_k=5)
    assert any(
        hit.get("content") == "The release train leaves on Fridays." for hit in across["results"]
    )
    assert memories.read(key="plan", session_id="s1")["tier"] == "working"
    assert memories.stats(session_id="s1")["working"]["keys"] >= 1

    context = memories.long_term.contexts.create(name="Harbour facts")
    memories.long_term.add(content="Berth 4 is closed in winter.", context=context["id"])
    assert [e["content"] for e in memories.long_term.contexts.entries(context["id"])] == [
        "Berth 4 is closed in winter."
    ]

    pool = memories.pools.create(pool_id="team-plan", name="Team plan", data={"goal": "ship"})
    assert pool["pool_id"] == "team-plan"
    written = memories.pools.write("team-plan", "plan.steps", value=["a", "b"])
    assert memories.pools.read("team-plan", "plan.steps")["value"] == ["a", "b"]
    with pytest.raises(ConflictError) as caught:
        memories.pools.write("team-plan", "plan.steps", value=[], expected_version=0)
    assert (caught.value.code, caught.value.status) == ("version_conflict", 409)
    assert memories.pools.read_all("team-plan")["version"] == written["version"]

    memories.working.clear("s1")
    with pytest.raises(NotFoundError) as missing:
        memories.working.get("s1", "plan")
    assert missing.value.code == "working_memory_key_not_found"


def test_knowledge_items_documents_and_their_search(client: Engram) -> None:
    item = client.knowledge.put("policies", "refunds", content="Refunds within 30 days.")
    assert item["version"] == 1
    assert client.knowledge.get("policies", "refunds")["content"] == "Refunds within 30 days."
    assert (
        client.knowledge.put("policies", "refunds", content="Refunds within 45 days.")["version"]
        == 2
    )
    assert len(list(client.knowledge.versions("policies", "refunds"))) == 2
    hits = client.knowledge.query(query="refunds days")["results"]
    assert hits[0]["item"]["key"] == "refunds"

    kb = client.knowledge_bases.create(name="Manuals")
    text_doc = client.knowledge_bases.documents.upload(
        kb["id"], title="Cranes", text="The gantry crane at Quayside Nine lifts 40 tonnes."
    )
    file_doc = client.knowledge_bases.documents.upload_file(
        kb["id"], b"# Tugs\n\nTugboats berth at pier eleven overnight.\n", filename="tugs.md"
    )
    for doc in (text_doc, file_doc):
        assert client.knowledge_bases.documents.retrieve(doc["id"])["status"] == "indexed"
    assert {d["id"] for d in client.knowledge_bases.documents.list(kb["id"], page_size=1)} == {
        text_doc["id"],
        file_doc["id"],
    }
    found = client.knowledge_bases.search(
        query="gantry crane tonnes", knowledge_base_ids=[kb["id"]], mode="keyword", top_k=3
    )
    assert found["results"] and "40 tonnes" in found["results"][0]["text"]
    with pytest.raises(ConflictError) as taken:
        client.knowledge_bases.create(name="Manuals")
    assert taken.value.code == "name_taken"


def test_pages_skills_and_the_graph(client: Engram) -> None:
    harbour = client.pages.create(title="Harbour", content="See [[Cranes]] and [[Tugs]].")
    cranes = client.pages.create(title="Cranes", content="Gantry cranes lift containers.")
    assert client.pages.retrieve(harbour["id"])["title"] == "Harbour"
    assert [p["title"] for p in client.pages.list()] == ["Cranes", "Harbour"]
    assert client.pages.search(query="Cranes")["results"][0]["page"]["id"] == cranes["id"]
    assert [b["id"] for b in client.pages.backlinks(cranes["id"])] == [harbour["id"]]
    assert {link["title"] for link in client.pages.broken_links(harbour["id"])["results"]} == {
        "Tugs"
    }

    skill = client.skills.create(
        name="Book a berth", category="automation", description="Reserve a berth for a ship."
    )
    assert skill["status"] == "draft"
    assert [s["id"] for s in client.skills.list()] == [skill["id"]]
    client.skills.discover(description="reserve a berth for a ship")

    ship = client.graph.nodes.create(name="MV Aurora", entity_type="ship")
    port = client.graph.nodes.create(name="Quayside Nine", entity_type="place")
    edge = client.graph.edges.create(
        source_id=ship["id"], target_id=port["id"], relation_type="DOCKS_AT"
    )
    near = client.graph.nodes.neighbors(ship["id"], hops=1)
    assert [n["node"]["id"] for n in near["results"]] == [port["id"]]
    path = client.graph.path(from_=ship["id"], to=port["id"])
    assert path["hops"] == 1
    assert client.graph.nodes.retrieve(ship["id"])["edges_out"][0]["id"] == edge["id"]
    assert client.graph.nodes.search(query="Aurora")["results"][0]["node"]["id"] == ship["id"]
    client.graph.edges.delete(edge["id"])
    with pytest.raises(NotFoundError) as caught:
        client.graph.path(from_=ship["id"], to=port["id"])
    assert caught.value.code == "no_path"


def test_errors_carry_the_api_code_and_status(live_server: Any, client: Engram) -> None:
    with pytest.raises(NotFoundError) as missing:
        client.graph.nodes.retrieve(999_999_999)
    assert (missing.value.status, missing.value.code) == (404, "node_not_found")
    with pytest.raises(BadRequestError) as bad:
        client.memories.search(query="x", top_k=0)
    assert bad.value.status == 400 and bad.value.code == "validation_error"
    assert "top_k" in bad.value.details
    intruder = Engram(base_url=live_server.url, api_key="eng_notakey000_nosecret")
    with intruder, pytest.raises(AuthenticationError) as refused:
        intruder.agents.me()
    assert refused.value.status == 401 and refused.value.code == "invalid_api_key"
    assert isinstance(refused.value, engram_client.APIError)


def test_the_async_client_runs_the_same_loop(live_server: Any, agent: Any) -> None:
    secret = api_key(agent)

    async def loop() -> None:
        async with AsyncEngram(base_url=live_server.url, api_key=secret) as client:
            assert (await client.agents.me())["id"] == agent.id
            conversation = await client.conversations.create(title="Async")
            await client.conversations.messages.add(
                conversation["id"],
                messages=[{"role": "user", "content": f"message {n}"} for n in range(5)],
            )
            page = await client.conversations.messages.list(conversation["id"], page_size=2)
            contents = [m["content"] async for m in page]
            assert contents == [f"message {n}" for n in range(5)]
            await client.memories.long_term.add(content="Pilots board at the outer buoy.")
            found = await client.memories.search(query="pilots outer buoy")
            assert found["results"]
            context = await client.context.get(query="where do pilots board?")
            assert "outer buoy" in context["context"]
            kb = await client.knowledge_bases.create(name="Async manuals")
            doc = await client.knowledge_bases.documents.upload(
                kb["id"], text="Fenders are inspected every spring."
            )
            ready = await client.knowledge_bases.documents.retrieve(doc["id"])
            assert ready["status"] == "indexed"
            hits = await client.knowledge_bases.search(query="fenders inspected", mode="keyword")
            assert hits["results"]
            page_made = await client.pages.create(title="Pilots", content="Outer buoy.")
            assert (await client.pages.retrieve(page_made["id"]))["title"] == "Pilots"
            with pytest.raises(NotFoundError) as caught:
                await client.pages.retrieve(999_999_999)
            assert caught.value.status == 404 and caught.value.code
        async with AsyncEngram(base_url=live_server.url, api_key="eng_bad") as intruder:
            with pytest.raises(AuthenticationError) as refused:
                await intruder.agents.me()
            assert refused.value.status == 401

    asyncio.run(loop())
