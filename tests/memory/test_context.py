"""Context assembly (issue 18): the budget is a hard limit at any budget with items of any size,
sections come in seed 003's order, an item is kept once, every kind of item says where it came
from, another account never contributes, and bad input is a 4xx with a code."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from core import services as core_services
from core.actors import actor_for_account, actor_for_agent
from memory.context import task_types
from memory.context.assembly import ContextRequest, context_assemble, sources
from memory.context.assembly.budget import fit_sentences, sentences
from memory.conversations import services as conversations_services
from memory.tuning import TUNING
from rag.tokens import count_tokens_one
from tests.conftest import AuthedAgent
from tests.memory.conftest import code, conversation_of
from tests.support.tuning import FLOORS_OFF
from tests.support.world import build_side

pytestmark = pytest.mark.django_db
URL = "/api/v1/memory/context"
ORDER = ["immediate", "recent", "history", "knowledge", "documents", "pages", "skills", "task"]
SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")


def _ask(authed: AuthedAgent, **body: Any) -> dict[str, Any]:
    answer = authed.client.post(URL, body, format="json")
    assert answer.status_code == 200, answer.content
    return dict(answer.json())


def _items(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for section in answer["sections"] for item in section["items"]]


def shown_tokens(context: str, items: list[dict[str, Any]]) -> int:
    """What an answer shows, counted: its context and every item's metadata echo."""
    echoes = [json.dumps(i["metadata"], separators=(",", ":"), ensure_ascii=False) for i in items]
    return count_tokens_one(context) + sum(count_tokens_one(e) for e in echoes if e != "{}")


def _check_answer(answer: dict[str, Any], budget: int) -> None:
    assert answer["token_budget"] == budget
    assert answer["tokens"] == shown_tokens(answer["context"], _items(answer)) <= budget
    assert sum(s["tokens"] for s in answer["sections"]) <= budget
    for item in _items(answer):
        assert item["text"] in answer["context"], item


LONG = " ".join(
    f"Sentence {n} of the very long report mentions the lighthouse keeper and the harbour."
    for n in range(400)
)
RUN_ON = "word " * 3000  # one sentence with no end: never cut, so never shown


@pytest.mark.parametrize("budget", [100, 101, 150, 333, 1000, 2000, 7777, 32000])
def test_the_budget_is_never_exceeded_with_items_of_any_size(
    agent_client: AuthedAgent, budget: int
) -> None:
    lines = [("Ana", f"The harbour lighthouse was painted blue in year {n}.") for n in range(60)]
    lines += [("Ana", LONG), ("Ben", RUN_ON.strip()), ("Ana", "Short one. " * 200)]
    conversation = conversation_of(agent_client, lines)
    answer = _ask(
        agent_client,
        query="When was the harbour lighthouse painted, and what did the keeper report?",
        conversation_id=conversation.pk,
        token_budget=budget,
    )
    _check_answer(answer, budget)
    assert answer["tokenizer"].startswith("sentence-transformers/all-MiniLM-L6-v2")
    for item in _items(answer):
        full = next(
            (
                f"{name}: {text}"
                for name, text in lines
                if f"{name}: {text}".startswith(item["text"])
            ),
            None,
        )
        if full is not None and full != item["text"]:
            # Shortened: whole leading sentences only.
            assert SENTENCE_END.search(item["text"]), item["text"][-80:]
    if budget < 3000:  # the run-on line has no sentence end to cut at: whole, or not at all
        assert RUN_ON.strip()[:50] not in answer["context"]


