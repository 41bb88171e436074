"""Knowledge items and memories in a context: only those on topic are shown (cosine similarity
to the query at least ``memory.floors.knowledge_min_similarity`` / ``memory_min_similarity``
(docs/tuning.md), the fused score
being relative to the other hits), and a knowledge item extracted from turns the context
already shows is not said twice."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.actors import actor_for_agent
from memory.context import task_types
from memory.context.assembly import ContextRequest, context_assemble
from memory.conversations import selectors as conversation_selectors
from memory.knowledge import services as knowledge_services
from tests.conftest import AuthedAgent
from tests.memory.conftest import conversation_of

pytestmark = pytest.mark.django_db

FERRY = "The island ferry leaves the harbour at seven every morning."
TOMATOES = "Tomato seedlings need six hours of direct sun."


def _knowledge(
    authed: AuthedAgent, **items: tuple[str, list[knowledge_services.SourceInput]]
) -> None:
    actor = actor_for_agent(authed.agent)
    knowledge_services.store_create(actor=actor, name="facts")
    for key, (content, made_from) in items.items():
        knowledge_services.knowledge_item_put(
            actor=actor, base="facts", key=key, content=content, sources=made_from
        )


def _shown(authed: AuthedAgent, query: str, **request: Any) -> dict[str, list[str]]:
    answer = context_assemble(
        actor=actor_for_agent(authed.agent),
        request=ContextRequest(
            query=query, task_type=task_types.CONVERSATION, token_budget=4000, **request
        ),
    )
    shown: dict[str, list[str]] = {}
    for section in answer.sections:
        for item in section["items"]:
            shown.setdefault(item["kind"], []).append(item["text"])
            assert item["text"] in answer.context
    return shown


def test_only_knowledge_on_topic_is_shown(
    agent_client: AuthedAgent, tune: Callable[[str, Any], None]
) -> None:
    _knowledge(agent_client, ferry=(FERRY, []), tomatoes=(TOMATOES, []))
    query = "When does the island ferry leave the harbour in the morning?"
    assert _shown(agent_client, query)["knowledge"] == [FERRY]
    # Without the floor the off-topic item fills the section's share: the search finds it.
    tune("memory.floors.knowledge_min_similarity", 0.0)
    assert sorted(_shown(agent_client, query)["knowledge"]) == sorted([FERRY, TOMATOES])


def test_only_memories_on_topic_are_shown_and_none_costs_only_the_vector_stage(
    agent_client: AuthedAgent, tune: Callable[[str, Any], None]
) -> None:
    from memory.long_term import services as ltm
    from memory.long_term.selectors import long_term_ranked

    actor = actor_for_agent(agent_client.agent)
    ltm.entries_write(
        actor=actor,
        context=ltm.agent_memory_context(actor=actor),
        items=[ltm.EntryInput(FERRY), ltm.EntryInput(TOMATOES)],
    )
    query = "When does the island ferry leave the harbour in the morning?"
    assert _shown(agent_client, query)["memory"] == [FERRY]
    # Without the floor the off-topic memory is shown too: the search finds it.
    tune("memory.floors.memory_min_similarity", None)
    assert sorted(_shown(agent_client, query)["memory"]) == sorted([FERRY, TOMATOES])

    # The selector's floor: nothing on topic, nothing after the vector stage.
    off_topic = "quarterly tax filing deadline"
    everything = long_term_ranked(actor=actor, query=off_topic, limit=5)
    floored = long_term_ranked(actor=actor, query=off_topic, limit=5, min_similarity=0.4)
    assert len(everything.hits) == 2 and "keyword" in everything.timings_ms
    assert floored.hits == [] and "keyword" not in floored.timings_ms
    on_topic = long_term_ranked(actor=actor, query=query, limit=5, min_similarity=0.4)
    assert [h.entry.content for h in on_topic.hits] == [FERRY]


def test_knowledge_extracted_from_turns_shown_is_not_said_again(
    agent_client: AuthedAgent,
) -> None:
    conversation = conversation_of(
        agent_client,
        [("Ana", "Morning! " + FERRY), *(("Ben", f"Weather note {n}: drizzle.") for n in range(8))],
    )
    said = next(m for m in conversation_selectors.messages_of(conversation) if FERRY in m.content)
    message = knowledge_services.SourceInput("conversation_message", str(said.pk))
    _knowledge(agent_client, ferry=(FERRY, [message]))
    query = "When does the island ferry leave the harbour in the morning?"

    shown = _shown(agent_client, query, conversation_id=conversation.pk)
    assert "Ana: Morning! " + FERRY in shown["turn"]
    assert "knowledge" not in shown, shown
    # Without the turn in the context, the item is what says it.
    alone = _shown(agent_client, query, conversation_id=conversation.pk, sources=["knowledge"])
    assert alone == {"knowledge": [FERRY]}
