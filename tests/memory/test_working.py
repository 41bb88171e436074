"""Working memory against the real Redis (Valkey here; CI also runs Redis 7.0): TTLs asserted on
the server, expiry by moving a key's expiry into the past (PEXPIREAT), no sleeps."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from core.actors import actor_for_account, actor_for_agent
from core.errors import PermissionDenied
from core.models import AuditEvent
from memory.models import MemoryPoolEvent, ShortTermEntry, WorkingMemorySnapshot
from memory.redis_store import memory_redis
from memory.working import services as working_services
from memory.working import store as wr
from tests.conftest import AuthedAgent
from tests.memory.conftest import code

pytestmark = pytest.mark.django_db

BASE = "/api/v1/memory/working"


def ns(authed: AuthedAgent, session: str) -> wr.Namespace:
    return wr.session_namespace(authed.agent.account_id, authed.agent.pk, session)


def pttl(key: str) -> int:
    return int(memory_redis().pttl(key))


def expire_now(key: str) -> None:
    """Move the key's expiry into the past: Redis deletes it at once (time travel)."""
    memory_redis().pexpireat(key, int(time.time() * 1000) - 1000)


def put(authed: AuthedAgent, path: str, body: dict[str, Any]) -> Any:
    return authed.client.put(f"{BASE}/{path}", body, format="json")


def test_store_retrieve_exists_remove(agent_client: AuthedAgent) -> None:
    client = agent_client.client
    stored = put(agent_client, "s1/plan", {"value": {"steps": [1, 2], "ok": True}, "ttl": 60})
    assert stored.status_code == 200, stored.json()
    body = stored.json()
    assert body["value"] == {"steps": [1, 2], "ok": True}
    assert (body["session_id"], body["key"], body["kind"], body["ttl"]) == (
        "s1",
        "plan",
        "value",
        60,
    )
    assert 55_000 < pttl(ns(agent_client, "s1").key("plan")) <= 60_000

    fetched = client.get(f"{BASE}/s1/plan").json()
    assert fetched["value"] == {"steps": [1, 2], "ok": True} and 55 <= fetched["ttl"] <= 60
    assert client.get(f"{BASE}/s1/plan/exists").json()["exists"] is True
    # JSON of every kind comes back as sent, null included.
    values: list[Any] = [None, 0, 1.5, "text", [None, {"a": []}], False]
    for value in values:
        assert put(agent_client, "s1/v", {"value": value}).status_code == 200
        assert client.get(f"{BASE}/s1/v").json()["value"] == value

    assert client.delete(f"{BASE}/s1/plan").status_code == 204
    missing = client.get(f"{BASE}/s1/plan")
    assert missing.status_code == 404 and code(missing) == "working_memory_key_not_found"
    assert client.get(f"{BASE}/s1/plan/exists").json()["exists"] is False
    again = client.delete(f"{BASE}/s1/plan")
    assert again.status_code == 404 and code(again) == "working_memory_key_not_found"


def test_ttl_defaults_and_limits(agent_client: AuthedAgent, settings: Any) -> None:
    settings.WORKING_MEMORY_DEFAULT_TTL = 300
    settings.WORKING_MEMORY_MAX_TTL = 100
    settings.WORKING_MEMORY_DEFAULT_TTL = 90
    assert put(agent_client, "s1/a", {"value": 1}).status_code == 200
    assert 85_000 < pttl(ns(agent_client, "s1").key("a")) <= 90_000
    for ttl in (101, 0, -5):
        response = put(agent_client, "s1/b", {"value": 1, "ttl": ttl})
        assert response.status_code == 400 and code(response) == "invalid_ttl", ttl
        assert response.json()["error"]["details"] == {"min": 1, "max": 100}
    typed = put(agent_client, "s1/b", {"value": 1, "ttl": "10"})
    assert typed.status_code == 400 and code(typed) == "validation_error"
    assert not memory_redis().exists(ns(agent_client, "s1").key("b"))
    assert put(agent_client, "s1/b", {"value": 1, "ttl": 100}).status_code == 200