def test_sections_in_seed_order_and_each_item_once(agent_client: AuthedAgent) -> None:
    lines = [("Ana", f"I planted {n} tomato seedlings in the garden today.") for n in range(1, 31)]
    conversation = conversation_of(agent_client, lines)
    conversations_services.summary_create(
        actor=actor_for_agent(agent_client.agent), conversation=conversation, end_turn=25
    )
    answer = _ask(
        agent_client,
        query="How many tomato seedlings did Ana plant?",
        conversation_id=conversation.pk,
        token_budget=4000,
    )
    _check_answer(answer, 4000)
    names = [s["name"] for s in answer["sections"]]
    assert names[:3] == ["immediate", "recent", "history"] and names[-1] == "query"
    assert [n for n in names if n in ORDER] == sorted(
        [n for n in names if n in ORDER], key=ORDER.index
    )
    immediate = answer["sections"][0]["items"]
    assert [i["source"]["turn_number"] for i in immediate] == [26, 27, 28, 29, 30]
    ids = [(i["kind"], i["id"]) for i in _items(answer)]
    assert len(ids) == len(set(ids)), "an item appears twice"
    (summary,) = answer["sections"][1]["items"]
    assert summary["kind"] == "summary"
    assert summary["source"] == {
        "conversation_id": conversation.pk,
        "entry_id": summary["id"],
        "start_turn": 1,
        "end_turn": 25,
    }
    history_turns = {i["id"] for i in answer["sections"][2]["items"]}
    assert not history_turns & {i["id"] for i in immediate}
    # Turns carry their message's metadata exactly as stored.
    assert immediate[0]["metadata"] == {"dia_id": "D1:26", "n": 26}
    # The context reads top down: the query last.
    assert answer["context"].rstrip().endswith("How many tomato seedlings did Ana plant?")


@pytest.fixture
def any_knowledge(tune: Callable[[str, Any], None]) -> None:
    """Every item found is a candidate, on topic or not: a query naming every store's marker
    is close to none of them (the floors have tests of their own)."""
    for name, value in FLOORS_OFF.items():
        tune(name, value)


@pytest.mark.real_embeddings  # each kind is found by meaning, above its similarity floor
@pytest.mark.usefixtures("any_knowledge")
def test_every_kind_of_item_says_where_it_came_from(
    django_capture_on_commit_callbacks: Any,
) -> None:
    side = build_side("PROVQX", django_capture_on_commit_callbacks)
    actor = actor_for_agent(side.agent)
    assert side.conversation is not None
    answer = context_assemble(
        actor=actor,
        request=ContextRequest(
            query="PROVQX deploy Fridays release train harbour notes tomatoes basil node city "
            "skill note",
            conversation_id=side.conversation.pk,
            session_id=side.session_id,
            token_budget=32000,
            task_type=task_types.PROBLEM_SOLVING,
        ),
    )
    items = [item for section in answer.sections for item in section["items"]]
    kinds = {item["kind"]: item for item in items}
    expected_sources = {
        "turn": {"conversation_id", "message_id", "turn_number"},
        "memory": {"context_id", "entry_id"},
        "knowledge": {"base", "key", "version"},
        "chunk": {"knowledge_base_id", "document_id", "chunk_id"},
        "page": {"page_id"},
        "skill": {"skill_id"},
        "pool": {"pool_id", "path"},
        "working": {"session_id", "key"},
    }
    assert set(expected_sources) <= set(kinds), sorted(kinds)
    for kind, keys in expected_sources.items():
        assert set(kinds[kind]["source"]) == keys, (kind, kinds[kind]["source"])
        assert kinds[kind]["text"] in answer.context
    assert kinds["turn"]["source"]["conversation_id"] == side.conversation.pk
    assert kinds["pool"]["source"]["pool_id"] == side.pool_id
    assert kinds["working"]["source"]["session_id"] == side.session_id
    assert answer.tokens == shown_tokens(answer.context, items)


