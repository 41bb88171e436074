"""The budget covers everything a context answers (memory.context.assembly.budget): ``tokens``
counts the context and every item's metadata echo and is never above ``token_budget``, and the HTTP
body is at most BODY_BYTES_PER_TOKEN x token_budget + BODY_FIXED_BYTES bytes, with metadata at
the largest a client may write, a 20 MB metadata stored before that bound, long unicode titles,
whitespace that costs no tokens, and every source holding something."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from core.actors import actor_for_account, actor_for_agent
from core.metadata import METADATA_MAX_BYTES
from memory.context.assembly import budget
from memory.conversations import services as conversations_services
from memory.models import MemoryEntry
from rag import services as rag_services
from rag.models import Document
from tests.conftest import AuthedAgent
from tests.core.test_metadata import sized
from tests.memory.test_context import shown_tokens
from tests.support.mcp import rpc
from tests.support.tuning import FLOORS_OFF

pytestmark = pytest.mark.django_db
URL = "/api/v1/memory/context"
QUERY = "What did Ana say about the ferry to the island harbour?"
BIG = sized(METADATA_MAX_BYTES, "😀")


def _bound(token_budget: int) -> int:
    return budget.BODY_BYTES_PER_TOKEN * token_budget + budget.BODY_FIXED_BYTES


@pytest.fixture
def crowded(
    agent_client: AuthedAgent,
    django_capture_on_commit_callbacks: Any,
    tune: Callable[[str, Any], None],
) -> dict[str, Any]:
    """Every source holding items about the ferry, each with the largest metadata allowed."""
    from memory.knowledge import services as knowledge_services
    from memory.long_term import services as ltm
    from memory.pools import services as pools
    from memory.working import services as working

    # Every item is a candidate: the floors have tests of their own.
    for name, value in {**FLOORS_OFF, "memory.floors.memory_min_similarity": None}.items():
        tune(name, value)
    actor = actor_for_agent(agent_client.agent)
    tool = actor_for_account(agent_client.agent.account_id)
    conversation = conversations_services.conversation_create(
        actor=actor, title="ferry", summary_every=0
    )
    lines = [f"Ana: the ferry to the island harbour leaves at {n} o'clock ☀️ ⛴️." for n in range(40)]
    lines.append("ferry" + " " * 90_000 + "harbour")  # two tokens, 90 kB
    lines.append("ferry " + "Ω" * 99 + " harbour")  # one [UNK] word of 99 characters
    conversations_services.messages_append(
        actor=actor,
        conversation=conversation,
        messages=[
            conversations_services.MessageInput("user", text, "Ana", metadata=BIG) for text in lines
        ],
    )
    # A row stored before metadata was bounded: 20 MB.
    old = MemoryEntry.objects.filter(context=conversation.context).order_by("-position").first()
    assert old is not None
    MemoryEntry.objects.filter(pk=old.pk).update(metadata={"k": "é" * 10_000_000})
    memory = ltm.agent_memory_context(actor=actor)
    ltm.entries_write(
        actor=actor,
        context=memory,
        items=[ltm.EntryInput(f"The island ferry note {n}.", metadata=BIG) for n in range(20)],
    )
    knowledge_services.store_create(actor=actor, name="facts")
    for n in range(5):
        knowledge_services.knowledge_item_put(
            actor=actor,
            base="facts",
            key=f"ferry-{n}",
            content=f"The ferry runs {n}.",
            metadata=BIG,
        )
    kb = rag_services.knowledge_base_create(actor=tool, name="docs", chunk_size=64)
    with django_capture_on_commit_callbacks(execute=True):
        for n in range(3):
            rag_services.document_create(
                actor=tool,
                kb=kb,
                data=f"The ferry to the island harbour, part {n}. It sails daily.".encode(),
                filename=f"ferry{n}.txt",
                title="⛴" * 500,
                metadata=rag_services.DocumentMetadata(extra=BIG),
            )
    assert Document.objects.filter(knowledge_base=kb, status="indexed").count() == 3
    pools.pool_create(actor=actor, pool_id="ferry", data={"harbour": "the island ferry " * 50})
    working.working_store(
        actor=actor, session_id="s1", key="ferry", value="island harbour ferry " * 30
    )
    return {"conversation": conversation.pk}


@pytest.mark.parametrize("token_budget", [100, 300, 2000])
def test_the_answer_stays_within_the_budget_and_the_body_bound(
    agent_client: AuthedAgent, crowded: dict[str, Any], token_budget: int
) -> None:
    response = agent_client.client.post(
        URL,
        {
            "query": QUERY,
            "conversation_id": crowded["conversation"],
            "session_id": "s1",
            "token_budget": token_budget,
        },
        format="json",
    )
    assert response.status_code == 200, response.content[:500]
    answer = response.json()
    items = [i for s in answer["sections"] for i in s["items"]]
    assert answer["tokens"] == shown_tokens(answer["context"], items) <= token_budget
    assert len(response.content) <= _bound(token_budget), len(response.content)
    for item in items:
        assert len(json.dumps(item["metadata"], separators=(",", ":")).encode()) <= 256 * 4
        assert item["text"] in answer["context"]
    if token_budget >= 2000:
        kinds = {i["kind"] for i in items}
        assert {"turn", "memory", "chunk"} <= kinds, kinds
        assert any(i["metadata_truncated"] for i in items)


def test_over_mcp_the_answer_is_bounded_too(
    agent_client: AuthedAgent, crowded: dict[str, Any]
) -> None:
    token_budget = 100
    response = rpc(
        agent_client.secret,
        "tools/call",
        {
            "name": "get_context",
            "arguments": {
                "query": QUERY,
                "conversation_id": crowded["conversation"],
                "token_budget": token_budget,
            },
        },
    )
    assert response.status_code == 200
    result = json.loads(response.content)["result"]
    assert not result.get("isError"), result
    assert result["structuredContent"]["tokens"] <= token_budget
    # The structured answer, and its JSON again as text (escaped once more): docs/memory/context.md.
    assert len(response.content) <= 5 * _bound(token_budget), len(response.content)
