"""Shared pools on the real PostgreSQL and Redis: access rules, dot paths, versions and
compare-and-set, quotas, concurrent writers, bulletin events (feed and pub/sub), workflow runs,
expiry and clean-up."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from core.actors import actor_for_agent
from core.errors import Conflict
from core.models import AuditEvent, JobRun
from memory import tasks
from memory.models import MemoryPool, MemoryPoolEvent
from memory.pools import data_services as pool_data_services
from memory.pools import services as pool_services
from memory.redis_store import memory_redis
from tests.conftest import AuthedAgent
from tests.factories import AgentFactory
from tests.memory.conftest import Clock, code

BASE = "/api/v1/memory/pools"


def create(authed: AuthedAgent, **fields: Any) -> Any:
    response = authed.client.post(BASE, fields, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def write(authed: AuthedAgent, pool_id: str, path: str, value: Any, **extra: Any) -> Any:
    return authed.client.put(
        f"{BASE}/{pool_id}/data/{path}", {"value": value, **extra}, format="json"
    )


def read(authed: AuthedAgent, pool_id: str, path: str = "") -> Any:
    return authed.client.get(f"{BASE}/{pool_id}/data" + (f"/{path}" if path else ""))


@pytest.fixture
def third(agent_client: AuthedAgent, make_agent_client: Callable[..., AuthedAgent]) -> AuthedAgent:
    return make_agent_client(agent=AgentFactory.create(account=agent_client.agent.account))


@pytest.mark.django_db
def test_create_read_update_delete(agent_client: AuthedAgent) -> None:
    pool = create(
        agent_client,
        pool_id="trading_ops",
        name="Trading Operations Shared State",
        scope="persistent",
        data={"positions": {"eur": 3}},
        retention_policy={"ttl_seconds": 604_800, "max_size_bytes": 5_000_000},
    )
    assert pool["pool_type"] == "shared" and pool["version"] == 1
    assert pool["owner_agent_id"] == agent_client.agent.pk
    assert pool["access"] == {"read": True, "write": True, "owner": True}
    assert pool["quota_bytes"] == 5_000_000 and pool["expires_at"] is not None
    assert pool["data_size_bytes"] == len(json.dumps({"positions": {"eur": 3}}))

    detail = agent_client.client.get(f"{BASE}/trading_ops").json()
    assert detail == pool
    updated = agent_client.client.patch(
        f"{BASE}/trading_ops", {"name": "Ops", "public_read": True}, format="json"
    ).json()
    assert (updated["name"], updated["public_read"], updated["version"]) == ("Ops", True, 2)
    assert read(agent_client, "trading_ops").json()["value"] == {"positions": {"eur": 3}}

    assert agent_client.client.delete(f"{BASE}/trading_ops").status_code == 204
    gone = agent_client.client.get(f"{BASE}/trading_ops")
    assert gone.status_code == 404 and code(gone) == "pool_not_found"
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"memory.pool.create", "memory.pool.update", "memory.pool.delete"} <= actions


@pytest.mark.django_db
def test_pool_ids_are_unique_per_account(
    agent_client: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    create(agent_client, pool_id="ops", data={"mine": 1})
    taken = agent_client.client.post(BASE, {"pool_id": "ops"}, format="json")
    assert taken.status_code == 409 and code(taken) == "pool_id_taken"
    theirs = create(other_agent_client, pool_id="ops", pool_type="global")
    assert theirs["pool_type"] == "global"
    # Not even a global pool crosses accounts.
    assert read(agent_client, "ops").json()["value"] == {"mine": 1}
    assert read(other_agent_client, "ops").json()["value"] == {}
    for bad in ("", "-x", "a b", "a.b", "x" * 101):
        response = agent_client.client.post(BASE, {"pool_id": bad}, format="json")
        assert response.status_code == 400 and code(response) == "validation_error", bad


# (pool type, public_read, grant level for the grantee) -> what each agent may do:
# "rw", "r" or "" (the pool does not exist for them).
ACCESS = [
    ("shared", False, None, {"owner": "rw", "grantee": "", "other": ""}),
    ("shared", False, "read", {"owner": "rw", "grantee": "r", "other": ""}),
    ("shared", False, "write", {"owner": "rw", "grantee": "rw", "other": ""}),
    ("shared", True, None, {"owner": "rw", "grantee": "rw", "other": "rw"}),
    ("shared", True, "read", {"owner": "rw", "grantee": "rw", "other": "rw"}),
    ("task_scoped", True, None, {"owner": "rw", "grantee": "r", "other": "r"}),
    ("task_scoped", False, "write", {"owner": "rw", "grantee": "rw", "other": ""}),
    ("agent_private", False, None, {"owner": "rw", "grantee": "", "other": ""}),
    ("agent_private", False, "read", {"owner": "rw", "grantee": "r", "other": ""}),
    ("team_shared", False, None, {"owner": "rw", "grantee": "", "other": ""}),
    ("team_shared", False, "write", {"owner": "rw", "grantee": "rw", "other": ""}),
    ("global", False, None, {"owner": "rw", "grantee": "rw", "other": "rw"}),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("pool_type", "public", "level", "expected"), ACCESS)
def test_access_rules(
    agent_client: AuthedAgent,
    teammate: AuthedAgent,
    third: AuthedAgent,
    other_agent_client: AuthedAgent,
    pool_type: str,
    public: bool,
    level: str | None,
    expected: dict[str, str],
) -> None:
    create(agent_client, pool_id="p", pool_type=pool_type, public_read=public, data={"v": 0})
    if level:
        granted = agent_client.client.put(
            f"{BASE}/p/grants/{teammate.agent.pk}", {"level": level}, format="json"
        )
        assert granted.status_code == 200
    agents = {
        "owner": agent_client,
        "grantee": teammate,
        "other": third,
        "foreign": other_agent_client,
    }
    expected = {**expected, "foreign": ""}
    for role, authed in agents.items():
        rights, before = expected[role], MemoryPool.objects.get(pool_id="p").version
        response = read(authed, "p", "v")
        if "r" not in rights:
            assert response.status_code == 404 and code(response) == "pool_not_found", role
            assert authed.client.get(f"{BASE}/p").status_code == 404, role
            assert "p" not in [p["pool_id"] for p in authed.client.get(BASE).json()["results"]]
        else:
            assert response.status_code == 200, role
            listed = {p["pool_id"]: p for p in authed.client.get(BASE).json()["results"]}
            assert listed["p"]["access"]["write"] == ("w" in rights), role
        written = write(authed, "p", "v", role)
        if "w" in rights:
            assert written.status_code == 200, (role, written.json())
        else:
            expected_code = "pool_write_denied" if "r" in rights else "pool_not_found"
            assert code(written) == expected_code, role
            assert MemoryPool.objects.get(pool_id="p").version == before, role
    # Managing the pool is its owner's alone.
    for authed in (teammate, third):
        if authed.client.get(f"{BASE}/p").status_code == 200:
            for method, path, body in (
                ("patch", "/p", {"name": "mine now"}),
                ("delete", "/p", None),
                ("put", f"/p/grants/{authed.agent.pk}", {"level": "write"}),
            ):
                refused = getattr(authed.client, method)(f"{BASE}{path}", body, format="json")
                assert refused.status_code == 403 and code(refused) == "pool_owner_required"


@pytest.mark.django_db
def test_private_and_team_pools_cannot_be_public(agent_client: AuthedAgent) -> None:
    for pool_type in ("agent_private", "team_shared"):
        refused = agent_client.client.post(
            BASE, {"pool_id": pool_type, "pool_type": pool_type, "public_read": True}, format="json"
        )
        assert refused.status_code == 400 and code(refused) == "public_not_allowed"
        create(agent_client, pool_id=pool_type, pool_type=pool_type)
        flipped = agent_client.client.patch(
            f"{BASE}/{pool_type}", {"public_read": True}, format="json"
        )
        assert flipped.status_code == 400 and code(flipped) == "public_not_allowed"


@pytest.mark.django_db
def test_the_default_pool(
    agent_client: AuthedAgent, teammate: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    # Every account has its default pool from its creation, and reading never writes.
    assert MemoryPool.objects.filter(account=agent_client.agent.account).count() == 1
    listed = agent_client.client.get(BASE).json()["results"]
    assert [p["pool_id"] for p in listed] == ["default"]
    default = agent_client.client.get(f"{BASE}/default").json()
    assert (default["public_read"], default["owner_agent_id"], default["expires_at"]) == (
        True,
        None,
        None,
    )
    assert write(agent_client, "default", "notes.a", 1).status_code == 200
    assert write(teammate, "default", "notes.b", 2).status_code == 200
    assert read(teammate, "default", "notes").json()["value"] == {"a": 1, "b": 2}
    assert read(other_agent_client, "default").json()["value"] == {}  # its own account's
    assert MemoryPool.objects.filter(pool_id="default").count() == 2

    kept = agent_client.client.delete(f"{BASE}/default")
    assert kept.status_code == 403 and code(kept) == "pool_owner_required"  # nobody owns it
    tool = actor_for_agent(agent_client.agent)
    pool = MemoryPool.objects.get(pool_id="default", account=agent_client.agent.account)
    from core.actors import actor_for_account

    with pytest.raises(Conflict) as refused:
        pool_services.pool_delete(actor=actor_for_account(pool.account_id), pool=pool)
    assert refused.value.code == "default_pool_protected"
    with pytest.raises(Conflict):
        pool_services.pool_update(
            actor=actor_for_account(pool.account_id), pool=pool, public_read=False
        )
    again = agent_client.client.post(BASE, {"pool_id": "default"}, format="json")
    assert again.status_code == 409 and code(again) == "pool_id_taken"
    assert tool.agent is not None


@pytest.mark.django_db
def test_dot_paths_read_write_merge_delete(agent_client: AuthedAgent) -> None:
    create(agent_client, pool_id="p")
    client = agent_client.client
    first = write(agent_client, "p", "agent_bulletin.market_regime", {"regime": "risk_off"})
    assert first.status_code == 200
    assert (first.json()["version"], first.json()["changed"]) == (2, True)
    assert read(agent_client, "p").json()["value"] == {
        "agent_bulletin": {"market_regime": {"regime": "risk_off"}}
    }
    value = read(agent_client, "p", "agent_bulletin.market_regime.regime").json()
    assert (value["value"], value["version"], value["path"]) == (
        "risk_off",
        2,
        "agent_bulletin.market_regime.regime",
    )
    merged = client.patch(
        f"{BASE}/p/data/agent_bulletin.market_regime",
        {"value": {"confidence": 0.82, "regime": None, "by": {"desk": "fx"}}},
        format="json",
    ).json()
    assert merged["value"] == {"confidence": 0.82, "by": {"desk": "fx"}}
    assert merged["version"] == 3
    unchanged = write(agent_client, "p", "agent_bulletin.market_regime.confidence", 0.82).json()
    assert (unchanged["changed"], unchanged["version"]) == (False, 3)
    # 1, 1.0 and true are different JSON values.
    write(agent_client, "p", "n", 1)
    for other in (1.0, True):
        assert write(agent_client, "p", "n", other).json()["changed"] is True
    assert read(agent_client, "p", "n").json()["value"] is True

    deleted = client.delete(f"{BASE}/p/data/agent_bulletin.market_regime.by")
    assert deleted.status_code == 200 and deleted.json()["value"] is None
    absent = read(agent_client, "p", "agent_bulletin.market_regime.by")
    assert absent.status_code == 404 and code(absent) == "path_not_found"
    assert code(client.delete(f"{BASE}/p/data/nothing.here")) == "path_not_found"
    # Null is a value, not an absence.
    write(agent_client, "p", "empty", None)
    assert read(agent_client, "p", "empty").json()["value"] is None

    version = MemoryPool.objects.get(pool_id="p").version
    conflict = write(agent_client, "p", "n.deeper", 1)  # n is true, not an object
    assert conflict.status_code == 409 and code(conflict) == "path_conflict"
    assert conflict.json()["error"]["details"] == {"path": "n.deeper", "at": "n"}
    for bad in ("a..b", ".a", "a.", "a%20b", "a.$x", "." * 3, ".".join("x" * 33)):
        response = write(agent_client, "p", bad, 1)
        assert response.status_code == 400 and code(response) == "invalid_path", bad
        assert code(read(agent_client, "p", bad)) == "invalid_path", bad
    not_object = client.patch(f"{BASE}/p/data/n", {"value": [1]}, format="json")
    assert not_object.status_code == 400 and code(not_object) == "validation_error"
    root = client.put(f"{BASE}/p/data", {"value": [1]}, format="json")
    assert root.status_code == 400
    assert MemoryPool.objects.get(pool_id="p").version == version

    replaced = client.put(f"{BASE}/p/data", {"value": {"fresh": True}}, format="json").json()
    assert replaced["value"] == {"fresh": True} and replaced["version"] == version + 1
    merged_root = client.patch(f"{BASE}/p/data", {"value": {"more": 1}}, format="json").json()
    assert merged_root["value"] == {"fresh": True, "more": 1}


@pytest.mark.django_db
def test_expected_version_is_compare_and_set(agent_client: AuthedAgent) -> None:
    create(agent_client, pool_id="p")
    assert write(agent_client, "p", "a", 1, expected_version=1).json()["version"] == 2
    stale = write(agent_client, "p", "a", 2, expected_version=1)
    assert stale.status_code == 409 and code(stale) == "version_conflict"
    assert stale.json()["error"]["details"] == {"expected_version": 1, "version": 2}
    stale_merge = agent_client.client.patch(
        f"{BASE}/p/data/b", {"value": {"x": 1}, "expected_version": 5}, format="json"
    )
    assert code(stale_merge) == "version_conflict"
    stale_delete = agent_client.client.delete(f"{BASE}/p/data/a?expected_version=1")
    assert code(stale_delete) == "version_conflict"
    negative = write(agent_client, "p", "a", 2, expected_version=-1)
    assert negative.status_code == 400 and code(negative) == "validation_error"
    assert read(agent_client, "p").json() == {
        "pool_id": "p",
        "path": "",
        "value": {"a": 1},
        "version": 2,
    }
    assert agent_client.client.delete(f"{BASE}/p/data/a?expected_version=2").status_code == 200


@pytest.mark.django_db
def test_the_quota_and_the_maintained_size(agent_client: AuthedAgent, settings: Any) -> None:
    settings.POOL_MAX_BYTES = 2048
    create(agent_client, pool_id="p", retention_policy={"max_size_bytes": 300})
    assert write(agent_client, "p", "a", "x" * 200).status_code == 200
    pool = MemoryPool.objects.get(pool_id="p")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT octet_length(data::text) FROM memory_memorypool WHERE id = %s", [pool.pk]
        )
        assert pool.data_size_bytes == cursor.fetchone()[0]
    over = write(agent_client, "p", "b", "y" * 200)
    assert over.status_code == 413 and code(over) == "pool_quota_exceeded"
    assert over.json()["error"]["details"]["limit"] == 300
    assert over.json()["error"]["details"]["size"] > 300
    after = MemoryPool.objects.get(pool_id="p")
    assert (after.version, after.data) == (pool.version, {"a": "x" * 200})
    # A policy may only lower POOL_MAX_BYTES; shrinking below the data held is refused.
    too_big = agent_client.client.post(
        BASE, {"pool_id": "q", "retention_policy": {"max_size_bytes": 4096}}, format="json"
    )
    assert too_big.status_code == 400 and code(too_big) == "invalid_retention_policy"
    shrink = agent_client.client.patch(
        f"{BASE}/p", {"retention_policy": {"max_size_bytes": 100}}, format="json"
    )
    assert shrink.status_code == 409 and code(shrink) == "pool_quota_below_size"
    huge = agent_client.client.post(
        BASE, {"pool_id": "q", "data": {"x": "z" * 3000}}, format="json"
    )
    assert huge.status_code == 413 and code(huge) == "pool_quota_exceeded"
    assert not MemoryPool.objects.filter(pool_id="q").exists()


def _in_threads(count: int, work: Callable[[int], None]) -> list[BaseException]:
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def run(n: int) -> None:
        try:
            start.wait()
            work(n)
        except BaseException as exc:  # reported to the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


@pytest.mark.django_db(transaction=True)
def test_parallel_writers_lose_no_update(agent_client: AuthedAgent, teammate: AuthedAgent) -> None:
    owner = actor_for_agent(agent_client.agent)
    pool = pool_services.pool_create(actor=owner, pool_id="busy", pool_type="global")
    writers = [owner, actor_for_agent(teammate.agent)]
    threads, writes = 8, 15

    def work(n: int) -> None:
        actor = writers[n % 2]
        for i in range(writes):
            pool_data_services.pool_data_write(actor=actor, pool=pool, path=f"w{n}.i{i}", value=i)

    assert _in_threads(threads, work) == []
    stored = MemoryPool.objects.get(pk=pool.pk)
    assert stored.data == {f"w{n}": {f"i{i}": i for i in range(writes)} for n in range(threads)}
    assert stored.version == 1 + threads * writes


@pytest.mark.django_db(transaction=True)
def test_compare_and_set_increments_from_parallel_writers(agent_client: AuthedAgent) -> None:
    actor = actor_for_agent(agent_client.agent)
    pool = pool_services.pool_create(actor=actor, pool_id="counter", data={"count": 0})
    threads, increments = 6, 10
    conflicts = []

    def work(n: int) -> None:
        from memory.pools import selectors as pool_selectors

        done = 0
        while done < increments:
            current = pool_selectors.pool_data_read(actor=actor, pool=pool, path="count")
            try:
                pool_data_services.pool_data_write(
                    actor=actor,
                    pool=pool,
                    path="count",
                    value=current.value + 1,
                    expected_version=current.version,
                )
            except Conflict as exc:
                assert exc.code == "version_conflict"
                conflicts.append(n)
                continue
            done += 1

    assert _in_threads(threads, work) == []
    stored = MemoryPool.objects.get(pk=pool.pk)
    assert stored.data == {"count": threads * increments}
    assert stored.version == 1 + threads * increments
    assert conflicts, "parallel read-modify-write must have collided at least once"


@pytest.mark.django_db(transaction=True)
def test_one_writer_wins_a_version(agent_client: AuthedAgent) -> None:
    actor = actor_for_agent(agent_client.agent)
    pool = pool_services.pool_create(actor=actor, pool_id="race")
    outcomes: list[str] = []

    def work(n: int) -> None:
        try:
            pool_data_services.pool_data_write(
                actor=actor, pool=pool, path="winner", value=n, expected_version=1
            )
            outcomes.append("won")
        except Conflict as exc:
            outcomes.append(exc.code)

    assert _in_threads(8, work) == []
    assert sorted(outcomes) == ["version_conflict"] * 7 + ["won"]
    assert MemoryPool.objects.get(pk=pool.pk).version == 2


@pytest.mark.django_db
def test_bulletin_writes_are_events_in_a_feed_and_on_pub_sub(
    agent_client: AuthedAgent, teammate: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    create(agent_client, pool_id="ops", public_read=True)
    pubsub = memory_redis().pubsub(ignore_subscribe_messages=True)
    channel = pool_data_services.pool_events_channel(agent_client.agent.account_id, "ops")
    pubsub.subscribe(channel)
    try:
        assert pubsub.get_message(timeout=1) is None
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            write(agent_client, "ops", "agent_bulletin.market_regime", {"regime": "risk_off"})
        assert pubsub.get_message(timeout=0.2) is None, "published before the commit"
        for callback in callbacks:
            callback()
        message = pubsub.get_message(timeout=5)
        assert message is not None and message["channel"].decode() == channel
        payload = json.loads(message["data"])
        event = MemoryPoolEvent.objects.get()
        assert payload == {
            "id": event.pk,
            "event": "memory_pool_key_write",
            "is_bulletin": True,
            "pool_id": "ops",
            "version": 2,
            "path": "agent_bulletin.market_regime",
            "action": "write",
            "value": {"regime": "risk_off"},
            "agent_id": agent_client.agent.pk,
            "created_at": event.created_at.isoformat(),
        }
        with django_capture_on_commit_callbacks(execute=True):
            write(agent_client, "ops", "not_the_bulletin", 1)  # no event
            teammate.client.patch(
                f"{BASE}/ops/data/agent_bulletin.market_regime",
                {"value": {"confidence": 0.8}},
                format="json",
            )
            agent_client.client.delete(f"{BASE}/ops/data/agent_bulletin.market_regime")
            agent_client.client.patch(
                f"{BASE}/ops/data", {"value": {"agent_bulletin": {"halt": True}}}, format="json"
            )
            agent_client.client.patch(f"{BASE}/ops/data", {"value": {"other": 2}}, format="json")
        published = [json.loads(pubsub.get_message(timeout=5)["data"]) for _ in range(3)]
        assert pubsub.get_message(timeout=0.2) is None
    finally:
        pubsub.close()
    assert [(p["action"], p["path"], p["agent_id"]) for p in published] == [
        ("merge", "agent_bulletin.market_regime", teammate.agent.pk),
        ("delete", "agent_bulletin.market_regime", agent_client.agent.pk),
        ("merge", "agent_bulletin", agent_client.agent.pk),
    ]
    assert published[0]["value"] == {"regime": "risk_off", "confidence": 0.8}
    assert published[2]["value"] == {"halt": True}

    # The feed: oldest first, in pages; ``next`` always leads on, also past the end.
    page = teammate.client.get(f"{BASE}/ops/events?page_size=3").json()
    assert [e["version"] for e in page["results"]] == [2, 4, 5]
    rest = teammate.client.get(page["next"]).json()
    assert [e["path"] for e in rest["results"]] == ["agent_bulletin"] and rest["next"]
    assert teammate.client.get(rest["next"]).json()["results"] == []
    write(agent_client, "ops", "agent_bulletin.halt", False)
    newer = teammate.client.get(rest["next"]).json()
    assert [e["value"] for e in newer["results"]] == [False]
    bad = teammate.client.get(f"{BASE}/ops/events?cursor=nonsense")
    assert bad.status_code == 400 and code(bad) == "invalid_cursor"


@pytest.mark.django_db
def test_workflow_run_pools_expire_with_the_run(agent_client: AuthedAgent, clock: Clock) -> None:
    create(agent_client, pool_id="board", workflow_run_id="run-7", workflow_kind="blackboard")
    create(
        agent_client,
        pool_id="cache",
        workflow_run_id="run-7",
        workflow_kind="tool_cache",
        persist_across_executions=True,
    )
    create(agent_client, pool_id="unrelated")
    twice = agent_client.client.post(
        BASE,
        {"pool_id": "board2", "workflow_run_id": "run-7", "workflow_kind": "blackboard"},
        format="json",
    )
    assert twice.status_code == 409 and code(twice) == "workflow_pool_exists"
    half = agent_client.client.post(
        BASE, {"pool_id": "x", "workflow_run_id": "run-8"}, format="json"
    )
    assert half.status_code == 400 and code(half) == "invalid_workflow"
    listed = agent_client.client.get(f"{BASE}?workflow_run_id=run-7").json()["results"]
    assert sorted(p["pool_id"] for p in listed) == ["board", "cache"]

    ended = agent_client.client.post("/api/v1/memory/workflow-runs/run-7/expire")
    assert ended.json() == {"run_id": "run-7", "expired": 1, "kept": 1}
    assert agent_client.client.get(f"{BASE}/board").status_code == 404  # gone at once
    listed = agent_client.client.get(f"{BASE}?workflow_run_id=run-7").json()["results"]
    assert [p["pool_id"] for p in listed] == ["cache"]
    # The run's blackboard and its id are free again, before any clean-up.
    create(agent_client, pool_id="board", workflow_run_id="run-7", workflow_kind="blackboard")
    assert MemoryPool.objects.filter(pool_id="board").count() == 1


@pytest.mark.django_db
def test_expired_pools_are_gone_then_cleaned_up(
    agent_client: AuthedAgent, clock: Clock, settings: Any
) -> None:
    from datetime import timedelta

    settings.POOL_EVENT_RETENTION = timedelta(days=7)
    create(agent_client, pool_id="brief", retention_policy={"ttl_seconds": 60})
    create(agent_client, pool_id="kept", public_read=True)
    clock.advance(seconds=50)
    write(agent_client, "brief", "x", 1)  # a change: expires 60 s from now
    write(agent_client, "kept", "agent_bulletin.old", 1)
    clock.advance(seconds=59)
    assert read(agent_client, "brief", "x").status_code == 200
    clock.advance(seconds=1)
    assert code(read(agent_client, "brief")) == "pool_not_found"
    assert "brief" not in [p["pool_id"] for p in agent_client.client.get(BASE).json()["results"]]
    assert code(write(agent_client, "brief", "x", 2)) == "pool_not_found"

    clock.advance(days=8)
    write(agent_client, "kept", "agent_bulletin.new", 2)
    dry = tasks.prune_pools.apply(kwargs={"dry_run": True}).get()
    assert dry == {"pools": 1, "events": 1, "dry_run": 1}
    assert tasks.prune_pools.apply().get() == {"pools": 1, "events": 1}
    assert sorted(MemoryPool.objects.values_list("pool_id", flat=True)) == ["default", "kept"]
    assert list(MemoryPoolEvent.objects.values_list("path", flat=True)) == ["agent_bulletin.new"]
    assert tasks.prune_pools.apply().get() == {"pools": 0, "events": 0}
    assert JobRun.objects.filter(job="memory.prune_pools").count() == 3


@pytest.mark.django_db
def test_statistics(agent_client: AuthedAgent, teammate: AuthedAgent, settings: Any) -> None:
    settings.POOL_MAX_BYTES = 10_000
    create(agent_client, pool_id="p", data={"a": 1, "b": {"c": 2}})
    write(agent_client, "p", "agent_bulletin.x", 1)
    write(agent_client, "p", "agent_bulletin.y", 2)
    agent_client.client.put(
        f"{BASE}/p/grants/{teammate.agent.pk}", {"level": "read"}, format="json"
    )
    stats = agent_client.client.get(f"{BASE}/p/stats").json()
    pool = MemoryPool.objects.get(pool_id="p")
    assert stats["version"] == pool.version == 4
    assert stats["size_bytes"] == pool.data_size_bytes and stats["quota_bytes"] == 10_000
    assert stats["usage"] == round(pool.data_size_bytes / 10_000, 6)
    assert (stats["top_level_keys"], stats["bulletin_keys"], stats["events"]) == (3, 2, 2)
    assert stats["grants"] == {"read": 1, "write": 0}


@pytest.mark.django_db
def test_grants(
    agent_client: AuthedAgent, teammate: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    create(agent_client, pool_id="p", pool_type="team_shared")
    assert read(teammate, "p").status_code == 404
    given = agent_client.client.put(
        f"{BASE}/p/grants/{teammate.agent.pk}", {"level": "read"}, format="json"
    )
    assert given.json()["level"] == "read"
    assert read(teammate, "p").status_code == 200
    assert code(write(teammate, "p", "a", 1)) == "pool_write_denied"
    agent_client.client.put(
        f"{BASE}/p/grants/{teammate.agent.pk}", {"level": "write"}, format="json"
    )
    assert write(teammate, "p", "a", 1).status_code == 200
    grants = teammate.client.get(f"{BASE}/p/grants").json()["results"]
    assert [(g["agent_id"], g["level"]) for g in grants] == [(teammate.agent.pk, "write")]
    foreign = agent_client.client.put(
        f"{BASE}/p/grants/{other_agent_client.agent.pk}", {"level": "read"}, format="json"
    )
    assert foreign.status_code == 404 and code(foreign) == "agent_not_found"
    bad = agent_client.client.put(
        f"{BASE}/p/grants/{teammate.agent.pk}", {"level": "all"}, format="json"
    )
    assert bad.status_code == 400
    version = MemoryPool.objects.get(pool_id="p").version
    assert agent_client.client.delete(f"{BASE}/p/grants/{teammate.agent.pk}").status_code == 204
    assert MemoryPool.objects.get(pool_id="p").version == version + 1
    assert read(teammate, "p").status_code == 404
    missing = agent_client.client.delete(f"{BASE}/p/grants/{teammate.agent.pk}")
    assert missing.status_code == 404 and code(missing) == "grant_not_found"


@pytest.mark.django_db
def test_lists_take_a_bounded_number_of_queries(
    agent_client: AuthedAgent, make_agent_client: Callable[..., AuthedAgent]
) -> None:
    def queries(path: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            response = agent_client.client.get(path)
        assert response.status_code == 200, response.json()
        return len(captured.captured_queries)

    create(agent_client, pool_id="p")
    agent_client.client.get(BASE)  # the default pool, created on the first listing
    paths = [f"{BASE}?page_size=100", f"{BASE}/p/events?page_size=100", f"{BASE}/p/grants"]
    few = [queries(path) for path in paths]
    for n in range(12):
        create(agent_client, pool_id=f"q{n}")
        write(agent_client, "p", f"agent_bulletin.k{n}", n)
        grantee = AgentFactory.create(account=agent_client.agent.account)
        agent_client.client.put(f"{BASE}/p/grants/{grantee.pk}", {"level": "read"}, format="json")
    many = [queries(path) for path in paths]
    assert many == few, (few, many)
    assert max(many) <= 8