@pytest.mark.usefixtures("any_knowledge")
def test_another_accounts_conversation_and_stores_never_contribute(
    django_capture_on_commit_callbacks: Any,
) -> None:
    own = build_side("OWNCQX", django_capture_on_commit_callbacks)
    intruder = build_side("INTRUDERCQX", django_capture_on_commit_callbacks)
    actor = actor_for_agent(own.agent)
    assert intruder.conversation is not None and own.conversation is not None
    with pytest.raises(Exception) as raised:
        context_assemble(
            actor=actor,
            request=ContextRequest(query="Porto", conversation_id=intruder.conversation.pk),
        )
    assert getattr(raised.value, "code", "") == "conversation_not_found"
    answer = context_assemble(
        actor=actor,
        request=ContextRequest(
            query="INTRUDERCQX moved to Porto deploy Fridays tomatoes harbour",
            conversation_id=own.conversation.pk,
            session_id=own.session_id,
            token_budget=32000,
        ),
    )
    shown = answer.context.replace("INTRUDERCQX moved to Porto deploy Fridays tomatoes", "")
    assert "INTRUDERCQX" not in shown and "intrudercqx" not in shown.lower()
    assert answer.sections and "OWNCQX" in answer.context


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"query": "x", "token_budget": 99}, 400, "validation_error"),
        ({"query": "x", "token_budget": 32001}, 400, "validation_error"),
        ({"query": "x", "sources": ["history", "rumours"]}, 400, "validation_error"),
        ({"query": "x", "task_type": "gossip"}, 400, "validation_error"),
        ({"query": "x", "conversation_id": 987654321}, 404, "conversation_not_found"),
        ({"query": "x" * 4001}, 400, "query_too_long"),
        ({"query": "x", "knowledge_base_ids": [987654321]}, 404, "knowledge_base_not_found"),
        ({}, 400, "validation_error"),
    ],
)
def test_bad_input_is_a_4xx_with_a_code(
    agent_client: AuthedAgent, body: dict[str, Any], status: int, error: str
) -> None:
    answer = agent_client.client.post(URL, body, format="json")
    assert answer.status_code == status and code(answer) == error, answer.content


def test_the_task_type_is_given_or_classified_and_sources_narrow(
    agent_client: AuthedAgent,
) -> None:
    conversation = conversation_of(agent_client, [("Ana", "We fixed the build by pinning gcc.")])
    given = _ask(agent_client, query="hello there", task_type="analysis")
    assert (given["task_type"], given["task_type_source"]) == ("analysis", "given")
    classified = _ask(
        agent_client,
        query="The deployment fails with a segmentation fault; how do I fix it step by step?",
    )
    assert classified["task_type_source"] == "classified"
    assert classified["task_type"] == "problem_solving"
    only = _ask(
        agent_client,
        query="build gcc",
        conversation_id=conversation.pk,
        sources=["history"],
        format="markdown",
    )
    assert {s["name"] for s in only["sections"]} == {"history", "query"}
    assert re.search(
        r"## Relevant history\n\*\*\d+ \w+ \d{4}\*\*\n- Ana: We fixed", only["context"]
    )


def test_a_person_reads_contexts_of_the_accounts_conversations(
    agent_client: AuthedAgent,
) -> None:
    conversation = conversation_of(agent_client, [("Ana", "The boat leaves at noon.")])
    tool = actor_for_account(agent_client.agent.account_id)
    answer = context_assemble(
        actor=tool, request=ContextRequest(query="boat", conversation_id=conversation.pk)
    )
    assert "Ana: The boat leaves at noon." in answer.context
    other = core_services.account_create(name="other", slug="other-ctx")
    with pytest.raises(Exception) as raised:
        context_assemble(
            actor=actor_for_account(other.pk),
            request=ContextRequest(query="boat", conversation_id=conversation.pk),
        )
    assert getattr(raised.value, "code", "") == "conversation_not_found"


def test_fitting_keeps_whole_sentences() -> None:
    text = "First sentence here. Second one is longer than the first! Third? Fourth."
    assert sentences(text) == [
        "First sentence here.",
        "Second one is longer than the first!",
        "Third?",
        "Fourth.",
    ]
    fitted = fit_sentences("#1 ", text, 12)
    assert fitted is not None
    shown, tokens = fitted
    assert shown in (
        "First sentence here.",
        "First sentence here. Second one is longer than the first!",
    )
    assert tokens == count_tokens_one("#1 " + shown) <= 12
    assert fit_sentences("#1 ", "one two three four five six seven eight", 4) is None


def test_unused_share_flows_on_and_the_final_fill_uses_the_rest(
    agent_client: AuthedAgent,
) -> None:
    lines = [("Ana", f"Note {n}: the ferry schedule changed on day {n}.") for n in range(400)]
    conversation = conversation_of(agent_client, lines)
    answer = _ask(
        agent_client,
        query="When did the ferry schedule change?",
        conversation_id=conversation.pk,
        token_budget=3000,
    )
    # Only turns exist: history takes what the other sections leave, near the whole budget.
    assert answer["tokens"] >= 3000 - 40
    assert answer["dropped"]["candidates"] > 0 and answer["dropped"]["tokens"] > 0


