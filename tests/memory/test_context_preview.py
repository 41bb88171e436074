"""The admin's context preview: people who manage memory in a conversation's account see the
context its agent would get for a query, assembled with the agent's own access rules (not the
person's), with every item's provenance; an intruder that owns a conversation, memories and
pools of its own sees none of this account's and adds nothing to its context; bad input is a
form error, never a server error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from core import services as core_services
from core.actors import actor_for_agent, actor_for_user
from core.errors import PermissionDenied
from memory.context.assembly import ContextRequest, context_assemble, context_preview
from memory.long_term import services as ltm
from memory.models import Conversation
from memory.pools import services as pool_services
from tests.conftest import AuthedAgent
from tests.factories import UserFactory
from tests.memory.conftest import conversation_of

pytestmark = pytest.mark.django_db

TURNS = [
    ("Maria", "My sister Ines moved to Lisbon last spring."),
    ("Tomas", "Nice! Does she like the trams there?"),
    ("Maria", "She rides tram 28 to her studio every morning."),
]
QUERY = "Where did Ines move to?"


def _own_memory(authed: AuthedAgent, text: str) -> None:
    actor = actor_for_agent(authed.agent)
    ltm.entries_write(
        actor=actor, context=ltm.context_create(actor=actor, name=f"notes {authed.agent.pk}"),
        items=[ltm.EntryInput(content=text)],
    )  # fmt: skip


def _person(authed: AuthedAgent, role: str) -> tuple[Any, Client]:
    user = UserFactory.create(is_staff=True)
    core_services.membership_grant(account=authed.agent.account, user=user, role=role)
    client = Client()
    client.force_login(user)
    return user, client


def _page(client: Client, conversation: Conversation, **params: Any) -> Any:
    return client.get(reverse("admin:memory_conversation_context", args=[conversation.pk]), params)


@pytest.mark.real_embeddings  # similarity by meaning (failed on the stand-in)
def test_an_operator_sees_the_agents_context_with_provenance(
    agent_client: AuthedAgent, teammate: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    chat = conversation_of(agent_client, TURNS)
    _own_memory(agent_client, "Ines works as a ceramicist in Lisbon.")
    # A teammate's private memory: the operator may read it, the conversation's agent may not.
    _own_memory(teammate, "Ines keeps her spare key under the blue pot in Lisbon.")
    # The intruder owns a conversation, memories and a public pool on the same words.
    intruder_chat = conversation_of(
        other_agent_client, [("Eve", "Ines moved to Lisbon, INTRUDER.")]
    )
    _own_memory(other_agent_client, "Ines moved to Lisbon, says the INTRUDER memory.")
    pool_services.pool_create(
        actor=actor_for_agent(other_agent_client.agent), pool_id="gossip", public_read=True,
        data={"note": "Ines moved to Lisbon, says the INTRUDER pool."},
    )  # fmt: skip
    operator, client = _person(agent_client, "operator")

    change = client.get(reverse("admin:memory_conversation_change", args=[chat.pk]))
    assert reverse("admin:memory_conversation_context", args=[chat.pk]) in change.content.decode()
    form = _page(client, chat)
    assert form.status_code == 200 and "result" not in form.context

    page = _page(client, chat, query=QUERY, token_budget=500, format="text")
    assert page.status_code == 200
    result = page.context["result"]
    assert result.tokens <= 500
    kinds = {item["kind"]: item for section in result.sections for item in section["items"]}
    assert kinds["turn"]["source"]["conversation_id"] == chat.pk
    assert kinds["memory"]["text"] == "Ines works as a ceramicist in Lisbon."
    for section in result.sections:
        for item in section["items"]:
            assert item["text"] in result.context
    text = page.content.decode()
    assert "My sister Ines moved to Lisbon last spring." in text
    assert "ceramicist" in text and "spare key" not in text and "INTRUDER" not in text
    memory_page = reverse("admin:memory_memoryentry_change", args=[kinds["memory"]["id"]])
    assert memory_page in text and client.get(memory_page).status_code == 200
    # The same items as the agent asking itself.
    preview = context_preview(
        actor=actor_for_user(operator), conversation=chat, request=ContextRequest(query=QUERY)
    )
    asked = context_assemble(
        actor=actor_for_agent(agent_client.agent),
        request=ContextRequest(query=QUERY, conversation_id=chat.pk),
    )
    assert [s["items"] for s in preview.sections] == [s["items"] for s in asked.sections]

    # Another account's conversation is not found, whatever the person asks.
    foreign = _page(client, intruder_chat, query=QUERY)
    assert foreign.status_code == 404 and "INTRUDER" not in foreign.content.decode()
    with pytest.raises(PermissionDenied):
        context_preview(
            actor=actor_for_user(operator),
            conversation=intruder_chat,
            request=ContextRequest(query=QUERY),
        )


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"query": QUERY, "token_budget": 99, "format": "text"}, "token_budget"),
        ({"query": QUERY, "token_budget": 32001, "format": "text"}, "token_budget"),
        ({"query": QUERY, "token_budget": "lots", "format": "text"}, "token_budget"),
        ({"query": "", "token_budget": 2000, "format": "text"}, "query"),
        ({"query": "x" * 4001, "token_budget": 2000, "format": "text"}, "query"),
        ({"query": QUERY, "token_budget": 2000, "format": "html"}, "format"),
    ],
)
def test_bad_input_is_a_form_error(
    agent_client: AuthedAgent, params: dict[str, Any], field: str
) -> None:
    chat = conversation_of(agent_client, TURNS)
    _, client = _person(agent_client, "operator")
    page = _page(client, chat, **params)
    assert page.status_code == 200
    assert field in page.context["form"].errors and "result" not in page.context


def test_people_without_a_memory_role_may_not_preview(agent_client: AuthedAgent) -> None:
    chat = conversation_of(agent_client, TURNS)
    author, client = _person(agent_client, "author")
    assert _page(client, chat, query=QUERY).status_code == 403
    with pytest.raises(PermissionDenied):
        context_preview(
            actor=actor_for_user(author), conversation=chat, request=ContextRequest(query=QUERY)
        )


def test_an_embedding_outage_is_a_503_page_not_a_server_error(
    agent_client: AuthedAgent, embeddings_down: Callable[[], None]
) -> None:
    chat = conversation_of(agent_client, TURNS)
    _, client = _person(agent_client, "operator")
    embeddings_down()
    page = _page(client, chat, query=QUERY, token_budget=2000, format="text")
    assert page.status_code == 503 and int(page["Retry-After"]) > 0
    assert "The embedding provider is unavailable." in page.content.decode()
