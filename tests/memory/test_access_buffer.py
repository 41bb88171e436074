"""Reads of long-term entries are buffered in Redis and applied by a flush
(docs/memory/long-term.md, "Reads and writes at the same time"): counts and the log appear after the
flush, a read answers with Redis down, a flush that dies midway is taken over without counting
twice, counts go to the current version, and the flush runs on schedule and when the buffer is
full."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from core.actors import Actor, actor_for_agent
from core.jobs import periodic_jobs
from core.models import JobRun
from memory import tasks
from memory.long_term import services as ltm
from memory.long_term.services import access
from memory.models import AccessFlush, MemoryAccessLog, MemoryContext, MemoryEntry
from memory.redis_store import memory_redis
from tests.conftest import AuthedAgent

pytestmark = pytest.mark.django_db
BASE = "/api/v1/memory"


@pytest.fixture(autouse=True)
def empty_buffer() -> Iterator[None]:
    """This worker's buffer and claims hold nothing from earlier tests."""
    client = memory_redis()
    keys = list(client.scan_iter(match=access._key("*")))
    if keys:
        client.delete(*keys)
    yield


@pytest.fixture
def me(agent_client: AuthedAgent) -> Actor:
    return actor_for_agent(agent_client.agent)


def _context(actor: Actor, name: str, *texts: str) -> tuple[MemoryContext, list[MemoryEntry]]:
    context = ltm.context_create(actor=actor, name=name)
    written = ltm.entries_write(
        actor=actor, context=context, items=[ltm.EntryInput(content=text) for text in texts]
    )
    return context, written


def _count(entry: MemoryEntry) -> int:
    return MemoryEntry.objects.get(pk=entry.pk).access_count


def test_a_search_is_counted_and_logged_by_the_flush(me: Actor, agent_client: AuthedAgent) -> None:
    context, (deploy, cats) = _context(
        me, "notes", "Deploys run on Fridays at noon.", "Cats sleep most of the day."
    )
    found = ltm.long_term_search_run(actor=me, query="when do deploys run", top_k=1)
    (hit,) = found.hits
    assert hit.entry.pk == deploy.pk
    assert hit.entry.access_count == 1  # the answer counts its own read
    assert _count(deploy) == 0 and not MemoryAccessLog.objects.exists()
    assert access.buffer_length() == 1

    counts = access.access_flush()
    applied = (counts["claims"], counts["contexts"], counts["reads"], counts["entries"])
    assert applied == (1, 1, 1, 1)
    assert access.buffer_length() == 0
    entry = MemoryEntry.objects.get(pk=deploy.pk)
    assert entry.access_count == 1 and entry.last_accessed_at is not None
    assert _count(cats) == 0
    (row,) = MemoryAccessLog.objects.filter(context=context)
    assert (row.entry_id, row.agent_id, row.action, row.query, row.result_count) == (
        deploy.pk,
        agent_client.agent.pk,
        "search",
        "when do deploys run",
        1,
    )
    # Nothing is applied twice: a second flush finds nothing.
    assert access.access_flush()["reads"] == 0
    assert _count(deploy) == 1