def test_api_client_for_unauthenticated_is_401() -> None:
    assert APIClient().post(URL, {"query": "x"}, format="json").status_code == 401


@pytest.mark.real_embeddings  # a ranking
def test_turns_of_a_speaker_the_query_names_rank_higher(
    agent_client: AuthedAgent, tune: Callable[[str, Any], None]
) -> None:
    import numpy as np

    from core.embeddings import get_embedding_provider

    lines = [("Ben", "I take the ferry to the island every Monday.")] + [
        ("Ana", f"Filler line number {n} about the weather.") for n in range(10)
    ]
    lines += [("Ana", "I take the ferry to the island on Fridays.")]
    conversation = conversation_of(agent_client, lines)
    query = "When does Ana take the ferry to the island?"
    vector = np.asarray(get_embedding_provider().embed_query(query), dtype=np.float32)
    actor = actor_for_agent(agent_client.agent)
    boosted = {c.text: c.score for c in sources.history(actor, conversation, query, vector)[0]}
    unnamed = "When does the ferry leave?"
    unnamed_vector = np.asarray(get_embedding_provider().embed_query(unnamed), dtype=np.float32)
    unnamed_boosted = sources.history(actor, conversation, unnamed, unnamed_vector)[0]
    boost = TUNING.sources.speaker_boost
    assert boost > 0
    tune("memory.sources.speaker_boost", 0.0)
    plain = {c.text: c.score for c in sources.history(actor, conversation, query, vector)[0]}
    # A query that names nobody is not boosted.
    assert [(c.text, c.score) for c in unnamed_boosted] == [
        (c.text, c.score) for c in sources.history(actor, conversation, unnamed, unnamed_vector)[0]
    ]
    for text, score in plain.items():
        factor = 1 + boost if text.startswith("Ana: ") else 1.0
        assert boosted[text] == pytest.approx(score * factor)
    best = max(boosted, key=boosted.__getitem__)
    assert best == "Ana: I take the ferry to the island on Fridays."


