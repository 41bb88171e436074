"""Extraction (issue 17, item 4): the offline extractor on plain examples (first-person facts
as low-confidence knowledge items sourced from their message, entities as graph nodes linked
to the messages that mention them), a contradicting statement as a new version, the follow-up
task extracting each batch once, ranges on request, the decision and invalidation paths
through the stand-in LLM, failures that end in a visible row, and tenancy."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.actors import actor_for_agent
from memory.conversations import services as conversation_services
from memory.conversations.extraction import offline, services
from memory.knowledge import selectors as knowledge_selectors
from memory.knowledge import services as knowledge_services
from memory.models import Conversation, Extraction, KnowledgeItem, KnowledgeSource
from memory.tuning import TUNING
from rag.models import GraphEdge, GraphNode
from tests.conftest import AuthedAgent
from tests.memory.conftest import code
from tests.support.openai_standin import (
    OpenAIStandIn,
    openai_standin_fixture,  # noqa: F401 (pytest collects fixtures from module globals)
)

pytestmark = pytest.mark.django_db
BASE = "/api/v1/memory/conversations"


def start(authed: AuthedAgent) -> int:
    made = authed.client.post(BASE, {"title": "Chat", "summary_every": 0}, format="json")
    assert made.status_code == 201, made.content
    return int(made.json()["id"])


def add(authed: AuthedAgent, conversation_id: int, *lines: tuple[str, str]) -> list[int]:
    written = authed.client.post(
        f"{BASE}/{conversation_id}/messages",
        {"messages": [{"role": "user", "name": name, "content": text} for name, text in lines]},
        format="json",
    )
    assert written.status_code == 201, written.content
    return [m["id"] for m in written.json()["results"]]


def extractions(authed: AuthedAgent, conversation_id: int) -> list[dict[str, Any]]:
    listed = authed.client.get(f"{BASE}/{conversation_id}/extractions?page_size=500")
    assert listed.status_code == 200, listed.content
    return list(listed.json()["results"])


def item(account_id: int, key: str) -> KnowledgeItem:
    return KnowledgeItem.objects.get(
        account_id=account_id, store__name=services.EXTRACTION_BASE, key=key, is_current=True
    )


def test_the_offline_patterns_on_plain_examples() -> None:
    facts = offline.facts_of(
        "I moved to Lisbon last year. I love pottery! My favorite color is deep blue. "
        "Yeah, I work at Google and I am a nurse. I don't like snow. Do I like cats?",
        "Caroline",
    )
    assert [(f.key, f.text) for f in facts] == [
        ("caroline.moved_to", "Caroline moved to Lisbon."),
        ("caroline.preference.pottery", "Caroline loves pottery."),
        ("caroline.favorite_color", "Caroline's favorite color is deep blue."),
        ("caroline.works_at", "Caroline works at Google."),
        ("caroline.is_a", "Caroline is a nurse."),
    ]
    assert facts[0].when == "last year" and all(
        f.confidence == TUNING.extraction.offline_confidence for f in facts
    )
    (first, second) = offline.entities_of(
        [
            "Yesterday I met Melanie in New York.",
            "Melanie joined Harvard University on May 7, 2023.",
        ]
    )
    assert {(e.name, e.entity_type) for e in first} == {
        ("Melanie", "person"),
        ("New York", "place"),
        ("Yesterday", "date"),
    }
    assert {(e.name, e.entity_type) for e in second} == {
        ("Melanie", "person"),  # first word, but capitalised mid-sentence elsewhere
        ("Harvard University", "organisation"),
        ("May 7, 2023", "date"),
    }


def test_an_append_extracts_facts_and_entities_linked_to_their_messages(
    agent_client: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    conversation = start(agent_client)
    with django_capture_on_commit_callbacks(execute=True):
        moved, loves, _ = add(
            agent_client,
            conversation,
            ("Caroline", "I moved to Lisbon last year."),
            ("Caroline", "I love pottery."),
            ("Melanie", "That is lovely."),
        )
    account = agent_client.agent.account_id
    fact = item(account, "caroline.moved_to")
    assert (
        fact.content == "Caroline moved to Lisbon."
        and fact.confidence == TUNING.extraction.offline_confidence
    )
    assert fact.store.knowledge_type == "factual" and fact.metadata["when"] == "last year"
    assert list(
        KnowledgeSource.objects.filter(item=fact).values_list("source_type", "source_id")
    ) == [("conversation_message", str(moved))]
    assert item(account, "caroline.preference.pottery").content == "Caroline loves pottery."
    rows = extractions(agent_client, conversation)
    by_fact = {r["fact"]: r for r in rows}
    assert by_fact["Caroline moved to Lisbon."]["message_ids"] == [moved]
    assert by_fact["Caroline moved to Lisbon."]["decision"] == "add"
    assert by_fact["Caroline moved to Lisbon."]["method"] == "offline"
    assert by_fact["Caroline moved to Lisbon."]["knowledge_item_id"] == fact.pk
    # Entities: graph nodes, each linked to the messages that mention it.
    caroline = GraphNode.objects.get(account_id=account, entity_type="person", name="Caroline")
    lisbon = GraphNode.objects.get(account_id=account, entity_type="place", name="Lisbon")
    assert GraphNode.objects.filter(account_id=account, entity_type="date", name="last year")
    entity_rows = {r["graph_node_id"]: r for r in rows if r["kind"] == "entity"}
    assert entity_rows[lisbon.pk]["message_ids"] == [moved]
    assert entity_rows[caroline.pk]["message_ids"] == [moved, loves]
    edge = GraphEdge.objects.exclude(relation_type="co_occurs").get(source=caroline, target=lisbon)
    assert edge.relation_type == "moved_to"
    assert Conversation.objects.get(pk=conversation).extracted_through == 3


def test_a_contradicting_statement_makes_a_new_version_and_a_repeat_changes_nothing(
    agent_client: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    conversation = start(agent_client)
    with django_capture_on_commit_callbacks(execute=True):
        add(agent_client, conversation, ("Caroline", "I live in Lisbon."))
    with django_capture_on_commit_callbacks(execute=True):
        (later,) = add(agent_client, conversation, ("Caroline", "Now I live in Porto, by the sea."))
    with django_capture_on_commit_callbacks(execute=True):
        add(agent_client, conversation, ("Caroline", "As I said, I live in Porto."))
    current = item(agent_client.agent.account_id, "caroline.lives_in")
    assert (current.version, current.content) == (2, "Caroline lives in Porto.")
    assert current.previous is not None and current.previous.content == "Caroline lives in Lisbon."
    facts = [r for r in reversed(extractions(agent_client, conversation)) if r["kind"] == "fact"]
    assert [r["decision"] for r in facts] == ["add", "update", "none"]
    assert facts[1]["message_ids"] == [later] and facts[2]["knowledge_item_id"] == current.pk


def test_the_follow_up_extracts_each_batch_once(agent_client: AuthedAgent) -> None:
    conversation = start(agent_client)
    add(agent_client, conversation, ("Caroline", "I moved to Lisbon."), ("Ann", "I love jazz."))
    first = conversation_services.conversation_follow_up_run(conversation_id=conversation)
    assert first["extractions"] > 0
    count = Extraction.objects.filter(conversation_id=conversation).count()
    again = conversation_services.conversation_follow_up_run(conversation_id=conversation)
    assert again["extractions"] == 0
    assert Extraction.objects.filter(conversation_id=conversation).count() == count
    # The periodic sweep finds nothing due either, until new messages come.
    assert services.extractions_due_run()["due"] == 0
    add(agent_client, conversation, ("Ann", "I work at the Blue Note."))
    assert services.extractions_due_run(dry_run=True) == {"due": 1, "extractions": 0}
    assert services.extractions_due_run()["extractions"] > 0
    assert Conversation.objects.get(pk=conversation).extracted_through == 3


def test_a_failing_extraction_leaves_a_visible_row_and_never_fails_the_append(
    agent_client: AuthedAgent, django_capture_on_commit_callbacks: Any, monkeypatch: Any
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the graph is down")

    monkeypatch.setattr(services, "_offline", broken)
    conversation = start(agent_client)
    with django_capture_on_commit_callbacks(execute=True):
        ids = add(agent_client, conversation, ("Caroline", "I moved to Lisbon."))
    (row,) = extractions(agent_client, conversation)
    assert row["decision"] == "none" and "the graph is down" in row["error"]
    assert row["message_ids"] == ids


def test_extract_on_request_with_ranges_and_bad_ranges(agent_client: AuthedAgent) -> None:
    conversation = start(agent_client)
    url = f"{BASE}/{conversation}/extract"
    empty = agent_client.client.post(url, {}, format="json")
    assert empty.status_code == 201 and empty.json()["results"] == []
    ids = add(
        agent_client,
        conversation,
        ("Caroline", "I moved to Lisbon."),
        ("Caroline", "I work at Acme Corp."),
        ("Melanie", "I prefer tea."),
    )
    one = agent_client.client.post(url, {"from_turn": 2, "to_turn": 2}, format="json")
    assert one.status_code == 201, one.content
    body = one.json()
    assert (body["from_turn"], body["to_turn"], body["method"]) == (2, 2, "offline")
    assert body["results"] and all(r["message_ids"] == [ids[1]] for r in body["results"])
    assert body["counts"]["facts"] == 1 and body["counts"]["add"] == len(body["results"])
    assert Conversation.objects.get(pk=conversation).extracted_through == 0  # not from turn 1
    for bad, error in [
        ({"from_turn": 3, "to_turn": 2}, "invalid_turn_range"),
        ({"to_turn": 4}, "turn_out_of_range"),
        ({"from_turn": 9}, "invalid_turn_range"),
        ({"from_turn": 0}, "validation_error"),
        ({"from_turn": "x"}, "validation_error"),
        ({"to_turn": 2**40}, "validation_error"),
        ({"other": 1}, "unknown_field"),
    ]:
        before = Extraction.objects.count()
        answer = agent_client.client.post(url, bad, format="json")
        assert answer.status_code == 400 and code(answer) == error, (bad, answer.content)
        assert Extraction.objects.count() == before
    whole = agent_client.client.post(url, format="json").json()
    assert {r["decision"] for r in whole["results"] if r["message_ids"] == [ids[1]]} == {"none"}
    assert {1, 3} <= {t for r in whole["results"] for t in r["turns"]}
    assert Conversation.objects.get(pk=conversation).extracted_through == 3


def test_extractions_are_invisible_to_another_account(
    agent_client: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    conversation = start(agent_client)
    add(agent_client, conversation, ("Caroline", "I moved to Lisbon."))
    assert agent_client.client.post(f"{BASE}/{conversation}/extract", {}, format="json").json()[
        "results"
    ]
    for method, path in [("get", "extractions"), ("post", "extract")]:
        answer = getattr(other_agent_client.client, method)(
            f"{BASE}/{conversation}/{path}", {}, format="json"
        )
        assert answer.status_code == 404 and code(answer) == "conversation_not_found"


def test_a_read_only_key_lists_but_cannot_extract(
    agent_client: AuthedAgent, make_agent_client: Any
) -> None:
    conversation = start(agent_client)
    add(agent_client, conversation, ("Caroline", "I moved to Lisbon."))
    reader = make_agent_client(agent=agent_client.agent, scopes=("read",))
    assert reader.client.get(f"{BASE}/{conversation}/extractions").status_code == 200
    refused = reader.client.post(f"{BASE}/{conversation}/extract", {}, format="json")
    assert refused.status_code == 403


# --- the LLM path (a stand-in server: the protocol, not the quality) ------------------------


def test_llm_decisions_add_update_invalidate_and_none(
    agent_client: AuthedAgent, llm: OpenAIStandIn
) -> None:
    actor = actor_for_agent(agent_client.agent)
    known = {
        "caroline.home": "Caroline lives in Lisbon.",
        "caroline.job": "Caroline works at the bakery on Rua Augusta.",
        "caroline.pet": "Caroline has a cat named Oscar.",
    }
    conversation = start(agent_client)
    # What this conversation taught before (its own items: a conversation decides its facts
    # against those and the account-wide ones, and writes versions of its own only).
    context_id = Conversation.objects.get(pk=conversation).context_id
    for key, content in known.items():
        knowledge_services.knowledge_item_put(
            actor=actor,
            base=services.EXTRACTION_BASE,
            key=key,
            content=content,
            source_context_id=context_id,
        )
    ids = add(
        agent_client,
        conversation,
        ("Caroline", "We moved to Porto! I quit the bakery, and Oscar came along."),
        ("Melanie", "And you took up pottery?"),
        ("Caroline", "Yes, pottery every Sunday."),
    )
    facts = [
        "Caroline does pottery every Sunday.",
        "Caroline lives in Porto.",
        "Caroline no longer works at the bakery.",
        "Caroline has a cat named Oscar.",
    ]
    aimed = ["", "caroline.home", "caroline.job", "caroline.pet"]
    numbers = []
    for text, key in zip(facts, aimed, strict=True):
        hits = knowledge_selectors.knowledge_search(actor=actor, query=text, top_k=10).hits
        numbers.append([h.item.key for h in hits].index(key) if key else None)
    llm.reply_with(
        json.dumps(
            {
                "facts": [
                    {"text": facts[0], "key": "caroline.hobby", "confidence": 0.9, "turns": [3]},
                    {"text": facts[1], "confidence": 0.8, "turns": [1]},
                    {"text": facts[2], "turns": [1]},
                    {"text": facts[3], "turns": [1]},
                ],
                "entities": [
                    {"name": "Caroline", "type": "person", "turns": [1, 3]},
                    {"name": "Porto", "type": "place", "turns": [1]},
                ],
                "relations": [
                    {"source": "Caroline", "type": "lives in", "target": "Porto", "turns": [1]}
                ],
            }
        ),
        json.dumps(
            {
                "decisions": [
                    {"fact": 0, "decision": "add"},
                    {"fact": 1, "decision": "update", "candidate": numbers[1]},
                    {"fact": 2, "decision": "invalidate", "candidate": numbers[2]},
                    {"fact": 3, "decision": "none", "candidate": numbers[3]},
                ]
            }
        ),
    )
    made = agent_client.client.post(f"{BASE}/{conversation}/extract", {}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["method"] == "llm:openai:stand-in-model"
    rows = {r["fact"]: r for r in body["results"] if r["kind"] == "fact"}
    account = agent_client.agent.account_id
    # add: a new item, sourced from turn 3.
    hobby = item(account, "caroline.hobby")
    assert rows[facts[0]]["decision"] == "add" and rows[facts[0]]["message_ids"] == [ids[2]]
    assert hobby.content == facts[0] and hobby.confidence == 0.9
    # update: a new version of the item compared.
    home = item(account, "caroline.home")
    assert rows[facts[1]]["decision"] == "update" and (home.version, home.content) == (2, facts[1])
    # invalidate: valid_to set, kept, out of search.
    job = KnowledgeItem.objects.get(account_id=account, key="caroline.job")
    assert rows[facts[2]]["decision"] == "invalidate" and job.valid_to is not None
    assert rows[facts[2]]["knowledge_item_id"] == job.pk and job.is_current
    found = knowledge_selectors.knowledge_search(actor=actor, query="bakery Rua Augusta").hits
    assert job.pk not in {h.item.pk for h in found}
    # none: nothing written, the item it matched named.
    pet = item(account, "caroline.pet")
    assert rows[facts[3]]["decision"] == "none" and pet.version == 1
    assert rows[facts[3]]["knowledge_item_id"] == pet.pk
    porto = GraphNode.objects.get(account_id=account, entity_type="place", name="Porto")
    assert GraphEdge.objects.filter(target=porto, relation_type="lives_in").exists()
    # The decision call was shown each fact with its candidates.
    sent = json.loads(llm.requests_to("/v1/chat/completions")[-1].body["messages"][-1]["content"])
    assert [f["text"] for f in sent] == facts
    assert sent[1]["candidates"][numbers[1]]["key"] == "caroline.home"


def test_llm_answers_that_do_not_hold_fall_back_offline(
    agent_client: AuthedAgent, llm: OpenAIStandIn
) -> None:
    conversation = start(agent_client)
    add(agent_client, conversation, ("Caroline", "I moved to Lisbon."))
    for reply in ("not json", json.dumps({"facts": [{"text": "x", "turns": [99]}]})):
        llm.reply_with(reply, reply)
        made = agent_client.client.post(f"{BASE}/{conversation}/extract", {}, format="json")
        assert made.status_code == 201, made.content
        assert made.json()["method"] == "offline"
        assert {r["method"] for r in made.json()["results"]} == {"offline"}


@pytest.mark.parametrize(
    "body",
    [[], "x", None, {"from_turn": None}, {"from_turn": 1.5}, {"to_turn": True}, {"to_turn": -1}],
)
def test_odd_extract_bodies_answer_4xx_never_500(agent_client: AuthedAgent, body: Any) -> None:
    conversation = start(agent_client)
    add(agent_client, conversation, ("Caroline", "I moved to Lisbon."))
    answer = agent_client.client.post(
        f"{BASE}/{conversation}/extract", json.dumps(body), content_type="application/json"
    )
    assert 400 <= answer.status_code < 500, (body, answer.content)
    assert not Extraction.objects.filter(conversation_id=conversation).exists()
