"""Consolidation on the real PostgreSQL: promotion (once, with provenance), dedup (the survivor
kept, the duplicate archived), rot, importance decay, dry runs, the jobs and the endpoint."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from core.actors import actor_for_agent
from core.jobs import periodic_jobs
from core.models import JobRun
from memory import tasks
from memory.long_term import services as ltm
from memory.maintenance.services import consolidation, upkeep
from memory.models import MemoryContext, MemoryEntry, ShortTermEntry
from tests.conftest import AuthedAgent
from tests.memory.conftest import code

pytestmark = pytest.mark.django_db

BASE = "/api/v1/memory"


def stm(authed: AuthedAgent, key: str, value: Any, reads: int) -> None:
    client = authed.client
    assert client.put(
        f"{BASE}/short-term/s1/{key}", {"value": value}, format="json"
    ).status_code in (
        200,
        201,
    )
    for _ in range(reads):
        assert client.get(f"{BASE}/short-term/s1/{key}").status_code == 200


def context_of(authed: AuthedAgent, name: str = "notes") -> MemoryContext:
    return ltm.context_create(actor=actor_for_agent(authed.agent), name=name)


def write(authed: AuthedAgent, context: MemoryContext, text: str, **fields: Any) -> MemoryEntry:
    (entry,) = ltm.entries_write(
        actor=actor_for_agent(authed.agent),
        context=context,
        items=[ltm.EntryInput(content=text, **fields)],
    )
    return entry


def snapshot() -> list[tuple[Any, ...]]:
    return sorted(
        MemoryEntry.objects.values_list(
            "id", "is_current", "archived_at", "importance", "metadata", "version"
        )
    ) + sorted(ShortTermEntry.objects.values_list("id", "access_count", "expires_at"))


def test_promotion_keeps_provenance_and_runs_once(agent_client: AuthedAgent) -> None:
    stm(agent_client, "deploy", "billing deploys on fridays", reads=3)
    stm(agent_client, "config", {"retries": 5}, reads=4)
    stm(agent_client, "rare", "read twice", reads=2)
    account = agent_client.agent.account_id

    dry = consolidation.consolidation_promote(account_id=account, dry_run=True)
    assert dry == {"candidates": 2, "promoted": 2} and MemoryEntry.objects.count() == 0

    assert consolidation.consolidation_promote(account_id=account) == {
        "candidates": 2,
        "promoted": 2,
    }
    promoted = {e.metadata["key"]: e for e in MemoryEntry.objects.all()}
    assert set(promoted) == {"deploy", "config"}
    deploy = promoted["deploy"]
    assert deploy.content == "deploy: billing deploys on fridays"
    assert deploy.source == MemoryEntry.Source.SYSTEM
    assert {k: deploy.metadata[k] for k in ("source", "session_id", "key", "access_count")} == {
        "source": "short_term",
        "session_id": "s1",
        "key": "deploy",
        "access_count": 3,
    }
    assert promoted["config"].data == {"retries": 5}
    context = MemoryContext.objects.get(pk=deploy.context_id)
    assert context.owner_id == agent_client.agent.pk
    assert context.context_type == MemoryContext.ContextType.AGENT_MEMORY
    # Idempotent: more reads later do not promote the same entry again.
    stm(agent_client, "deploy", "billing deploys on fridays", reads=1)
    assert consolidation.consolidation_promote(account_id=account)["promoted"] == 0
    assert MemoryEntry.objects.count() == 2


def test_dedup_keeps_the_survivor_and_archives_the_duplicate(
    agent_client: AuthedAgent, settings: Any
) -> None:
    settings.MEMORY_DEDUP_SIMILARITY = 0.92
    context = context_of(agent_client)
    older = write(agent_client, context, "The staging database runs on port 5433.")
    duplicate = write(agent_client, context, "The staging database runs on port 5433.")
    important = write(
        agent_client, context, "Use the blue-green strategy for releases.", importance=0.9
    )
    twin = write(agent_client, context, "Use the blue-green strategy for releases.", importance=0.2)
    other = write(agent_client, context, "Invoices are emailed on the first of the month.")
    elsewhere = write(
        agent_client, context_of(agent_client, "other"), "The staging database runs on port 5433."
    )
    account = agent_client.agent.account_id

    before = snapshot()
    dry = upkeep.consolidation_dedup(account_id=account, dry_run=True)
    assert dry["merged"] == 2 and snapshot() == before

    assert upkeep.consolidation_dedup(account_id=account)["merged"] == 2
    state = {e.pk: e for e in MemoryEntry.objects.filter(is_current=True)}
    assert state[older.pk].archived_at is None  # equal importance: the older survives
    assert state[duplicate.pk].archived_at is not None
    assert state[duplicate.pk].metadata["merged_into"] == older.pk
    assert state[duplicate.pk].metadata["merged_similarity"] >= 0.92
    assert state[older.pk].metadata["absorbed"] == [duplicate.pk]
    assert state[important.pk].archived_at is None  # the more important survives
    assert state[twin.pk].archived_at is not None
    assert state[twin.pk].metadata["merged_into"] == important.pk
    assert state[other.pk].archived_at is None
    assert state[elsewhere.pk].archived_at is None  # another context is not compared
    assert upkeep.consolidation_dedup(account_id=account)["merged"] == 0


def test_importance_decay_halves_per_half_life(agent_client: AuthedAgent, settings: Any) -> None:
    settings.MEMORY_IMPORTANCE_HALF_LIFE_DAYS = 30
    context = context_of(agent_client)
    old = write(agent_client, context, "old memory", importance=0.8)
    fresh = write(agent_client, context, "fresh memory", importance=0.8)
    used = write(agent_client, context, "used memory", importance=0.8)
    now = timezone.now()
    MemoryEntry.objects.filter(pk__in=[old.pk, used.pk]).update(created_at=now - timedelta(days=60))
    MemoryEntry.objects.filter(pk=used.pk).update(last_accessed_at=now - timedelta(days=30))
    account = agent_client.agent.account_id

    before = snapshot()
    assert upkeep.consolidation_decay(account_id=account, dry_run=True)["decayed"] == 2
    assert snapshot() == before

    assert upkeep.consolidation_decay(account_id=account) == {"decayed": 2}
    values = dict(MemoryEntry.objects.values_list("pk", "importance"))
    assert values[old.pk] == pytest.approx(0.2, rel=1e-3)  # two half-lives unused
    assert values[used.pk] == pytest.approx(0.4, rel=1e-3)  # one, since its last read
    assert values[fresh.pk] == 0.8
    # Runs right after change nothing: decay counts from the last decay, not compounding.
    assert upkeep.consolidation_decay(account_id=account) == {"decayed": 0}
    assert dict(MemoryEntry.objects.values_list("pk", "importance"))[old.pk] == pytest.approx(
        0.2, rel=1e-3
    )


def test_rot_archives_entries_at_the_staleness_threshold(
    agent_client: AuthedAgent, settings: Any
) -> None:
    settings.MEMORY_RECENCY_HALF_LIFE_DAYS = 30
    settings.MEMORY_ROT_STALENESS = 0.9
    context = context_of(agent_client)
    stale = write(agent_client, context, "ancient trivia", importance=0.0)
    borderline = write(agent_client, context, "old but kept", importance=0.25)
    important = write(agent_client, context, "ancient but important", importance=1.0)
    fresh = write(agent_client, context, "new trivia", importance=0.0)
    now = timezone.now()
    MemoryEntry.objects.filter(pk__in=[stale.pk, borderline.pk, important.pk]).update(
        created_at=now - timedelta(days=300)
    )
    entries = {e.pk: e for e in MemoryEntry.objects.all()}
    assert upkeep.staleness(entries[stale.pk], now) == pytest.approx(1 - 0.5 * 2**-10)
    assert upkeep.staleness(entries[borderline.pk], now) < 0.9
    assert upkeep.staleness(entries[fresh.pk], now) == pytest.approx(0.5, abs=1e-3)
    account = agent_client.agent.account_id

    before = snapshot()
    assert upkeep.consolidation_rot(account_id=account, dry_run=True) == {"archived": 1}
    assert snapshot() == before
    assert upkeep.consolidation_rot(account_id=account) == {"archived": 1}
    archived = set(
        MemoryEntry.objects.filter(archived_at__isnull=False).values_list("pk", flat=True)
    )
    assert archived == {stale.pk}


def test_the_endpoint_runs_for_the_callers_account(
    make_agent_client: Any, other_agent_client: AuthedAgent
) -> None:
    admin = make_agent_client(scopes=("read", "write", "admin"))
    stm(admin, "deploy", "billing deploys on fridays", reads=3)
    stm(other_agent_client, "deploy", "their secret", reads=3)
    before = snapshot()
    dry = admin.client.post(f"{BASE}/consolidate", {"dry_run": True}, format="json")
    assert dry.status_code == 200, dry.json()
    assert dry.json()["report"]["promote"] == {"candidates": 1, "promoted": 1}
    assert snapshot() == before
    run = admin.client.post(f"{BASE}/consolidate", {"jobs": ["promote"]}, format="json").json()
    assert run == {"dry_run": False, "report": {"promote": {"candidates": 1, "promoted": 1}}}
    assert MemoryEntry.objects.get().account_id == admin.agent.account_id
    # Write scope is not enough.
    assert (
        other_agent_client.client.post(f"{BASE}/consolidate", {}, format="json").status_code == 403
    )
    bad = admin.client.post(f"{BASE}/consolidate", {"jobs": ["attic"]}, format="json")
    assert bad.status_code == 400


def test_the_jobs_record_runs_and_are_scheduled(agent_client: AuthedAgent) -> None:
    stm(agent_client, "deploy", "billing deploys on fridays", reads=3)
    dry = tasks.consolidate.apply(kwargs={"dry_run": True}).get()
    assert dry["promote_promoted"] == 1 and dry["dry_run"] == 1
    assert MemoryEntry.objects.count() == 0
    done = tasks.consolidate.apply().get()
    assert done["promote_promoted"] == 1 and MemoryEntry.objects.count() == 1
    assert tasks.rot.apply().get() == {"rot_archived": 0}
    assert tasks.importance_decay.apply().get() == {"decayed": 0}
    runs = JobRun.objects.filter(job__startswith="memory.").exclude(job="memory.prune_short_term")
    assert {r.job for r in runs} == {"memory.consolidate", "memory.rot", "memory.importance_decay"}
    assert all(r.status == JobRun.Status.SUCCEEDED for r in runs)
    jobs = {job.name: job for job in periodic_jobs()}
    assert jobs["memory.consolidate"].crontab == "0 4 * * *"
    assert jobs["memory.rot"].crontab == "0 4 * * *"
    assert jobs["memory.importance_decay"].crontab == "45 3 * * *"
    for name in ("memory.consolidate", "memory.rot", "memory.importance_decay"):
        assert 0 < jobs[name].expires_seconds < 86_400


def test_an_agent_consolidates_one_of_its_sessions(
    agent_client: AuthedAgent, teammate: AuthedAgent
) -> None:
    stm(agent_client, "deploy", "billing deploys on fridays", reads=3)
    stm(agent_client, "rarely", "read once", reads=1)
    stm(teammate, "deploy", "the teammate's note", reads=3)
    client = agent_client.client  # a write key: enough for its own session
    dry = client.post(f"{BASE}/consolidate", {"session_id": "s1", "dry_run": True}, format="json")
    assert dry.status_code == 200, dry.json()
    assert dry.json()["report"] == {"promote": {"candidates": 1, "promoted": 1}}
    assert not MemoryEntry.objects.exists()
    run = client.post(f"{BASE}/consolidate", {"session_id": "s1"}, format="json").json()
    assert run["report"] == {"promote": {"candidates": 1, "promoted": 1}}
    (promoted,) = MemoryEntry.objects.all()
    assert promoted.metadata["key"] == "deploy" and promoted.author_id == agent_client.agent.pk
    # Again: nothing new; another session: nothing; jobs and a session together: 400.
    again = client.post(f"{BASE}/consolidate", {"session_id": "s1"}, format="json").json()
    assert again["report"] == {"promote": {"candidates": 1, "promoted": 0}}
    other = client.post(f"{BASE}/consolidate", {"session_id": "s2"}, format="json").json()
    assert other["report"] == {"promote": {"candidates": 0, "promoted": 0}}
    both = client.post(
        f"{BASE}/consolidate", {"session_id": "s1", "jobs": ["dedup"]}, format="json"
    )
    assert both.status_code == 400 and code(both) == "jobs_with_session"
    whole = client.post(f"{BASE}/consolidate", {}, format="json")
    assert whole.status_code == 403 and code(whole) == "insufficient_scope"