@pytest.mark.real_embeddings  # items are found by meaning, above their similarity floors
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("any_knowledge")
def test_the_searches_run_side_by_side_and_give_the_same_context(
    django_capture_on_commit_callbacks: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a transaction, history, memories and knowledge run on threads of their own, each
    with its own connection (core.side_by_side); the context is the one they give in turn."""
    import threading

    side = build_side("SIDEQX", django_capture_on_commit_callbacks)
    assert side.conversation is not None
    actor = actor_for_agent(side.agent)
    threads: dict[str, str] = {}
    for name in ("history", "memories", "knowledge"):
        real = getattr(sources, name)

        def recorded(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            threads[_name] = threading.current_thread().name
            return _real(*args, **kwargs)

        monkeypatch.setattr(sources, name, recorded)
    request = ContextRequest(
        query="SIDEQX deploy Fridays release train harbour notes tomatoes basil",
        conversation_id=side.conversation.pk,
        token_budget=4000,
        task_type=task_types.PROBLEM_SOLVING,
    )
    settings.SIDE_BY_SIDE_THREADS = 2
    together = context_assemble(actor=actor, request=request)
    assert sum(name.startswith("engram-side") for name in threads.values()) == 2, threads
    assert {"history", "memories", "knowledge"} <= set(together.timings_ms)
    settings.SIDE_BY_SIDE_THREADS = 0
    threads.clear()
    in_turn = context_assemble(actor=actor, request=request)
    assert set(threads.values()) == {threading.current_thread().name}
    assert together.context == in_turn.context
    kinds = {item["kind"] for section in together.sections for item in section["items"]}
    assert {"turn", "memory", "knowledge"} <= kinds


def test_history_and_memories_read_as_many_statements_whatever_they_find(
    agent_client: AuthedAgent, tune: Callable[[str, Any], None]
) -> None:
    """The hits' entries are loaded with the fields their candidates read (``TURN_FIELDS``,
    ``MEMORY_FIELDS``) in one statement: a field left out would be read once per hit."""
    import numpy as np
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from core.embeddings import get_embedding_provider
    from memory.long_term import services as ltm

    tune("memory.floors.memory_min_similarity", None)  # every memory found, shown
    actor = actor_for_agent(agent_client.agent)
    memory = ltm.agent_memory_context(actor=actor)
    query = "When did Ana's ferry leave the harbour?"
    vector = np.asarray(get_embedding_provider().embed_query(query), dtype=np.float32)
    reads, written = [], 0
    for count in (3, 30):
        conversation = conversation_of(
            agent_client,
            [("Ana", f"The ferry left the harbour at {n} o'clock.") for n in range(count)],
        )
        ltm.entries_write(
            actor=actor,
            context=memory,
            items=[ltm.EntryInput(f"Ferry timetable note {count}-{n}.") for n in range(count)],
        )
        with CaptureQueriesContext(connection) as history_reads:
            turns = sources.history(actor, conversation, query, vector)[0]
        with CaptureQueriesContext(connection) as memory_reads:
            memories = sources.memories(actor, query, vector)[0]
        assert len(turns) == count
        written += count
        assert len(memories) == min(written, TUNING.sources.memory_candidates)
        assert all(c.text.startswith("Ana: The ferry") and c.metadata["dia_id"] for c in turns)
        assert all(c.text.startswith("Ferry timetable") and c.prefix == "" for c in memories)
        reads.append((len(history_reads), len(memory_reads)))
    # As many statements for 33 memories and 30 turns as for 3 (a fixed few).
    assert reads[0] == reads[1] and max(reads[0]) <= 10, reads


def test_an_archived_context_of_the_agent_is_left_out_not_an_error(
    agent_client: AuthedAgent,
) -> None:
    """Memories come from the contexts the agent may read that are not archived: archiving
    one of them leaves its entries out of the context (it was a 404 ``context_not_found``
    while the archived context was still asked for by id)."""
    from memory.long_term import services as ltm

    actor = actor_for_agent(agent_client.agent)
    live = ltm.agent_memory_context(actor=actor)
    old = ltm.context_create(actor=actor, name="old notes")
    ltm.entries_write(actor=actor, context=live, items=[ltm.EntryInput("The ferry leaves at 9.")])
    ltm.entries_write(actor=actor, context=old, items=[ltm.EntryInput("The ferry left at 7.")])
    ltm.context_archive(actor=actor, context=old, archived=True)
    conversation = conversation_of(agent_client, [("Ana", "Shall we take the ferry?")])

    answer = _ask(agent_client, query="When does the ferry leave?", conversation_id=conversation.pk)

    memories = [item["text"] for item in _items(answer) if item["kind"] == "memory"]
    assert memories == ["The ferry leaves at 9."]
    assert [item["text"] for item in _items(answer) if item["kind"] == "turn"] == [
        "Ana: Shall we take the ferry?"
    ]


def test_an_archived_conversation_shows_its_last_turns_and_searches_no_history(
    agent_client: AuthedAgent,
) -> None:
    from memory.long_term import services as ltm

    actor = actor_for_agent(agent_client.agent)
    lines = [("Ana", f"Note {n} about the weather.") for n in range(12)]
    conversation = conversation_of(agent_client, [("Ana", "The ferry leaves at 9."), *lines])
    asked = {"query": "When does the ferry leave?", "conversation_id": conversation.pk}
    found = [item["text"] for item in _items(_ask(agent_client, **asked))]
    assert "Ana: The ferry leaves at 9." in found  # found by the history search
    ltm.context_archive(actor=actor, context=conversation.context, archived=True)

    answer = _ask(agent_client, **asked)

    sections = {section["name"]: section["items"] for section in answer["sections"]}
    assert [item["text"] for item in sections["immediate"]] == [
        f"Ana: Note {n} about the weather." for n in range(7, 12)
    ]
    # The older turns are still read, newest first, to fill the budget, but none is ranked:
    # the search found nothing in an archived context.
    assert {item["score"] for item in sections["history"]} == {0.0}
    assert "Ana: The ferry leaves at 9." in [item["text"] for item in sections["history"]]