def test_with_redis_down_a_read_answers_and_its_access_is_dropped(
    me: Actor, agent_client: AuthedAgent, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    _, (entry,) = _context(me, "notes", "The office is in Lisbon.")
    settings.REDIS_URL = "unix:///nonexistent/engram-redis.sock"
    with caplog.at_level(logging.WARNING, logger="engram.memory"):
        read = agent_client.client.get(f"{BASE}/entries/{entry.pk}")
        found = agent_client.client.post(
            f"{BASE}/search", {"query": "office Lisbon", "tiers": ["long_term"]}, format="json"
        )
    assert read.status_code == 200 and read.json()["access_count"] == 0
    assert found.status_code == 200 and found.json()["results"]
    assert "read not recorded (Redis unavailable)" in caplog.text
    # Jobs that judge staleness go on with what was applied.
    access.accesses_applied()


def test_a_flush_that_dies_midway_is_taken_over_without_counting_twice(
    me: Actor, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, (a,) = _context(me, "first", "alpha apples")
    second, (b,) = _context(me, "second", "beta bananas")
    ltm.entries_accessed(actor=me, entries=[a, b], action="read")
    ltm.entries_accessed(actor=me, entries=[b], action="read")
    real = access._context_apply

    def dies_on_the_second(token: str, context_id: int, reads: Any) -> Any:
        if context_id == second.pk:
            raise SystemExit("worker killed")
        return real(token, context_id, reads)

    monkeypatch.setattr(access, "_context_apply", dies_on_the_second)
    with pytest.raises(SystemExit):
        access.access_flush()
    assert (_count(a), _count(b)) == (1, 0)
    claims = memory_redis().zrange(access._key("claims"), 0, -1)
    assert len(claims) == 1  # left behind
    monkeypatch.setattr(access, "_context_apply", real)
    # Not abandoned yet (younger than the job's time limit): left alone.
    assert access.access_flush()["claims"] == 0
    monkeypatch.setattr(access, "STALE_CLAIM_SECONDS", -1)
    counts = access.access_flush()
    assert (counts["claims"], counts["contexts"], counts["skipped"]) == (1, 1, 1)
    assert (_count(a), _count(b)) == (1, 2)
    assert MemoryAccessLog.objects.filter(entry=b).count() == 2
    assert memory_redis().zcard(access._key("claims")) == 0
    assert not AccessFlush.objects.exists()


def test_counts_go_to_the_current_version_and_what_went_since_is_logged_as_gone(
    me: Actor,
) -> None:
    context, (kept, doomed) = _context(me, "notes", "Version one of a fact.", "Soon deleted.")
    ltm.entries_accessed(actor=me, entries=[kept, doomed], action="search", query="fact")
    newer = ltm.entry_update(actor=me, entry=kept, fields={"content": "Version two of a fact."})
    ltm.entry_delete(actor=me, entry=doomed)
    access.access_flush()
    assert _count(newer) == 1 and _count(kept) == 0
    logged = dict(
        MemoryAccessLog.objects.filter(context=context).values_list("entry_id", "result_count")
    )
    assert logged == {kept.pk: 2, None: 2}
    # A context deleted before the flush takes its reads with it, without an error.
    gone, (entry,) = _context(me, "gone", "Short lived.")
    ltm.entries_accessed(actor=me, entries=[entry], action="read")
    ltm.context_delete(actor=me, context=gone)
    assert access.access_flush()["skipped"] == 1


def test_only_readers_reads_count(me: Actor, make_agent_client: Any) -> None:
    _, (entry,) = _context(me, "notes", "Private to me.")
    intruder = actor_for_agent(make_agent_client().agent)
    ltm.entries_accessed(actor=intruder, entries=[entry], action="read")
    assert access.buffer_length() == 0
    access.access_flush()
    assert _count(entry) == 0


def test_a_full_buffer_is_flushed_at_once(me: Actor, settings: Any) -> None:
    settings.MEMORY_ACCESS_BUFFER_MAX = 3
    _, (entry,) = _context(me, "notes", "Read often.")
    for _ in range(2):
        ltm.entry_read(actor=me, entry_id=entry.pk)
    assert _count(entry) == 0
    ltm.entry_read(actor=me, entry_id=entry.pk)  # the third fills it: a flush is sent (eager)
    assert _count(entry) == 3
    assert JobRun.objects.filter(job="memory.flush_accesses", status="succeeded").exists()


def test_the_flush_is_a_periodic_job_with_expires_and_a_dry_run(me: Actor) -> None:
    job = {job.name: job for job in periodic_jobs()}["memory.flush_accesses"]
    assert job.every_seconds == access.FLUSH_EVERY_SECONDS
    assert job.expires_seconds == 3 * access.FLUSH_EVERY_SECONDS  # late still helps
    _, (entry,) = _context(me, "notes", "Counted later.")
    ltm.entry_read(actor=me, entry_id=entry.pk)
    assert tasks.flush_accesses.apply(kwargs={"dry_run": True}).get() == {
        "buffered": 1,
        "dry_run": 1,
    }
    assert _count(entry) == 0
    assert tasks.flush_accesses.apply().get()["reads"] == 1
    assert _count(entry) == 1


def test_rot_and_decay_apply_buffered_reads_first(me: Actor) -> None:
    from memory.maintenance.services.upkeep import consolidation_decay

    _, (entry,) = _context(me, "notes", "Used just now.")
    ltm.entry_read(actor=me, entry_id=entry.pk)
    consolidation_decay(account_id=entry.account_id, dry_run=True)
    assert _count(entry) == 1
