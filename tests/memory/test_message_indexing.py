"""A conversation's messages are stored at once and indexed by a worker
(docs/memory/conversations.md, "When a message becomes searchable"): the last turns show at
once, search copes with messages not indexed yet, the worker's claims survive concurrent appends and
a provider that is down, the index ends exact (compared with a rebuild), and a batch is bounded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from core.actors import Actor, actor_for_agent
from core.embeddings.base import EmbeddingError
from memory import tasks
from memory.conversations import services
from memory.long_term import services as ltm
from memory.long_term.selectors import long_term_search
from memory.long_term.services import pending
from memory.models import Conversation, MemoryContext, MemoryEntry, PendingIndex
from tests.conftest import AuthedAgent
from tests.factories import UserFactory
from tests.memory.conftest import code
from tests.memory.test_long_term_services import assert_index_exact
from tests.support.mcp import tool_call

pytestmark = pytest.mark.django_db
BASE = "/api/v1/memory/conversations"


@pytest.fixture
def worker_away(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No worker has indexed anything yet: the append's own inline run does nothing."""
    monkeypatch.setattr(services, "pending_index_run", lambda **kwargs: {})
    yield


def _chat(actor: Actor) -> Conversation:
    return services.conversation_create(actor=actor, title="trip", summary_every=0)


def _append(actor: Actor, chat: Conversation, *texts: str) -> list[MemoryEntry]:
    return services.messages_append(
        actor=actor,
        conversation=Conversation.objects.get(pk=chat.pk),
        messages=[services.MessageInput("user", text, "Ana") for text in texts],
    )


def _found(actor: Actor, query: str, mode: str = "hybrid") -> list[int]:
    hits, _ = long_term_search(actor=actor, query=query, top_k=10, mode=mode)
    return [hit.entry.pk for hit in hits]


