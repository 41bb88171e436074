"""Long-term memory services and search on the real PostgreSQL with pgvector: the index stays
exact through writes, versions, archives and deletes (compared with a rebuild from scratch)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from core.actors import Actor, actor_for_agent
from core.errors import Conflict
from memory.long_term import services as ltm
from memory.long_term.indexing import indexed_texts
from memory.long_term.selectors import LongTermFilters, long_term_search
from memory.models import MemoryContext, MemoryEntry, MemoryEntryPosting, MemoryEntryTerm
from memory.spaces import MEMORY_ENTRIES
from rag import keyword
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def me() -> Actor:
    return actor_for_agent(AgentFactory.create())


@pytest.fixture
def context(me: Actor) -> MemoryContext:
    return ltm.context_create(actor=me, name="notes")


def write(actor: Actor, context: MemoryContext, *texts: str, **fields: object) -> list[MemoryEntry]:
    return ltm.entries_write(
        actor=actor,
        context=context,
        items=[ltm.EntryInput(content=text, **fields) for text in texts],  # type: ignore[arg-type]
    )


def index_state(context: MemoryContext) -> tuple[dict[str, int], Counter[int], int, int]:
    context.refresh_from_db()
    df = dict(MemoryEntryTerm.objects.filter(context=context).values_list("term", "df"))
    postings = Counter(
        MemoryEntryPosting.objects.filter(context=context).values_list("entry_id", flat=True)
    )
    return df, postings, context.entry_count, context.total_terms


def assert_index_exact(context: MemoryContext) -> None:
    """The incrementally kept index equals the one rebuilt from the searchable entries."""
    before = index_state(context)
    searchable = list(
        MemoryEntry.objects.filter(context=context, is_current=True, archived_at__isnull=True)
    )
    texts, _ = indexed_texts(searchable)
    expected_df: Counter[str] = Counter()
    for text in texts:
        expected_df.update(set(keyword.analyze(text)))
    assert before[0] == dict(expected_df)
    assert set(before[1]) == {
        e.pk for e, text in zip(searchable, texts, strict=True) if keyword.analyze(text)
    }
    assert before[2] == len(searchable)
    keyword.index_rebuild(space=MEMORY_ENTRIES, scope_id=context.pk)
    assert index_state(context) == before


def test_write_search_explains_every_hit(me: Actor, context: MemoryContext) -> None:
    write(me, context, "The deploy runs on Fridays at noon.", "Cats sleep most of the day.")
    hits, stages = long_term_search(actor=me, query="when do deploys run?", top_k=2)
    assert hits[0].entry.content.startswith("The deploy")
    assert set(hits[0].components) == {"similarity", "importance", "confidence", "recency"}
    assert hits[0].score == pytest.approx(
        0.7 * hits[0].components["similarity"]
        + 0.1 * (hits[0].components["importance"] + hits[0].components["confidence"])
        + 0.1 * hits[0].components["recency"],
        abs=1e-5,
    )
    assert hits[0].retrieval["keyword_rank"] == 1
    assert {"vector", "keyword", "fusion"} <= set(stages)
    assert_index_exact(context)


def test_update_writes_a_version_and_only_the_current_one_is_found(
    me: Actor, context: MemoryContext
) -> None:
    (first,) = write(me, context, "The office is in Lisbon.")
    second = ltm.entry_update(actor=me, entry=first, fields={"content": "The office is in Porto."})
    assert (second.version, second.previous_id, second.lineage) == (2, first.pk, first.lineage)
    first.refresh_from_db()
    assert not first.is_current
    hits, _ = long_term_search(actor=me, query="office Lisbon Porto", mode="keyword")
    assert [h.entry.pk for h in hits] == [second.pk]
    with pytest.raises(Conflict) as stale:
        ltm.entry_update(actor=me, entry=first, fields={"content": "Madrid"})
    assert stale.value.code == "version_conflict"
    with pytest.raises(Conflict):  # history is read-only, in place too
        ltm.entry_update(actor=me, entry=first, fields={"importance": 0.9})
    with pytest.raises(Conflict):
        ltm.entry_importance_adjust(actor=me, entry=first, delta=0.1)
    with pytest.raises(Conflict):
        ltm.entry_update(actor=me, entry=second, fields={"content": "Madrid"}, expected_version=1)
    assert_index_exact(context)


def test_threaded_entries_are_indexed_with_their_neighbours(
    me: Actor, context: MemoryContext
) -> None:
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    lines = [
        "Caroline: I went to the LGBTQ support group yesterday.",
        "Melanie: How was it?",
        "Caroline: It was really powerful!",
    ]
    for position, line in enumerate(lines):
        # Written one at a time: each write re-indexes the neighbours before it.
        write(me, context, line, thread="s1", position=position, occurred_at=when)
    hits, _ = long_term_search(actor=me, query="support group powerful", mode="keyword", top_k=3)
    assert len(hits) == 3  # every line's window includes "support group" and "powerful"
    hits, _ = long_term_search(actor=me, query="May 2023", mode="keyword", top_k=3)
    assert len(hits) == 3
    assert_index_exact(context)
    last = MemoryEntry.objects.get(context=context, position=2)
    ltm.entries_archive(actor=me, context=context, entries=[last], archived=True)
    assert_index_exact(context)
    hits, _ = long_term_search(actor=me, query="powerful", mode="keyword", top_k=3)
    assert hits == []
    last.refresh_from_db()
    ltm.entries_archive(actor=me, context=context, entries=[last], archived=False)
    assert_index_exact(context)


def test_snapshot_restore_loses_nothing(me: Actor, context: MemoryContext) -> None:
    _kept, changed, deleted = write(me, context, "alpha fact", "beta fact", "gamma fact")
    snapshot = ltm.snapshot_create(actor=me, context=context, name="before")
    ltm.entry_update(actor=me, entry=changed, fields={"content": "beta changed"})
    ltm.entry_delete(actor=me, entry=deleted)
    (later,) = write(me, context, "delta fact")
    report = ltm.snapshot_restore(actor=me, snapshot=snapshot)
    assert (report.restored, report.recreated, report.archived, report.unchanged) == (1, 1, 1, 1)
    current = MemoryEntry.objects.filter(context=context, is_current=True, archived_at=None)
    assert sorted(current.values_list("content", flat=True)) == [
        "alpha fact",
        "beta fact",
        "gamma fact",
    ]
    assert MemoryEntry.objects.filter(lineage=changed.lineage).count() == 3  # history kept
    later.refresh_from_db()
    assert later.archived_at is not None
    assert_index_exact(context)


def test_filters_and_importance(me: Actor, context: MemoryContext) -> None:
    (decision,) = write(me, context, "We chose PostgreSQL.", entry_type="decision")
    write(me, context, "PostgreSQL was slow once.", entry_type="observation")
    hits, _ = long_term_search(
        actor=me, query="PostgreSQL", filters=LongTermFilters(entry_types=("decision",))
    )
    assert [h.entry.pk for h in hits] == [decision.pk]
    boosted = ltm.entry_importance_adjust(actor=me, entry=decision, delta=0.9)
    assert boosted.importance == 1.0
    reduced = ltm.entry_importance_adjust(actor=me, entry=decision, delta=-1)
    assert reduced.importance == 0.0


def test_another_agent_sees_nothing_without_a_grant(me: Actor, context: MemoryContext) -> None:
    write(me, context, "secret plan")
    assert me.agent is not None
    other = actor_for_agent(AgentFactory.create(account=me.agent.account))
    assert long_term_search(actor=other, query="secret plan")[0] == []
    ltm.context_grant(actor=me, context=context, agent_id=other.agent_id or 0, level="read")
    assert len(long_term_search(actor=other, query="secret plan")[0]) == 1
    stranger = actor_for_agent(AgentFactory.create())
    assert long_term_search(actor=stranger, query="secret plan")[0] == []


def test_an_agent_has_a_memory_of_its_own(me: Actor) -> None:
    own = ltm.agent_memory_context(actor=me)
    assert (own.owner_id, own.scope, own.context_type) == (me.agent_id, "agent", "agent_memory")
    assert ltm.agent_memory_context(actor=me).pk == own.pk
    assert me.agent is not None
    other = actor_for_agent(AgentFactory.create(account=me.agent.account))
    assert ltm.agent_memory_context(actor=other).pk != own.pk


@pytest.mark.django_db(transaction=True)
def test_deleting_a_context_cascades_its_index(me: Actor, context: MemoryContext) -> None:
    """PostgreSQL deletes the postings and terms (memory migration 0003): the deferred foreign
    keys are checked at a real commit, hence a transactional test."""
    ltm.entries_write(
        actor=me,
        context=context,
        items=[
            ltm.EntryInput(content=t, thread="s1", position=i)
            for i, t in enumerate(["apples grow", "pears ripen"])
        ],
    )
    assert MemoryEntryPosting.objects.filter(context=context).exists()
    ltm.context_delete(actor=me, context=context)
    assert not MemoryEntry.objects.filter(context_id=context.pk).exists()
    assert not MemoryEntryPosting.objects.filter(context_id=context.pk).exists()
    assert not MemoryEntryTerm.objects.filter(context_id=context.pk).exists()


def test_entry_pages_keep_room_for_the_reads_every_search_records() -> None:
    """Recording a search's hits updates their rows; with free space on the page PostgreSQL
    updates them in place instead of inserting into every index, HNSW included (migration
    0015, docs/benchmarks-log.md)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE oid = 'memory_memoryentry'::regclass")
        (options,) = cursor.fetchone()
    assert "fillfactor=80" in (options or [])