def test_keys_come_from_the_session_index_never_a_scan(
    agent_client: AuthedAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(agent_client, "s1/short", {"value": "a", "ttl": 60})
    put(agent_client, "s1/long", {"value": "b", "ttl": 120})
    put(agent_client, "s1/_task-state", {"value": {"phase": 1}, "ttl": 30})
    put(agent_client, "other/elsewhere", {"value": "c"})
    namespace = ns(agent_client, "s1")
    # The index expires with its longest-lived entry.
    assert 115_000 < pttl(namespace.index) <= 120_000

    client = memory_redis()

    def no_scan(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("listing keys must not scan the keyspace")

    for name in ("scan", "scan_iter", "keys"):
        monkeypatch.setattr(client, name, no_scan)
    listed = agent_client.client.get(f"{BASE}/s1").json()
    assert [(k["key"], k["kind"]) for k in listed["keys"]] == [
        ("_task_state", "task_state"),
        ("long", "value"),
        ("short", "value"),
    ]
    assert listed["count"] == 3 and listed["session_id"] == "s1"
    assert 115 <= listed["keys"][1]["ttl"] <= 120

    # An entry that expired is gone from the listing, and from the index.
    expire_now(namespace.key("short"))
    listed = agent_client.client.get(f"{BASE}/s1").json()
    assert [k["key"] for k in listed["keys"]] == ["_task_state", "long"]
    assert wr.index_members(client, namespace.index) == ["_task_state", "long"]
    gone = agent_client.client.get(f"{BASE}/s1/short")
    assert gone.status_code == 404
    assert agent_client.client.get(f"{BASE}/s1/short/exists").json()["exists"] is False
    assert agent_client.client.get(f"{BASE}/nothing-here").json()["keys"] == []


def test_listing_a_session_reads_redis_in_one_round_trip(
    agent_client: AuthedAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(5):
        put(agent_client, f"s1/k{i}", {"value": i, "ttl": 60})
    namespace = ns(agent_client, "s1")
    memory_redis().delete(namespace.key("k3"))  # behind the index's back
    assert len(agent_client.client.get(f"{BASE}/s1").json()["keys"]) == 4  # (loads the script)
    sent: list[Any] = []
    original = redis.connection.AbstractConnection.send_packed_command

    def send(self: Any, command: Any, check_health: bool = True) -> None:
        sent.append(command)
        original(self, command, check_health)

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", send)
    listed = wr.live_members(namespace)
    assert len(sent) == 1
    assert [m for m, _ in listed] == ["k0", "k1", "k2", "k4"]
    assert all(55_000 < ms <= 60_000 for _, ms in listed)
    assert wr.index_members(memory_redis(), namespace.index) == ["k0", "k1", "k2", "k4"]


def test_an_oversized_value_is_413_and_changes_nothing(
    agent_client: AuthedAgent, settings: Any
) -> None:
    settings.WORKING_MEMORY_MAX_VALUE_BYTES = 1024
    assert put(agent_client, "s1/k", {"value": "small"}).status_code == 200
    big = put(agent_client, "s1/k", {"value": "é" * 600})  # 1,202 bytes of JSON
    assert big.status_code == 413 and code(big) == "value_too_large"
    assert big.json()["error"]["details"] == {"limit": 1024, "size": 1202}
    assert agent_client.client.get(f"{BASE}/s1/k").json()["value"] == "small"
    new = put(agent_client, "s1/new", {"value": ["x" * 2000]})
    assert new.status_code == 413
    assert agent_client.client.get(f"{BASE}/s1/new").status_code == 404
    assert [k["key"] for k in agent_client.client.get(f"{BASE}/s1").json()["keys"]] == ["k"]


def test_a_session_holds_at_most_the_configured_entries(
    agent_client: AuthedAgent, settings: Any
) -> None:
    settings.WORKING_MEMORY_MAX_KEYS = 3
    for key in ("a", "b", "c"):
        assert put(agent_client, f"s1/{key}", {"value": key}).status_code == 200
    full = put(agent_client, "s1/d", {"value": "d"})
    assert full.status_code == 409 and code(full) == "working_memory_full"
    assert full.json()["error"]["details"] == {"limit": 3}
    assert agent_client.client.get(f"{BASE}/s1/d").status_code == 404
    assert put(agent_client, "s1/a", {"value": "replaced"}).status_code == 200  # not a new one
    appended = agent_client.client.post(
        f"{BASE}/s1/_conversation/messages", {"message": "hi"}, format="json"
    )
    assert appended.status_code == 409 and code(appended) == "working_memory_full"
    # An entry that expired frees its place.
    expire_now(ns(agent_client, "s1").key("b"))
    assert put(agent_client, "s1/d", {"value": "d"}).status_code == 200
    agent_client.client.delete(f"{BASE}/s1/c")
    assert put(agent_client, "s1/e", {"value": "e"}).status_code == 200


def test_clear_removes_every_entry_and_the_index(agent_client: AuthedAgent) -> None:
    client = agent_client.client
    put(agent_client, "s1/a", {"value": 1})
    put(agent_client, "s1/_steps/fetch", {"value": {"rows": 3}})
    put(agent_client, "s1/_tools/search", {"value": {"cursor": "x"}})
    client.post(f"{BASE}/s1/_conversation/messages", {"message": "hi"}, format="json")
    put(agent_client, "s1/_scratch-pad", {"content": "notes"})
    put(agent_client, "s2/kept", {"value": 2})
    namespace = ns(agent_client, "s1")
    members = wr.index_members(memory_redis(), namespace.index)
    assert len(members) == 5

    cleared = client.delete(f"{BASE}/s1")
    assert cleared.status_code == 200 and cleared.json() == {"session_id": "s1", "removed": 5}
    assert not memory_redis().exists(namespace.index, *(namespace.key(m) for m in members))
    assert client.get(f"{BASE}/s1").json()["count"] == 0
    assert client.get(f"{BASE}/s2/kept").json()["value"] == 2
    assert client.delete(f"{BASE}/s1").json()["removed"] == 0


def test_task_state_steps_and_tool_states(agent_client: AuthedAgent) -> None:
    client = agent_client.client
    assert client.get(f"{BASE}/s1/_task-state").status_code == 404
    state = put(agent_client, "s1/_task-state", {"value": {"phase": "plan"}, "ttl": 45})
    assert state.json()["kind"] == "task_state" and state.json()["key"] == ""
    assert client.get(f"{BASE}/s1/_task-state").json()["value"] == {"phase": "plan"}
    put(agent_client, "s1/_steps/fetch", {"value": [1, 2]})
    put(agent_client, "s1/_steps/rank", {"value": [2, 1]})
    put(agent_client, "s1/_tools/browser", {"value": {"tab": 3}})
    step = client.get(f"{BASE}/s1/_steps/rank").json()
    assert (step["kind"], step["key"], step["value"]) == ("step", "rank", [2, 1])
    assert client.get(f"{BASE}/s1/_tools/browser").json()["value"] == {"tab": 3}
    assert client.get(f"{BASE}/s1/_steps/unknown").status_code == 404
    # Specialised entries never collide with keys of the same name.
    put(agent_client, "s1/fetch", {"value": "a key"})
    assert client.get(f"{BASE}/s1/_steps/fetch").json()["value"] == [1, 2]
    kinds = {k["key"]: k["kind"] for k in client.get(f"{BASE}/s1").json()["keys"]}
    assert kinds == {
        "_step:fetch": "step",
        "_step:rank": "step",
        "_task_state": "task_state",
        "_tool:browser": "tool_state",
        "fetch": "value",
    }
    # A key cannot be named like an operation.
    assert put(agent_client, "s1/_secret", {"value": 1}).status_code == 404


def test_the_conversation_keeps_the_latest_messages(
    agent_client: AuthedAgent, settings: Any
) -> None:
    settings.WORKING_MEMORY_CONVERSATION_MAX_MESSAGES = 3
    client = agent_client.client
    empty = client.get(f"{BASE}/s1/_conversation").json()
    assert (empty["messages"], empty["length"], empty["ttl"]) == ([], 0, None)
    for n in range(5):
        appended = client.post(
            f"{BASE}/s1/_conversation/messages",
            {"message": {"role": "user", "n": n}, "ttl": 40 + n},
            format="json",
        )
        assert appended.status_code == 200
    assert appended.json()["length"] == 3 and appended.json()["ttl"] == 44
    conversation = client.get(f"{BASE}/s1/_conversation").json()
    assert [m["n"] for m in conversation["messages"]] == [2, 3, 4]
    key = ns(agent_client, "s1").key("_conversation")
    assert memory_redis().llen(key) == 3 and 39_000 < pttl(key) <= 44_000

    replaced = client.put(
        f"{BASE}/s1/_conversation", {"messages": list(range(5)), "ttl": 20}, format="json"
    )
    assert replaced.json()["messages"] == [2, 3, 4] and replaced.json()["length"] == 3
    assert client.get(f"{BASE}/s1/_conversation").json()["messages"] == [2, 3, 4]
    cleared = client.put(f"{BASE}/s1/_conversation", {"messages": []}, format="json")
    assert cleared.json()["length"] == 0
    assert not memory_redis().exists(key)
    assert "_conversation" not in [k["key"] for k in client.get(f"{BASE}/s1").json()["keys"]]


def test_the_scratch_pad_appends_within_its_limit(agent_client: AuthedAgent, settings: Any) -> None:
    settings.WORKING_MEMORY_MAX_VALUE_BYTES = 1024
    client = agent_client.client
    assert client.get(f"{BASE}/s1/_scratch-pad").json()["content"] == ""
    put(agent_client, "s1/_scratch-pad", {"content": "first\n"})
    for line in ("second\n", "third ünïcode\n"):
        response = client.post(f"{BASE}/s1/_scratch-pad/append", {"content": line}, format="json")
        assert response.status_code == 200
    assert response.json()["size_bytes"] == len("first\nsecond\nthird ünïcode\n".encode())
    pad = client.get(f"{BASE}/s1/_scratch-pad").json()
    assert pad["content"] == "first\nsecond\nthird ünïcode\n"
    too_much = client.post(f"{BASE}/s1/_scratch-pad/append", {"content": "x" * 1000}, format="json")
    assert too_much.status_code == 413 and code(too_much) == "value_too_large"
    assert client.get(f"{BASE}/s1/_scratch-pad").json()["content"] == pad["content"]


def test_sharing_with_an_agent_of_the_same_account(
    agent_client: AuthedAgent, teammate: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    sender, recipient = agent_client.agent, teammate.agent
    shared = agent_client.client.put(
        f"{BASE}/_share/{recipient.pk}/findings", {"value": {"top": 3}, "ttl": 50}, format="json"
    )
    assert shared.status_code == 200
    assert shared.json()["agent_id"] == recipient.pk and shared.json()["ttl"] == 50
    read = teammate.client.get(f"{BASE}/_inbox/{sender.pk}/findings").json()
    assert (read["agent_id"], read["key"], read["value"]) == (sender.pk, "findings", {"top": 3})
    inbox = teammate.client.get(f"{BASE}/_inbox").json()
    assert [(i["agent_id"], i["key"]) for i in inbox["items"]] == [(sender.pk, "findings")]
    # The sender's own inbox and sessions hold nothing of it.
    assert agent_client.client.get(f"{BASE}/_inbox").json()["count"] == 0
    assert agent_client.client.get(f"{BASE}/_inbox/{recipient.pk}/findings").status_code == 404
    # Sharing again replaces.
    agent_client.client.put(
        f"{BASE}/_share/{recipient.pk}/findings", {"value": "v2"}, format="json"
    )
    assert teammate.client.get(f"{BASE}/_inbox/{sender.pk}/findings").json()["value"] == "v2"

    # Another account's agent is not an agent here, either way.
    outside = other_agent_client.agent
    refused = agent_client.client.put(
        f"{BASE}/_share/{outside.pk}/findings", {"value": 1}, format="json"
    )
    assert refused.status_code == 404 and code(refused) == "agent_not_found"
    peeking = other_agent_client.client.get(f"{BASE}/_inbox/{sender.pk}/findings")
    assert peeking.status_code == 404 and code(peeking) == "agent_not_found"
    assert other_agent_client.client.get(f"{BASE}/_inbox").json()["count"] == 0


def test_agents_never_see_each_others_sessions(
    agent_client: AuthedAgent, teammate: AuthedAgent
) -> None:
    put(agent_client, "shared-name/k", {"value": "mine"})
    assert teammate.client.get(f"{BASE}/shared-name/k").status_code == 404
    assert teammate.client.get(f"{BASE}/shared-name").json()["keys"] == []
    put(teammate, "shared-name/k", {"value": "theirs"})
    assert agent_client.client.get(f"{BASE}/shared-name/k").json()["value"] == "mine"
    teammate.client.delete(f"{BASE}/shared-name")
    assert agent_client.client.get(f"{BASE}/shared-name/k").json()["value"] == "mine"


def test_persist_to_postgresql_and_load_back(agent_client: AuthedAgent) -> None:
    client = agent_client.client
    none = client.post(f"{BASE}/s1/_persist")
    assert none.status_code == 404 and code(none) == "working_memory_session_not_found"
    unsaved = client.post(f"{BASE}/s1/_load", {}, format="json")
    assert unsaved.status_code == 404 and code(unsaved) == "working_memory_snapshot_not_found"

    put(agent_client, "s1/facts", {"value": {"city": "Lyon"}, "ttl": 200})
    put(agent_client, "s1/_steps/fetch", {"value": [1, 2], "ttl": 100})
    put(agent_client, "s1/_scratch-pad", {"content": "draft", "ttl": 100})
    client.post(f"{BASE}/s1/_conversation/messages", {"message": "hello"}, format="json")
    persisted = client.post(f"{BASE}/s1/_persist")
    assert persisted.status_code == 200 and persisted.json()["entries"] == 4
    snapshot = WorkingMemorySnapshot.objects.get(agent=agent_client.agent, session_id="s1")
    stored = {e["name"]: (e["kind"], e["value"]) for e in snapshot.entries}
    assert stored == {
        "facts": ("value", {"city": "Lyon"}),
        "_step:fetch": ("step", [1, 2]),
        "_scratch_pad": ("scratch_pad", "draft"),
        "_conversation": ("conversation", ["hello"]),
    }
    facts_ttl = next(e["ttl_ms"] for e in snapshot.entries if e["name"] == "facts")
    assert 195_000 < facts_ttl <= 200_000

    client.delete(f"{BASE}/s1")
    put(agent_client, "s1/facts", {"value": "newer"})
    put(agent_client, "s1/untouched", {"value": "stays"})
    loaded = client.post(f"{BASE}/s1/_load", {}, format="json")
    assert loaded.json() == {"session_id": "s1", "loaded": 4, "skipped": 0}
    assert client.get(f"{BASE}/s1/facts").json()["value"] == {"city": "Lyon"}
    assert client.get(f"{BASE}/s1/untouched").json()["value"] == "stays"
    assert client.get(f"{BASE}/s1/_steps/fetch").json()["value"] == [1, 2]
    assert client.get(f"{BASE}/s1/_scratch-pad").json()["content"] == "draft"
    assert client.get(f"{BASE}/s1/_conversation").json()["messages"] == ["hello"]
    # Each entry gets the TTL it had left when persisted ...
    namespace = ns(agent_client, "s1")
    assert 190_000 < pttl(namespace.key("facts")) <= facts_ttl
    # ... unless the load names one.
    client.post(f"{BASE}/s1/_load", {"ttl": 30}, format="json")
    assert 25_000 < pttl(namespace.key("facts")) <= 30_000
    actions = set(
        AuditEvent.objects.filter(agent=agent_client.agent).values_list("action", flat=True)
    )
    assert {"memory.working.persist", "memory.working.load"} <= actions
    # Persisting again replaces the copy.
    client.delete(f"{BASE}/s1/facts")
    assert client.post(f"{BASE}/s1/_persist").json()["entries"] == 4
    assert WorkingMemorySnapshot.objects.filter(agent=agent_client.agent).count() == 1


def test_redis_down_is_503_memory_unavailable_and_the_other_tiers_answer(
    agent_client: AuthedAgent,
    teammate: AuthedAgent,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    client = agent_client.client
    settings.REDIS_URL = "unix:///nonexistent/engram-redis.sock"
    calls: list[tuple[str, str, Any]] = [
        ("put", f"{BASE}/s1/k", {"value": 1}),
        ("get", f"{BASE}/s1/k", None),
        ("get", f"{BASE}/s1/k/exists", None),
        ("delete", f"{BASE}/s1/k", None),
        ("get", f"{BASE}/s1", None),
        ("delete", f"{BASE}/s1", None),
        ("put", f"{BASE}/s1/_task-state", {"value": {}}),
        ("post", f"{BASE}/s1/_conversation/messages", {"message": "hi"}),
        ("get", f"{BASE}/s1/_conversation", None),
        ("post", f"{BASE}/s1/_scratch-pad/append", {"content": "x"}),
        ("put", f"{BASE}/_share/{teammate.agent.pk}/k", {"value": 1}),
        ("get", f"{BASE}/_inbox", None),
        ("post", f"{BASE}/s1/_persist", None),
    ]
    for method, path, body in calls:
        started = time.monotonic()
        response = getattr(client, method)(path, body, format="json")
        assert response.status_code == 503, (method, path, response.content)
        assert code(response) == "memory_unavailable"
        assert response["Retry-After"] == "10"
        assert response.json()["error"]["details"] == {"store": "redis", "tier": "working"}
        assert time.monotonic() - started < 5, "a dead Redis must fail fast"

    # Short-term memory and pools (bulletin events included) keep working.
    stm = client.put("/api/v1/memory/short-term/s1/k", {"value": {"kept": True}}, format="json")
    assert stm.status_code == 201
    assert client.get("/api/v1/memory/short-term/s1/k").json()["value"] == {"kept": True}
    assert client.post("/api/v1/memory/pools", {"pool_id": "ops"}, format="json").status_code == 201
    with django_capture_on_commit_callbacks(execute=True):
        written = client.put(
            "/api/v1/memory/pools/ops/data/agent_bulletin.regime",
            {"value": "risk_off"},
            format="json",
        )
    assert written.status_code == 200 and written.json()["version"] == 2
    assert MemoryPoolEvent.objects.filter(pool__pool_id="ops").count() == 1
    events = client.get("/api/v1/memory/pools/ops/events")
    assert events.status_code == 200 and events.json()["results"][0]["value"] == "risk_off"
    assert ShortTermEntry.objects.filter(agent=agent_client.agent).count() == 1


def test_working_memory_belongs_to_agents(agent_client: AuthedAgent) -> None:
    tool = actor_for_account(agent_client.agent.account_id)
    with pytest.raises(PermissionDenied) as refused:
        working_services.working_store(actor=tool, session_id="s1", key="k", value=1)
    assert refused.value.code == "agent_required"
    entry = working_services.working_store(
        actor=actor_for_agent(agent_client.agent), session_id="s1", key="k", value=1
    )
    assert entry.value == 1


def test_bad_names_and_bodies_are_4xx_with_a_code(make_agent_client: Any) -> None:
    authed = make_agent_client(scopes=("read", "write"))
    client = authed.client
    assert code(client.get("/api/v1/memory/longish-term/s1/k")) == "not_found"
    assert client.put(f"{BASE}/bad:session/k", {"value": 1}, format="json").status_code == 404
    assert client.put(f"{BASE}/s1/{'k' * 201}", {"value": 1}, format="json").status_code == 404
    missing = client.put(f"{BASE}/s1/k", {"ttl": 5}, format="json")
    assert missing.status_code == 400 and code(missing) == "validation_error"
    unknown = client.put(f"{BASE}/s1/k", {"value": 1, "tll": 5}, format="json")
    assert unknown.status_code == 400 and code(unknown) == "unknown_field"
    pad = client.put(f"{BASE}/s1/_scratch-pad", {"content": 5}, format="json")
    assert pad.status_code == 400 and code(pad) == "validation_error"
    assert client.get(f"{BASE}/s1").json()["count"] == 0

    reader = make_agent_client(scopes=("read",), agent=authed.agent)
    refused = reader.client.put(f"{BASE}/s1/k", {"value": 1}, format="json")
    assert refused.status_code == 403 and code(refused) == "insufficient_scope"
    assert reader.client.get(f"{BASE}/s1").status_code == 200