@pytest.mark.usefixtures("worker_away")
def test_stored_at_once_shown_as_recent_turns_and_searchable_once_indexed(
    agent_client: AuthedAgent,
) -> None:
    actor = actor_for_agent(agent_client.agent)
    chat = _chat(actor)
    written = _append(actor, chat, "We booked a cabin near the fjord.", "The ferry leaves at six.")
    assert [m.position for m in written] == [1, 2]
    context = MemoryContext.objects.get(pk=chat.context_id)
    # Stored, not indexed: no postings, no vector, waiting for a worker.
    assert (context.entry_count, context.total_terms) == (0, 0)
    assert all(m.embedding_model == "" for m in written)
    assert set(PendingIndex.objects.values_list("entry_id", flat=True)) == {m.pk for m in written}
    # A search copes (finds nothing yet, fails nothing), in every mode.
    for mode in ("hybrid", "keyword", "vector"):
        assert _found(actor, "ferry fjord cabin", mode) == []
    # The recent turns do not wait for the index.
    answer = agent_client.client.post(
        "/api/v1/memory/context",
        {"query": "When does the ferry leave?", "conversation_id": chat.pk, "token_budget": 500},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    immediate = answer.json()["sections"][0]
    assert immediate["name"] == "immediate"
    assert [i["id"] for i in immediate["items"]] == [m.pk for m in written]

    # A client sees what waits on the conversation itself.
    detail = agent_client.client.get(f"{BASE}/{chat.pk}").json()
    assert detail["indexing"] == {"waiting": 2, "unsearchable": 2, "failed": 0, "error": ""}

    counts = pending.pending_index_run(context_id=chat.context_id)
    assert (counts["keyword"], counts["embedded"], counts["more"]) == (2, 2, 0)
    assert not PendingIndex.objects.exists()
    assert agent_client.client.get(f"{BASE}/{chat.pk}").json()["indexing"]["waiting"] == 0
    assert set(_found(actor, "ferry fjord cabin", "keyword")) == {m.pk for m in written}
    assert set(_found(actor, "boat departure time", "vector")) >= {written[1].pk}
    assert_index_exact(context)


@pytest.mark.usefixtures("worker_away")
def test_appends_before_the_worker_runs_reindex_the_neighbours_they_change(
    agent_client: AuthedAgent,
) -> None:
    actor = actor_for_agent(agent_client.agent)
    chat = _chat(actor)
    first = _append(actor, chat, "one apple", "two pears", "three plums")
    pending.pending_index_run(context_id=chat.context_id)
    assert not PendingIndex.objects.exists()
    # The next message is inside the keyword window of the last two, the embedding window of
    # the last one: they wait again, the oldest keeps its vector.
    (fourth,) = _append(actor, chat, "four figs")
    rows = {r.entry_id: (r.keyword, r.embed, r.indexed) for r in PendingIndex.objects.all()}
    assert rows == {
        fourth.pk: (True, True, False),
        first[1].pk: (True, False, True),
        first[2].pk: (True, True, True),
    }
    _append(actor, chat, "five kiwis")
    pending.pending_index_run(context_id=chat.context_id)
    assert not PendingIndex.objects.exists()
    assert_index_exact(MemoryContext.objects.get(pk=chat.context_id))
    # "figs" is in the windows of the entries two either side of it.
    assert len(_found(actor, "figs", "keyword")) == 4


@pytest.mark.usefixtures("worker_away")
def test_a_worker_that_loses_its_claim_leaves_the_row_to_the_next_run(
    agent_client: AuthedAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    actor = actor_for_agent(agent_client.agent)
    chat = _chat(actor)
    _append(actor, chat, "red", "green")
    real = pending._keyword_swap

    def append_meanwhile(*args: Any, **kwargs: Any) -> None:
        # Between the worker's claim and its swap, another message changes the neighbours.
        monkeypatch.setattr(pending, "_keyword_swap", real)
        _append(actor, chat, "blue")
        real(*args, **kwargs)

    monkeypatch.setattr(pending, "_keyword_swap", append_meanwhile)
    pending._keyword_batch(chat.context_id)
    # Both old rows were queued again (claim reset): the swap wrote neither.
    assert PendingIndex.objects.filter(keyword=True).count() == 3
    assert MemoryContext.objects.get(pk=chat.context_id).entry_count == 0
    pending.pending_index_run(context_id=chat.context_id)
    assert_index_exact(MemoryContext.objects.get(pk=chat.context_id))
    assert len(_found(actor, "blue", "keyword")) == 3


@pytest.mark.usefixtures("worker_away")
def test_other_writes_meeting_waiting_messages_keep_the_index_exact(
    agent_client: AuthedAgent,
) -> None:
    actor = actor_for_agent(agent_client.agent)
    chat = _chat(actor)
    written = _append(actor, chat, "alpha line", "beta line", "gamma line", "delta line")
    context = MemoryContext.objects.get(pk=chat.context_id)
    # A new version of a waiting message: indexed now, with its waiting neighbours.
    ltm.entry_update(actor=actor, entry=written[1], fields={"content": "beta changed"})
    # A waiting message archived: out of the index, waiting for nothing.
    ltm.entries_archive(actor=actor, context=context, entries=[written[3]], archived=True)
    assert not PendingIndex.objects.filter(entry_id=written[3].pk).exists()
    assert_index_exact(MemoryContext.objects.get(pk=chat.context_id))
    pending.pending_index_run(context_id=chat.context_id)
    assert not PendingIndex.objects.exists()
    assert_index_exact(MemoryContext.objects.get(pk=chat.context_id))


@pytest.mark.usefixtures("worker_away")
def test_deleting_waiting_messages_takes_their_rows_with_them(agent_client: AuthedAgent) -> None:
    actor = actor_for_agent(agent_client.agent)
    chat, other = _chat(actor), _chat(actor)
    (entry,) = _append(actor, chat, "Deleted before its index.")
    _append(actor, other, "Kept waiting.")
    ltm.entry_delete(actor=actor, entry=entry)
    services.conversation_delete(actor=actor, conversation=Conversation.objects.get(pk=other.pk))
    assert not PendingIndex.objects.exists()


@pytest.mark.usefixtures("worker_away")
def test_an_unavailable_provider_fails_visibly_after_bounded_attempts(
    agent_client: AuthedAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    actor = actor_for_agent(agent_client.agent)
    chat = _chat(actor)
    written = _append(actor, chat, "The locker code is 4417.")

    class Down:
        model_id = "down"

        def embed_documents(self, texts: list[str]) -> Any:
            raise EmbeddingError("connection refused")

    monkeypatch.setattr(pending, "get_embedding_provider", lambda: Down())
    for _ in range(pending.MAX_ATTEMPTS):
        with pytest.raises(EmbeddingError):
            pending.pending_index_run(context_id=chat.context_id)
    # Found by keyword already; the embedding waits, then fails with its error.
    assert _found(actor, "locker code", "keyword") == [written[0].pk]
    row = PendingIndex.objects.get()
    assert row.failed_at is None and row.error == "connection refused"
    assert pending.pending_index_run(context_id=chat.context_id)["failed"] == 1
    row.refresh_from_db()
    assert row.failed_at is not None and "Gave up" in row.error
    assert pending.pending_contexts() == []
    # The operator sees it on the conversation's page and retries once the provider is back.
    person = Client()
    person.force_login(UserFactory.create(is_staff=True, is_superuser=True))
    page = person.get(reverse("admin:memory_conversation_change", args=[chat.pk]))
    assert "1 failed" in page.content.decode()
    monkeypatch.undo()
    monkeypatch.setattr(services, "pending_index_run", lambda **kwargs: {})
    retried = person.post(
        reverse("admin:memory_conversation_changelist"),
        {"action": "retry_indexing", "_selected_action": [chat.pk]},
    )
    assert retried.status_code == 302
    assert pending.pending_contexts() == [chat.context_id]
    tasks.index_pending_sweep.apply()  # eager: the context's task runs here
    assert not PendingIndex.objects.exists()
    assert _found(actor, "what opens the locker", "vector") == [written[0].pk]


def test_a_busy_conversation_queues_one_run_at_a_time(
    agent_client: AuthedAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[int] = []
    monkeypatch.setattr(pending, "task_send", lambda task, context_id: sent.append(context_id))
    context_id = _chat(actor_for_agent(agent_client.agent)).context_id
    pending.index_soon(context_id)
    pending.index_soon(context_id)  # the first is still queued: no second task
    assert sent == [context_id]
    pending.index_started(context_id)  # a worker took it: the next append sends another
    pending.index_soon(context_id)
    assert sent == [context_id, context_id]
    pending.index_started(context_id)


def test_the_sweep_is_a_periodic_job_with_a_dry_run(agent_client: AuthedAgent) -> None:
    from core.jobs import periodic_jobs
    from core.models import JobRun

    jobs = {job.name: job for job in periodic_jobs()}
    sweep = jobs["memory.index_pending"]
    assert (sweep.every_seconds, sweep.expires_seconds) == (60, 55)
    assert tasks.index_pending_sweep.apply(kwargs={"dry_run": True}).get() == {
        "contexts": 0,
        "sent": 0,
        "dry_run": 1,
    }
    assert JobRun.objects.filter(job="memory.index_pending", status="succeeded").exists()


@pytest.mark.django_db(transaction=True)
def test_through_the_api_the_task_on_commit_indexes_the_batch(agent_client: AuthedAgent) -> None:
    chat = agent_client.client.post(BASE, {"title": "t", "summary_every": 0}, format="json")
    chat_id = chat.json()["id"]
    answer = agent_client.client.post(
        f"{BASE}/{chat_id}/messages",
        {"messages": [{"role": "user", "content": f"Line {n} about marmalade."} for n in range(5)]},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    assert [m["turn_number"] for m in answer.json()["results"]] == [1, 2, 3, 4, 5]
    assert not PendingIndex.objects.exists()  # Celery is eager here: indexed on commit
    found = agent_client.client.post(
        "/api/v1/memory/search", {"query": "marmalade", "tiers": ["long_term"]}, format="json"
    )
    assert found.status_code == 200, found.content
    assert len(found.json()["results"]) == 5


@pytest.mark.parametrize(
    ("messages", "status", "error"),
    [
        ([{"role": "user", "content": "x"}] * 1001, 400, "invalid_batch_size"),
        ([{"role": "user", "content": "x" * 100_000}] * 21, 413, "batch_too_large"),
    ],
)
def test_a_batch_is_bounded(
    agent_client: AuthedAgent, messages: list[dict[str, str]], status: int, error: str
) -> None:
    chat = _chat(actor_for_agent(agent_client.agent))
    answer = agent_client.client.post(
        f"{BASE}/{chat.pk}/messages", {"messages": messages}, format="json"
    )
    assert answer.status_code == status and code(answer) == error, answer.content[:300]
    assert not MemoryEntry.objects.filter(context_id=chat.context_id).exists()
    if error == "batch_too_large":
        assert answer.json()["error"]["details"] == {
            "limit": services.MAX_BATCH_CHARS,
            "size": 2_100_000,
        }
    # The MCP tool answers the same code.
    result = tool_call(
        agent_client.secret,
        "conversation",
        {"action": "add_messages", "conversation_id": chat.pk, "messages": messages},
    )
    assert result["structuredContent"]["error"]["code"] == error
    assert not MemoryEntry.objects.filter(context_id=chat.context_id).exists()
