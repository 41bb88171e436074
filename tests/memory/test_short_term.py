"""Short-term memory on the real PostgreSQL; time travel moves ``timezone.now`` (the clock
fixture), never sleeps."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from core.actors import actor_for_agent
from core.errors import ValidationFailed
from core.jobs import periodic_jobs
from core.models import AuditEvent, JobRun
from memory import tasks
from memory.models import ShortTermEntry
from memory.short_term import services as short_term_services
from tests.conftest import AuthedAgent
from tests.memory.conftest import Clock, code

BASE = "/api/v1/memory/short-term"


def put(authed: AuthedAgent, path: str, body: dict[str, Any]) -> Any:
    return authed.client.put(f"{BASE}/{path}", body, format="json")


@pytest.mark.django_db
def test_put_get_delete_with_ttl_and_type(agent_client: AuthedAgent, clock: Clock) -> None:
    created = put(
        agent_client, "s1/plan", {"value": {"step": 1}, "ttl": 120, "memory_type": "reflection"}
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["value"], body["memory_type"], body["ttl"], body["access_count"]) == (
        {"step": 1},
        "reflection",
        120,
        0,
    )
    entry = ShortTermEntry.objects.get(agent=agent_client.agent, session_id="s1", key="plan")
    assert entry.expires_at == clock.now + timedelta(seconds=120)
    assert entry.account_id == agent_client.agent.account_id

    defaults = put(agent_client, "s1/other", {"value": None})
    assert defaults.status_code == 201
    assert (defaults.json()["ttl"], defaults.json()["memory_type"]) == (3600, "task_context")

    replaced = put(agent_client, "s1/plan", {"value": {"step": 2}})
    assert replaced.status_code == 200 and replaced.json()["value"] == {"step": 2}
    assert ShortTermEntry.objects.filter(agent=agent_client.agent, key="plan").count() == 1

    assert agent_client.client.delete(f"{BASE}/s1/plan").status_code == 204
    gone = agent_client.client.get(f"{BASE}/s1/plan")
    assert gone.status_code == 404 and code(gone) == "short_term_key_not_found"
    assert agent_client.client.delete(f"{BASE}/s1/plan").status_code == 404
    actions = list(
        AuditEvent.objects.filter(agent=agent_client.agent)
        .order_by("pk")
        .values_list("action", flat=True)
    )
    assert actions == [
        "memory.short_term.put",
        "memory.short_term.put",
        "memory.short_term.put",
        "memory.short_term.delete",
    ]


@pytest.mark.django_db
def test_a_read_counts_an_access(agent_client: AuthedAgent, clock: Clock) -> None:
    put(agent_client, "s1/k", {"value": "v"})
    for n in (1, 2, 3):
        clock.advance(seconds=1)
        read = agent_client.client.get(f"{BASE}/s1/k").json()
        assert read["access_count"] == n
        assert read["last_accessed_at"] == clock.now.isoformat().replace("+00:00", "Z")
    # Listing is not an access; replacing a live entry keeps its count.
    agent_client.client.get(f"{BASE}/s1")
    assert put(agent_client, "s1/k", {"value": "w"}).json()["access_count"] == 3


@pytest.mark.django_db(transaction=True)
def test_concurrent_reads_each_count(agent_client: AuthedAgent) -> None:
    actor = actor_for_agent(agent_client.agent)
    short_term_services.short_term_put(actor=actor, session_id="s1", key="hot", value=1)
    threads, per_thread = 6, 10
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def read() -> None:
        try:
            start.wait()
            for _ in range(per_thread):
                short_term_services.short_term_read(actor=actor, session_id="s1", key="hot")
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    workers = [threading.Thread(target=read) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    assert ShortTermEntry.objects.get(key="hot").access_count == threads * per_thread


@pytest.mark.django_db
def test_an_expired_entry_is_gone_at_once(agent_client: AuthedAgent, clock: Clock) -> None:
    put(agent_client, "s1/brief", {"value": "soon gone", "ttl": 60})
    put(agent_client, "s1/long", {"value": "stays", "ttl": 600})
    clock.advance(seconds=59)
    assert agent_client.client.get(f"{BASE}/s1/brief").status_code == 200
    clock.advance(seconds=1)
    # No clean-up has run: the row is there, and invisible to every operation.
    assert ShortTermEntry.objects.filter(key="brief").exists()
    for method, path, body in (
        ("get", "s1/brief", None),
        ("delete", "s1/brief", None),
        ("post", "s1/brief/refresh", {}),
    ):
        response = getattr(agent_client.client, method)(f"{BASE}/{path}", body, format="json")
        assert response.status_code == 404 and code(response) == "short_term_key_not_found"
    listed = agent_client.client.get(f"{BASE}/s1").json()["results"]
    assert [e["key"] for e in listed] == ["long"]
    # Storing it again makes a new entry: 201, counts from zero.
    entry = ShortTermEntry.objects.get(key="brief")
    ShortTermEntry.objects.filter(pk=entry.pk).update(access_count=7)
    again = put(agent_client, "s1/brief", {"value": "back"})
    assert again.status_code == 201 and again.json()["access_count"] == 0
    assert again.json()["created_at"] == clock.now.isoformat().replace("+00:00", "Z")


@pytest.mark.django_db
def test_refresh_extends_from_now(agent_client: AuthedAgent, clock: Clock) -> None:
    put(agent_client, "s1/k", {"value": 1, "ttl": 100})
    clock.advance(seconds=90)
    refreshed = agent_client.client.post(f"{BASE}/s1/k/refresh", {}, format="json")
    assert refreshed.status_code == 200 and refreshed.json()["ttl"] == 100
    entry = ShortTermEntry.objects.get(key="k")
    assert entry.expires_at == clock.now + timedelta(seconds=100)
    assert entry.access_count == 0
    clock.advance(seconds=50)
    longer = agent_client.client.post(f"{BASE}/s1/k/refresh", {"ttl": 3000}, format="json")
    assert longer.json()["ttl"] == 3000
    assert ShortTermEntry.objects.get(key="k").expires_at == clock.now + timedelta(seconds=3000)
    clock.advance(seconds=2999)
    assert agent_client.client.get(f"{BASE}/s1/k").status_code == 200


@pytest.mark.django_db
def test_bad_input_changes_nothing(agent_client: AuthedAgent, settings: Any) -> None:
    settings.SHORT_TERM_MAX_TTL = 1000
    settings.SHORT_TERM_MAX_VALUE_BYTES = 1024
    put(agent_client, "s1/k", {"value": "original", "ttl": 500})
    for body, status, error in (
        ({"value": 1, "ttl": -1}, 400, "invalid_ttl"),
        ({"value": 1, "ttl": 0}, 400, "invalid_ttl"),
        ({"value": 1, "ttl": 1001}, 400, "invalid_ttl"),
        ({"value": 1, "memory_type": "dream"}, 400, "validation_error"),
        ({"value": "x" * 2000}, 413, "value_too_large"),
        ({"value": 1, "extra": 2}, 400, "unknown_field"),
        ({"ttl": 5}, 400, "validation_error"),
    ):
        response = put(agent_client, "s1/k", body)
        assert (response.status_code, code(response)) == (status, error), body
    entry = ShortTermEntry.objects.get(key="k")
    assert (entry.value, entry.ttl_seconds) == ("original", 500)
    refresh = agent_client.client.post(f"{BASE}/s1/k/refresh", {"ttl": -3}, format="json")
    assert refresh.status_code == 400 and code(refresh) == "invalid_ttl"
    assert agent_client.client.get(f"{BASE}/s1?memory_type=dream").status_code == 400
    assert put(agent_client, "bad:session/k", {"value": 1}).status_code == 404


@pytest.mark.django_db
def test_entries_are_each_agents_own(
    agent_client: AuthedAgent, teammate: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    put(agent_client, "s1/k", {"value": "mine"})
    for stranger in (teammate, other_agent_client):
        assert stranger.client.get(f"{BASE}/s1/k").status_code == 404
        assert stranger.client.get(f"{BASE}/s1").json()["results"] == []
        assert put(stranger, "s1/k", {"value": "theirs"}).status_code == 201
    assert agent_client.client.get(f"{BASE}/s1/k").json()["value"] == "mine"
    assert ShortTermEntry.objects.filter(session_id="s1", key="k").count() == 3


@pytest.mark.django_db
def test_listing_pages_filters_and_bounded_queries(agent_client: AuthedAgent) -> None:
    for n in range(3):
        put(agent_client, f"s1/k{n}", {"value": n, "memory_type": "observation"})
    put(agent_client, "s1/t", {"value": "t", "memory_type": "tool_result"})
    put(agent_client, "s2/elsewhere", {"value": 0})

    def listed(query: str = "") -> tuple[Any, int]:
        with CaptureQueriesContext(connection) as captured:
            response = agent_client.client.get(f"{BASE}/s1{query}")
        assert response.status_code == 200
        return response.json(), len(captured.captured_queries)

    page, few = listed("?page_size=2")
    assert [e["key"] for e in page["results"]] == ["t", "k2"] and page["next"]
    rest = agent_client.client.get(page["next"]).json()
    assert [e["key"] for e in rest["results"]] == ["k1", "k0"] and rest["next"] is None
    body, _ = listed("?memory_type=tool_result")
    assert [e["key"] for e in body["results"]] == ["t"]
    for n in range(3, 40):
        put(agent_client, f"s1/k{n}", {"value": n})
    _, many = listed("?page_size=50")
    assert many == few


@pytest.mark.django_db
def test_the_clean_up_job_deletes_expired_entries_only(
    agent_client: AuthedAgent, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(5):
        put(agent_client, f"s1/old{n}", {"value": n, "ttl": 10})
    put(agent_client, "s1/fresh", {"value": "f", "ttl": 1000})
    clock.advance(seconds=11)
    put(agent_client, "s1/old0", {"value": "stored again"})  # live again

    dry = tasks.prune_short_term.apply(kwargs={"dry_run": True}).get()
    assert dry == {"entries": 4, "dry_run": 1}
    assert ShortTermEntry.objects.count() == 6

    monkeypatch.setattr(short_term_services, "PRUNE_BATCH", 3)
    assert tasks.prune_short_term.apply().get() == {"entries": 4}
    assert sorted(ShortTermEntry.objects.values_list("key", flat=True)) == ["fresh", "old0"]
    runs = JobRun.objects.filter(job="memory.prune_short_term").order_by("pk")
    assert [r.counts for r in runs] == [dry, {"entries": 4}]
    assert runs.last().status == JobRun.Status.SUCCEEDED  # type: ignore[union-attr]
    assert tasks.prune_short_term.apply().get() == {"entries": 0}  # idempotent


def test_the_clean_up_jobs_are_scheduled_with_an_expiry() -> None:
    jobs = {job.name: job for job in periodic_jobs()}
    for name in ("memory.prune_short_term", "memory.prune_pools"):
        job = jobs[name]
        assert job.task == f"memory.tasks.{name.split('.')[1]}"
        assert job.every_seconds is not None and 0 < job.expires_seconds < job.every_seconds


# --- batch writes -----------------------------------------------------------------------------


def batch(authed: AuthedAgent, session: str, entries: list[dict[str, Any]]) -> Any:
    return authed.client.post(f"{BASE}/{session}/_batch", {"entries": entries}, format="json")


@pytest.mark.django_db
def test_a_batch_stores_like_single_puts(agent_client: AuthedAgent, clock: Clock) -> None:
    put(agent_client, "s1/kept", {"value": "old", "memory_type": "reflection"})
    agent_client.client.get(f"{BASE}/s1/kept")  # one access, kept by the replacement
    put(agent_client, "s1/stale", {"value": "old", "ttl": 10})
    ShortTermEntry.objects.filter(key="stale").update(access_count=5)
    clock.advance(seconds=10)  # "stale" has expired: storing it again makes a new entry
    before = AuditEvent.objects.count()
    with CaptureQueriesContext(connection) as queries:
        response = batch(
            agent_client,
            "s1",
            [
                {"key": "new", "value": {"n": 1}, "ttl": 120, "memory_type": "observation"},
                {"key": "kept", "value": [1, 2]},
                {"key": "stale", "value": None},
            ],
        )
    assert response.status_code == 200, response.json()
    body = response.json()
    expires = (clock.now + timedelta(seconds=120)).isoformat().replace("+00:00", "Z")
    assert (body["session_id"], body["created"], body["replaced"]) == ("s1", 2, 1)
    assert [(i["key"], i["created"]) for i in body["items"]] == [
        ("new", True),
        ("kept", False),
        ("stale", True),
    ]
    assert body["items"][0]["expires_at"] == expires
    entries = {e.key: e for e in ShortTermEntry.objects.filter(agent=agent_client.agent)}
    assert (entries["new"].value, entries["new"].memory_type, entries["new"].ttl_seconds) == (
        {"n": 1},
        "observation",
        120,
    )
    assert entries["new"].account_id == agent_client.agent.account_id
    assert (entries["kept"].value, entries["kept"].access_count) == ([1, 2], 1)
    assert (entries["kept"].memory_type, entries["kept"].ttl_seconds) == ("task_context", 3600)
    assert (entries["stale"].value, entries["stale"].access_count) == (None, 0)
    assert entries["stale"].created_at == clock.now
    events = AuditEvent.objects.order_by("pk")[before:]
    assert [(e.action, e.target_id, e.changes["key"]) for e in events] == [
        ("memory.short_term.put", str(entries[k].pk), k) for k in ("new", "kept", "stale")
    ]
    # Lock, upsert, audit: a fixed number of statements, whatever the batch's size.
    writes = [q["sql"] for q in queries.captured_queries if "short_term" in q["sql"].lower()]
    assert len(writes) <= 3, writes


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("entries", "status", "error"),
    [
        ([{"key": "a", "value": 1}, {"key": "a", "value": 2}], 400, "duplicate_key"),
        ([{"key": "a", "value": 1}, {"key": "_b", "value": 2}], 400, "invalid_key"),
        ([{"key": "a", "value": 1}, {"key": "b", "value": 2, "ttl": 0}], 400, "invalid_ttl"),
        ([{"key": "a", "value": 1}, {"key": "b", "value": "x" * 300_000}], 413, "value_too_large"),
    ],
)
def test_a_batch_is_all_or_none(
    agent_client: AuthedAgent, entries: list[dict[str, Any]], status: int, error: str
) -> None:
    response = batch(agent_client, "s1", entries)
    assert response.status_code == status and code(response) == error, response.json()
    assert not ShortTermEntry.objects.exists()


@pytest.mark.django_db
def test_a_batch_holds_one_to_the_maximum(agent_client: AuthedAgent, actor: Any) -> None:
    assert batch(agent_client, "s1", []).status_code == 400
    too_many = [{"key": f"k{i}", "value": i} for i in range(short_term_services.BATCH_MAX + 1)]
    assert batch(agent_client, "s1", too_many).status_code == 400
    with pytest.raises(ValidationFailed) as refused:
        short_term_services.short_term_put_batch(actor=actor, session_id="s1", entries=too_many)
    assert refused.value.code == "invalid_batch"
    full = too_many[:-1]
    response = batch(agent_client, "s1", full)
    assert response.status_code == 200 and response.json()["created"] == len(full)
    assert ShortTermEntry.objects.filter(session_id="s1").count() == len(full)


@pytest.mark.django_db
def test_a_batch_needs_the_write_scope(make_agent_client: Any) -> None:
    reader = make_agent_client(scopes=("read",))
    assert batch(reader, "s1", [{"key": "a", "value": 1}]).status_code == 403
