"""Reads never deadlock with writes: real threads, each on its own PostgreSQL connection,
writing to and reading one context at the same time (docs/memory/long-term.md, "Reads and writes at
the same time").

A search records its hits as reads. When that happened in the search's own statement (counts
on the entries, a log row whose foreign key share-locks the context), it collided with a writer
holding the context's row lock and updating the same entries: PostgreSQL killed one of the two
with a deadlock, and the client saw 503. Reads now buffer what they read (Redis) and a job
applies it in the writers' lock order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connections, transaction

from core.actors import Actor, actor_for_agent
from memory.context.assembly import ContextRequest, context_assemble
from memory.context.services.search import memory_search_run
from memory.conversations import services as conversations_services
from memory.long_term import services as ltm
from memory.long_term.services import access
from memory.long_term.services.index import context_lock
from memory.models import Conversation, MemoryAccessLog, MemoryEntry
from tests.conftest import AuthedAgent

pytestmark = pytest.mark.django_db(transaction=True)

WORDS = ["harbour", "lantern", "orchard", "glacier", "violin", "saffron", "tundra", "quartz"]


def _conversation(actor: Actor, messages: int) -> Conversation:
    conversation = conversations_services.conversation_create(
        actor=actor, title="busy", summary_every=0
    )
    conversations_services.messages_append(
        actor=actor,
        conversation=conversation,
        messages=[
            conversations_services.MessageInput(
                "user", f"The {WORDS[n % len(WORDS)]} note number {n} about the trip."
            )
            for n in range(messages)
        ],
    )
    return conversation


def _run_together(work: dict[str, Callable[[int], None]], rounds: int) -> list[str]:
    """Each worker on its own thread (its own connection), started together, ``rounds`` calls
    each; the errors they met, as ``name: exception``."""
    start = threading.Barrier(len(work))
    errors: list[str] = []

    def run(name: str, step: Callable[[int], None]) -> None:
        try:
            start.wait()
            for n in range(rounds):
                step(n)
        except BaseException as exc:
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=item) for item in work.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a worker hung"
    return errors


def test_writers_and_readers_of_one_context_in_parallel_meet_no_error(
    agent_client: AuthedAgent,
) -> None:
    actor = actor_for_agent(agent_client.agent)
    conversation = _conversation(actor, 12)
    context_id = conversation.context_id
    memory = ltm.entries_create(
        actor=actor,
        context_id=context_id,
        items=[ltm.EntryInput(content=f"A {word} fact kept by the agent.") for word in WORDS],
    )
    lineage = memory[0].lineage

    def append(n: int) -> None:
        conversations_services.messages_append(
            actor=actor,
            conversation=conversation,
            messages=[
                conversations_services.MessageInput(
                    "assistant", f"Reply {n}: the {WORDS[(n + i) % len(WORDS)]} again."
                )
                for i in range(3)
            ],
        )

    def write_memory(n: int) -> None:
        current = MemoryEntry.objects.get(lineage=lineage, is_current=True)
        ltm.entry_update(actor=actor, entry=current, fields={"content": f"The harbour fact {n}."})
        ltm.entries_create(
            actor=actor,
            context_id=context_id,
            items=[ltm.EntryInput(content=f"New {WORDS[n % len(WORDS)]} memory {n}.")],
        )

    def search(n: int) -> None:
        memory_search_run(actor=actor, query=f"{WORDS[n % len(WORDS)]} trip", top_k=20)

    def search_long_term(n: int) -> None:
        ltm.long_term_search_run(actor=actor, query=f"{WORDS[(n + 3) % len(WORDS)]}", top_k=20)

    def read(n: int) -> None:
        recent = list(
            MemoryEntry.objects.filter(context_id=context_id, is_current=True)
            .order_by("-pk")
            .values_list("pk", flat=True)[:5]
        )
        for entry_id in recent:
            ltm.entry_read(actor=actor, entry_id=entry_id)

    def assemble(n: int) -> None:
        context_assemble(
            actor=actor,
            request=ContextRequest(
                query=f"What about the {WORDS[n % len(WORDS)]}?",
                conversation_id=conversation.pk,
                token_budget=400,
                sources=["recent_turns", "history", "memories"],
            ),
        )

    errors = _run_together(
        {
            "append": append,
            "write_memory": write_memory,
            "search": search,
            "search_long_term": search_long_term,
            "read": read,
            "assemble": assemble,
        },
        rounds=8,
    )
    assert errors == []
    access.access_flush()
    # Every read was recorded: the log holds each search's hits and each entry read.
    logged = MemoryAccessLog.objects.filter(context_id=context_id)
    assert logged.filter(action=MemoryAccessLog.Action.READ).count() == 8 * 5
    assert logged.filter(action=MemoryAccessLog.Action.SEARCH).exists()


def _holding_the_context_lock(context_id: int, held: threading.Event, release: threading.Event):
    """A writer's transaction that holds ``context_id``'s row lock until ``release``."""

    def hold() -> None:
        try:
            with transaction.atomic():
                context_lock(context_id)
                held.set()
                assert release.wait(30)
        finally:
            connections.close_all()

    return threading.Thread(target=hold)


def test_a_read_is_recorded_without_waiting_for_a_writer_of_its_context(
    agent_client: AuthedAgent,
) -> None:
    actor = actor_for_agent(agent_client.agent)
    conversation = _conversation(actor, 6)
    held, release, done = threading.Event(), threading.Event(), threading.Event()
    writer = _holding_the_context_lock(conversation.context_id, held, release)
    writer.start()
    assert held.wait(30)
    found: dict[str, Any] = {}

    def reader() -> None:
        try:
            found["search"] = memory_search_run(actor=actor, query="harbour trip", top_k=5)
            entry_id = found["search"].results[0].entry.pk
            found["read"] = ltm.entry_read(actor=actor, entry_id=entry_id)
        finally:
            connections.close_all()
            done.set()

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        # The reader answers while the writer still holds the lock: it waits on nothing.
        assert done.wait(30), "the read waited for the writer"
    finally:
        release.set()
        writer.join()
        thread.join()
    hit = found["search"].results[0].entry
    assert found["read"].pk == hit.pk
    assert found["read"].access_count == 1  # the read's own view counts itself
    # Applied once the flush runs, not before.
    assert MemoryEntry.objects.get(pk=hit.pk).access_count == 0
    access.access_flush()
    assert MemoryEntry.objects.get(pk=hit.pk).access_count == 2  # the search and the read