def test_a_question_asking_for_several_things_spreads_its_best_over_sessions(
    me: Actor, context: MemoryContext, tune: Callable[[str, Any], None]
) -> None:
    """``memory.search.session_diversity``: "What books ...?" asks for several things, so a
    graph search spreads its best entries over their threads (``rag.granularity.group_diversify``),
    the ranks keeping their scores; "What book ...?", and any hybrid search, rank as without."""
    from rag.granularity import group_diversify

    first = [
        "Melanie: I read a book about whales, the best book I read.",
        "Melanie: I read another book, a book about stars.",
        "Melanie: The book about stars is a book I read twice.",
    ]
    for position, line in enumerate(first):
        write(me, context, line, thread="session_1", position=position)
    write(me, context, "Melanie: My club read a mystery novel.", thread="session_2", position=0)
    write(
        me, context, "Caroline: The weather was lovely at the lake.", thread="session_3", position=0
    )
    threads = dict(MemoryEntry.objects.filter(context=context).values_list("pk", "thread"))

    def ranked(query: str, weight: float, mode: str = "graph") -> list[tuple[int, float]]:
        tune("memory.search.session_diversity", weight)
        hits, _ = long_term_search(actor=me, query=query, mode=mode, top_k=5)
        return [(hit.entry.pk, hit.retrieval["score"]) for hit in hits]

    several = "What books has Melanie read?"
    plain = ranked(several, 0.0)
    spread = ranked(several, 0.9)
    assert [unit for unit, _ in spread] == [
        unit for unit, _ in group_diversify(plain, threads, weight=0.9)
    ]
    assert [unit for unit, _ in spread] != [unit for unit, _ in plain]
    assert [score for _, score in spread] == pytest.approx([score for _, score in plain])
    novel = next(pk for pk, thread in threads.items() if thread == "session_2")
    assert [unit for unit, _ in spread].index(novel) == 1
    one = "What book did Melanie read twice?"
    assert ranked(one, 0.9) == ranked(one, 0.0)
    assert ranked(several, 0.9, "hybrid") == ranked(several, 0.0, "hybrid")
