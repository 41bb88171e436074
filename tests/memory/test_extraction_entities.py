"""Conversation entities (issue 36, item 2): typing that does not make a person after "by" an
organisation, titles, surnames joining the full name within a batch, and the graph links of
a conversation's messages with their relations."""

from __future__ import annotations

import pytest

from memory.conversations.extraction import offline
from memory.long_term.services.graph_links import entries_graph_index
from memory.models import MemoryEntry
from rag.models import GraphEdge, GraphMention, GraphNode
from tests.conftest import AuthedAgent
from tests.memory.conftest import conversation_of


def typed(texts: list[str], speakers: tuple[str, ...] = ()) -> set[tuple[str, str]]:
    return {
        (e.name, e.entity_type) for found in offline.entities_of(texts, speakers) for e in found
    }


def test_typing_by_the_name_and_its_title_not_by_by() -> None:
    found = typed(["We went to a talk by Ann Lee at the Riverside Cafe.", "I met Mr. Brown."])
    assert ("Ann Lee", "person") in found  # after "by": still a person
    assert ("Riverside Cafe", "organisation") in found
    assert ("Brown", "person") in found  # a title; "Mr." ends no sentence
    assert ("Main Street", "place") in typed(["We live on Main Street now."])


def test_a_surname_joins_the_full_name_of_the_batch_only_when_unique() -> None:
    found = typed(["Ann Lee gave the talk.", "Everyone liked what Dr. Lee said, and Lee smiled."])
    assert ("Ann Lee", "person") in found and not {n for n, _ in found} & {"Lee", "Dr. Lee"}
    two = typed(["Ann Lee and Bo Lee came.", "We saw Lee leave."])
    assert ("Lee", "person") in two  # two people named Lee: neither


@pytest.mark.django_db
def test_a_conversation_links_its_messages_to_the_full_name_with_relations(
    agent_client: AuthedAgent,
) -> None:
    conversation = conversation_of(
        agent_client,
        [
            ("Caroline", "My mentor is Ann Lee, she runs the Harbor Library."),
            ("Melanie", "Oh nice! Lee was born in Kiruna, right?"),
            ("Caroline", "Yes, Ann Lee was born in Kiruna."),
        ],
    )
    entries = list(
        MemoryEntry.objects.filter(context_id=conversation.context_id).order_by("position")
    )
    entries_graph_index(
        account_id=entries[0].account_id, entries=entries, known_names={"Caroline", "Melanie"}
    )
    lee = GraphNode.objects.get(name_key="ann lee")
    assert lee.entity_type == "person"
    assert not GraphNode.objects.filter(name_key="lee").exists()
    linked = set(GraphMention.objects.filter(node=lee).values_list("unit_id", flat=True))
    assert linked == {e.pk for e in entries}  # the message saying only "Lee" too
    born = GraphEdge.objects.get(source=lee, relation_type="born_in")
    assert born.target.name == "Kiruna" and born.derived_scope_id == conversation.context_id
    # "she runs the Harbor Library": the pronoun is the name of its own message.
    assert GraphEdge.objects.filter(
        source=lee, target__name_key="harbor library", relation_type="leads"
    ).exists()
