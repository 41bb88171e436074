"""Conversations (issue 17): messages numbered in order under concurrent appends, all-or-none
batches, seed 003's turns, the recent context and paging, summaries that are not truncations
(offline and through a stand-in LLM), rolling summaries by Celery, bad input that changes
nothing, and one index shared with memory search."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from django.db import connections

from core.actors import actor_for_agent
from memory.conversations import services, summaries
from memory.models import Conversation, MemoryContext, MemoryEntry
from tests.conftest import AuthedAgent
from tests.memory.conftest import code
from tests.support.openai_standin import (
    OpenAIStandIn,
    openai_standin_fixture,  # noqa: F401 (pytest collects fixtures from module globals)
)

pytestmark = pytest.mark.django_db
BASE = "/api/v1/memory/conversations"


def start(authed: AuthedAgent, **body: Any) -> dict[str, Any]:
    made = authed.client.post(BASE, {"title": "Trip", "user_id": "u-1", **body}, format="json")
    assert made.status_code == 201, made.content
    return dict(made.json())


def add(authed: AuthedAgent, conversation_id: int, *messages: dict[str, Any]) -> Any:
    return authed.client.post(
        f"{BASE}/{conversation_id}/messages", {"messages": list(messages)}, format="json"
    )


def msg(content: str, role: str = "user", **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


def test_a_conversation_takes_messages_numbered_from_one_with_metadata_as_stored(
    agent_client: AuthedAgent,
) -> None:
    conversation = start(agent_client, metadata={"channel": "chat"})
    assert conversation["message_count"] == 0 and conversation["summary_every"] == 20
    metadata = {"dia_id": "D1:1", "nested": {"a": [1, 2.5, None, "x"]}, "flag": True}
    written = add(
        agent_client,
        conversation["id"],
        msg("I moved to Lisbon last spring.", name="Caroline", metadata=metadata),
        msg("How do you like it there?", role="assistant", name="Melanie"),
    )
    assert written.status_code == 201, written.content
    results = written.json()["results"]
    assert [r["turn_number"] for r in results] == [1, 2]
    assert results[0]["metadata"] == metadata and results[0]["name"] == "Caroline"
    assert results[1]["role"] == "assistant" and results[1]["conversation_id"] == conversation["id"]
    more = add(agent_client, conversation["id"], msg("It is sunny.", name="Caroline"))
    assert more.json()["results"][0]["turn_number"] == 3
    got = agent_client.client.get(f"{BASE}/{conversation['id']}").json()
    assert got["message_count"] == 3 and got["last_message_at"] is not None
    # Each message is an entry of the conversation's own context: one index.
    entry = MemoryEntry.objects.get(pk=results[0]["id"])
    assert entry.context_id == got["context_id"] and entry.position == 1
    assert entry.context.context_type == MemoryContext.ContextType.CONVERSATION
    assert entry.thread == f"conversation:{conversation['id']}" and entry.embedding is not None


def test_recent_context_and_paging_through_the_whole_history(agent_client: AuthedAgent) -> None:
    conversation = start(agent_client)
    batch = [msg(f"Message number {n} about gardening.", name="A") for n in range(1, 13)]
    assert add(agent_client, conversation["id"], *batch).status_code == 201
    recent = agent_client.client.get(f"{BASE}/{conversation['id']}/messages?last=5").json()
    assert [m["turn_number"] for m in recent["results"]] == [8, 9, 10, 11, 12]
    seen: list[int] = []
    url: str | None = f"{BASE}/{conversation['id']}/messages?page_size=5"
    while url:
        page = agent_client.client.get(url).json()
        seen += [m["turn_number"] for m in page["results"]]
        url = page["next"]
    assert seen == list(range(1, 13))


def test_seed_turns_are_two_messages_with_their_context(agent_client: AuthedAgent) -> None:
    conversation = start(agent_client)
    turn = agent_client.client.post(
        f"{BASE}/{conversation['id']}/turns",
        {
            "user_input": "What is the capital of Portugal?",
            "agent_response": "Lisbon.",
            "context": {"topic": "geography"},
        },
        format="json",
    )
    assert turn.status_code == 201, turn.content
    user, agent = turn.json()["results"]
    assert (user["role"], user["turn_number"], agent["role"], agent["turn_number"]) == (
        "user",
        1,
        "assistant",
        2,
    )
    assert user["metadata"] == {"context": {"topic": "geography"}} == agent["metadata"]


@pytest.mark.parametrize(
    ("messages", "status", "error"),
    [
        ([msg(f"m{n}") for n in range(1001)], 400, "invalid_batch_size"),
        ([], 400, "invalid_batch_size"),
        ([msg("fine"), msg("bad role", role="wizard")], 400, "validation_error"),
        ([msg("fine"), msg("   ")], 400, "empty_message"),
        ([msg("fine"), {"content": "no role"}], 400, "validation_error"),
    ],
)
def test_bad_batches_answer_4xx_and_write_nothing(
    agent_client: AuthedAgent, messages: list[dict[str, Any]], status: int, error: str
) -> None:
    conversation = start(agent_client)
    add(agent_client, conversation["id"], msg("before"))
    answer = add(agent_client, conversation["id"], *messages)
    assert answer.status_code == status and code(answer) == error, answer.content
    assert Conversation.objects.get(pk=conversation["id"]).message_count == 1
    assert MemoryEntry.objects.filter(context_id=conversation["context_id"]).count() == 1


def test_a_failure_mid_batch_rolls_everything_back(
    agent_client: AuthedAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation = start(agent_client)
    from memory.conversations import services as module

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("queueing the index failed")

    monkeypatch.setattr(module, "pending_queue", broken)
    with pytest.raises(RuntimeError):
        services.messages_append(
            actor=actor_for_agent(agent_client.agent),
            conversation=Conversation.objects.get(pk=conversation["id"]),
            messages=[services.MessageInput("user", "one"), services.MessageInput("user", "two")],
        )
    assert Conversation.objects.get(pk=conversation["id"]).message_count == 0
    assert not MemoryEntry.objects.filter(context_id=conversation["context_id"]).exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_number_every_message_once_in_order(agent_client: AuthedAgent) -> None:
    actor = actor_for_agent(agent_client.agent)
    conversation = services.conversation_create(actor=actor, title="busy", summary_every=0)
    writers, batches, size = 4, 3, 5
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            barrier.wait()
            for b in range(batches):
                services.messages_append(
                    actor=actor,
                    conversation=conversation,
                    messages=[
                        services.MessageInput("user", f"writer {n} batch {b} line {i}")
                        for i in range(size)
                    ],
                )
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    rows = list(
        MemoryEntry.objects.filter(context_id=conversation.context_id)
        .order_by("position")
        .values_list("position", "content")
    )
    total = writers * batches * size
    assert [p for p, _ in rows] == list(range(1, total + 1))
    # A batch keeps its lines together and in order.
    for start_index in range(0, total, size):
        batch = [c for _, c in rows[start_index : start_index + size]]
        prefix = batch[0].rsplit(" line ", 1)[0]
        assert batch == [f"{prefix} line {i}" for i in range(size)]
    assert Conversation.objects.get(pk=conversation.pk).message_count == total


def test_list_filters_by_user_and_patch_and_delete(agent_client: AuthedAgent) -> None:
    first = start(agent_client, user_id="alice")
    start(agent_client, user_id="bob")
    listed = agent_client.client.get(f"{BASE}?user_id=alice").json()["results"]
    assert [c["id"] for c in listed] == [first["id"]]
    patched = agent_client.client.patch(
        f"{BASE}/{first['id']}", {"title": "Renamed", "summary_every": 5}, format="json"
    )
    assert patched.status_code == 200 and patched.json()["title"] == "Renamed"
    assert patched.json()["summary_every"] == 5
    gone = agent_client.client.delete(f"{BASE}/{first['id']}")
    assert gone.status_code == 204
    assert not MemoryContext.objects.filter(pk=first["context_id"]).exists()
    missing = agent_client.client.get(f"{BASE}/{first['id']}")
    assert missing.status_code == 404 and code(missing) == "conversation_not_found"


def test_conversation_contexts_are_reserved(agent_client: AuthedAgent) -> None:
    contexts = "/api/v1/memory/contexts"
    named = agent_client.client.post(contexts, {"name": "conversation:x"}, format="json")
    assert named.status_code == 400 and code(named) == "context_name_reserved"
    typed = agent_client.client.post(
        contexts, {"name": "mine", "context_type": "conversation"}, format="json"
    )
    assert typed.status_code == 400 and code(typed) == "context_type_reserved"


# --- summaries -------------------------------------------------------------------------------

STORY = [
    ("Caroline", "I went to the LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "That sounds amazing! What happened there?"),
    ("Caroline", "People shared their transgender stories and I felt accepted."),
    ("Melanie", "I am painting a lake sunrise for my art class this week."),
    ("Caroline", "I want to study counseling and mental health to help others."),
    ("Melanie", "My kids loved the camping trip to the mountains last weekend."),
    ("Caroline", "The adoption agency called me about the interview in June."),
    ("Melanie", "Pottery class is my way to relax after work."),
    ("Caroline", "My grandmother gave me a necklace from Sweden, my home country."),
    ("Melanie", "We roasted marshmallows and watched the stars while camping."),
    ("Caroline", "Counseling school applications are due in the fall."),
    ("Melanie", "I finished the lake sunrise painting and hung it in the kitchen."),
]


def _story(authed: AuthedAgent, **body: Any) -> dict[str, Any]:
    conversation = start(authed, **body)
    batch = [msg(text, name=name) for name, text in STORY]
    assert add(authed, conversation["id"], *batch).status_code == 201
    return conversation


def test_a_summary_on_request_covers_the_range_and_is_no_truncation(
    agent_client: AuthedAgent,
) -> None:
    conversation = _story(agent_client, summary_every=0)
    made = agent_client.client.post(
        f"{BASE}/{conversation['id']}/summaries", {"start_turn": 1, "end_turn": 12}, format="json"
    )
    assert made.status_code == 201, made.content
    summary = made.json()
    assert (summary["start_turn"], summary["end_turn"], summary["method"]) == (1, 12, "offline")
    text = summary["summary"]
    opening = " ".join(f"{n}: {t}" for n, t in STORY[:2])
    assert not opening.startswith(text[:60]) or len(text) > len(opening)
    said = [f"{name}: {line}" for name, line in STORY]
    chosen = [line for line in said if line.split(": ", 1)[1].split(".")[0] in text]
    assert len(chosen) >= 2 and chosen != said[: len(chosen)], text
    assert summary["key_points"] and all(isinstance(p, str) for p in summary["key_points"])
    stored = Conversation.objects.get(pk=conversation["id"])
    assert stored.summary == text and stored.summarized_through == 12
    entry = MemoryEntry.objects.get(pk=summary["id"])
    assert entry.entry_type == "conversation_summary" and entry.embedding is not None
    listed = agent_client.client.get(f"{BASE}/{conversation['id']}/summaries").json()
    assert [s["id"] for s in listed["results"]] == [summary["id"]]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"start_turn": 5, "end_turn": 2}, "invalid_turn_range"),
        ({"start_turn": 1, "end_turn": 13}, "turn_out_of_range"),
        ({"start_turn": 0, "end_turn": 2}, "validation_error"),
    ],
)
def test_bad_summary_ranges_answer_400(
    agent_client: AuthedAgent, body: dict[str, int], error: str
) -> None:
    conversation = _story(agent_client, summary_every=0)
    answer = agent_client.client.post(f"{BASE}/{conversation['id']}/summaries", body, format="json")
    assert answer.status_code == 400 and code(answer) == error, answer.content
    assert not MemoryEntry.objects.filter(entry_type="conversation_summary").exists()


def test_the_rolling_summary_follows_every_n_messages(
    agent_client: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    conversation = start(agent_client, summary_every=5)
    with django_capture_on_commit_callbacks(execute=True):
        add(agent_client, conversation["id"], *[msg(t, name=n) for n, t in STORY[:4]])
    assert Conversation.objects.get(pk=conversation["id"]).summarized_through == 0
    with django_capture_on_commit_callbacks(execute=True):
        add(agent_client, conversation["id"], *[msg(t, name=n) for n, t in STORY[4:7]])
    stored = Conversation.objects.get(pk=conversation["id"])
    assert stored.summarized_through == 7 and stored.summary
    listed = agent_client.client.get(f"{BASE}/{conversation['id']}/summaries").json()["results"]
    assert [(s["start_turn"], s["end_turn"]) for s in listed] == [(1, 7)]
    # The sweep finds nothing more due, then writes what is.
    assert services.summaries_due_run()["due"] == 0
    Conversation.objects.filter(pk=stored.pk).update(summary_every=2)
    add(agent_client, conversation["id"], *[msg(t, name=n) for n, t in STORY[7:9]])
    assert services.summaries_due_run() == {"due": 1, "summaries": 1}
    assert Conversation.objects.get(pk=stored.pk).summarized_through == 9


def test_mmr_picks_different_sentences_and_rake_finds_phrases() -> None:
    import numpy as np

    vectors = np.array([[1.0, 0.0], [0.99, 0.01], [0.0, 1.0], [0.7, 0.7]])
    chosen = summaries.mmr_select(vectors, 2)
    assert 0 in chosen or 3 in chosen
    assert not {0, 1} <= set(chosen)  # near-duplicates are not both chosen
    phrases = summaries.key_phrases(
        ["The counseling school applications are due.", "Counseling school is her plan."]
    )
    assert any("counseling school" in p.lower() for p in phrases)


def test_with_an_llm_the_model_writes_the_summary(
    agent_client: AuthedAgent, llm: OpenAIStandIn
) -> None:
    conversation = _story(agent_client, summary_every=0)
    llm.reply_with(
        json.dumps(
            {
                "summary": "Caroline talks about her support group; Melanie about painting.",
                "key_points": ["support group", "lake sunrise painting"],
            }
        )
    )
    made = agent_client.client.post(
        f"{BASE}/{conversation['id']}/summaries", {"start_turn": 2, "end_turn": 4}, format="json"
    ).json()
    assert made["method"] == "llm:openai:stand-in-model"
    assert made["key_points"] == ["support group", "lake sunrise painting"]
    sent = llm.requests_to("/v1/chat/completions")[-1].body["messages"][-1]["content"]
    assert "Melanie: That sounds amazing!" in sent and "Pottery" not in sent
    # An answer that is not the JSON asked for falls back to the offline summary.
    llm.reply_with("not json at all")
    fallback = agent_client.client.post(
        f"{BASE}/{conversation['id']}/summaries", {}, format="json"
    ).json()
    assert fallback["method"] == "offline" and fallback["summary"]


def test_the_recent_context_still_checks_the_page_parameters(agent_client: AuthedAgent) -> None:
    conversation = start(agent_client)
    url = f"{BASE}/{conversation['id']}/messages?last=5"
    too_big = agent_client.client.get(f"{url}&page_size=1329076")
    assert too_big.status_code == 400 and code(too_big) == "invalid_page_size"
    garbage = agent_client.client.get(f"{url}&cursor=D%2B%C2%9D")
    assert garbage.status_code == 400 and code(garbage) == "invalid_cursor"
