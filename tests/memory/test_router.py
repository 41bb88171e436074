"""The memory router on the real PostgreSQL and Redis: one search over every tier, read through
the tiers, writes to a named tier, stats; a dead Redis costs the working tier only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memory.models import MemoryContext, MemoryEntry
from tests.conftest import AuthedAgent
from tests.memory.conftest import code

pytestmark = pytest.mark.django_db

BASE = "/api/v1/memory"


def post(authed: AuthedAgent, path: str, body: dict[str, Any]) -> Any:
    return authed.client.post(f"{BASE}/{path}", body, format="json")


def seed_tiers(authed: AuthedAgent) -> None:
    client = authed.client
    assert (
        client.put(
            f"{BASE}/working/s1/deploy-plan",
            {"value": {"step": "deploy the billing service"}},
            format="json",
        ).status_code
        == 200
    )
    assert (
        client.put(
            f"{BASE}/short-term/s1/billing-notes",
            {"value": "billing service deploy needs a migration"},
            format="json",
        ).status_code
        == 201
    )
    assert (
        client.put(f"{BASE}/short-term/s1/lunch", {"value": "sandwiches"}, format="json")
    ).status_code == 201
    written = post(
        authed,
        "write",
        {
            "key": "billing-owner",
            "value": "The billing service deploy is owned by ops",
            "tier": "long_term",
        },
    )
    assert written.status_code == 200, written.json()
    assert (
        client.post(
            f"{BASE}/pools",
            {"pool_id": "ops", "data": {"deploy": "billing service freeze"}},
            format="json",
        ).status_code
        == 201
    )


def test_search_covers_every_tier_best_first(agent_client: AuthedAgent) -> None:
    seed_tiers(agent_client)
    response = post(
        agent_client,
        "search",
        {"query": "billing service deploy", "filters": {"session_id": "s1"}, "top_k": 10},
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["tiers"] == {
        "working": "ok",
        "short_term": "ok",
        "long_term": "ok",
        "shared": "ok",
    }
    tiers = {hit["tier"] for hit in body["results"]}
    assert tiers == {"working", "short_term", "long_term", "shared"}
    scores = [hit["score"] for hit in body["results"]]
    assert scores == sorted(scores, reverse=True)
    by_tier = {hit["tier"]: hit for hit in body["results"]}
    short = by_tier["short_term"]
    assert 0 < short["components"]["keyword"] == short["relevance"] <= 1
    # Every hit explains its place: its tier, its ranks and scores in each list, the fusion.
    for hit in body["results"]:
        explained = hit["explanation"]
        assert explained["tier"] == hit["tier"] and explained["fused_score"] == hit["score"]
        assert explained["keyword_rank"] or explained["vector_rank"]
    assert by_tier["long_term"]["explanation"]["vector_rank"] is not None
    assert by_tier["shared"]["path"] == "deploy"
    assert by_tier["shared"]["content"] == "billing service freeze"
    assert by_tier["short_term"]["content"] == "billing service deploy needs a migration"
    assert by_tier["working"]["key"] == "deploy-plan"
    assert set(by_tier["long_term"]["components"]) == {
        "similarity",
        "importance",
        "confidence",
        "recency",
    }
    assert by_tier["shared"]["id"] == "ops"
    # The unrelated entry is not a hit; top_k and threshold cut.
    assert all(hit["key"] != "lunch" for hit in body["results"])
    assert (
        len(post(agent_client, "search", {"query": "billing", "top_k": 1}).json()["results"]) == 1
    )
    high = post(agent_client, "search", {"query": "billing service deploy", "threshold": 0.99})
    assert all(hit["relevance"] >= 0.99 for hit in high.json()["results"])
    # Without a session, working memory is skipped; tiers can be chosen.
    only = post(agent_client, "search", {"query": "billing", "tiers": ["short_term"]}).json()
    assert only["tiers"] == {"short_term": "ok"}
    assert {hit["tier"] for hit in only["results"]} == {"short_term"}
    assert post(agent_client, "search", {"query": "billing"}).json()["tiers"]["working"] == (
        "skipped"
    )


def test_search_validates(agent_client: AuthedAgent) -> None:
    for body in (
        {"query": "x", "tiers": ["attic"]},
        {"query": "x", "top_k": 101},
        {"query": "x", "threshold": 2},
        {"query": "x", "filters": {"session_id": "_bad"}},
        {"query": " "},
    ):
        assert post(agent_client, "search", body).status_code in (400, 404), body


def test_search_sees_only_the_callers_memory(
    agent_client: AuthedAgent, teammate: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    seed_tiers(agent_client)
    for stranger in (teammate, other_agent_client):
        body = post(
            stranger, "search", {"query": "billing service deploy", "filters": {"session_id": "s1"}}
        ).json()
        # The teammate reads the public default pool tier only; nothing of the caller's.
        assert [hit for hit in body["results"] if hit["tier"] != "shared"] == []
        assert all(hit["id"] != "ops" for hit in body["results"])


def test_redis_down_working_tier_unavailable_search_answers(
    agent_client: AuthedAgent, settings: Any
) -> None:
    seed_tiers(agent_client)
    settings.REDIS_URL = "unix:///nonexistent/engram-redis.sock"
    response = post(
        agent_client, "search", {"query": "billing deploy", "filters": {"session_id": "s1"}}
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["tiers"]["working"] == "unavailable"
    assert {hit["tier"] for hit in body["results"]} == {"short_term", "long_term", "shared"}
    # Reads fall through to the next tier; stats report the tier.
    read = post(agent_client, "read", {"key": "billing-notes", "session_id": "s1"})
    assert read.status_code == 200 and read.json()["tier"] == "short_term"
    assert read.json()["tiers"]["working"] == "unavailable"
    stats = agent_client.client.get(f"{BASE}/stats?session_id=s1").json()
    assert stats["working"]["status"] == "unavailable"
    assert stats["short_term"]["entries"] == 2


def test_read_goes_working_then_short_term_then_long_term(agent_client: AuthedAgent) -> None:
    for tier, value in (("long_term", "from long"), ("short_term", "from short")):
        body = {"key": "k", "value": value, "tier": tier, "session_id": "s1"}
        assert post(agent_client, "write", body).status_code == 200
    read = post(agent_client, "read", {"key": "k", "session_id": "s1"}).json()
    assert (read["tier"], read["value"]) == ("short_term", "from short")
    post(
        agent_client,
        "write",
        {"key": "k", "value": {"w": 1}, "tier": "working", "session_id": "s1"},
    )
    read = post(agent_client, "read", {"key": "k", "session_id": "s1"}).json()
    assert (read["tier"], read["value"]) == ("working", {"w": 1})
    # Without a session only long-term memory is asked.
    read = post(agent_client, "read", {"key": "k"}).json()
    assert (read["tier"], read["value"]) == ("long_term", "from long")
    assert read["tiers"] == {"working": "skipped", "short_term": "skipped", "long_term": "ok"}
    missing = post(agent_client, "read", {"key": "nope", "session_id": "s1"})
    assert missing.status_code == 404 and code(missing) == "memory_key_not_found"


def test_long_term_write_of_a_key_writes_a_new_version(agent_client: AuthedAgent) -> None:
    first = post(agent_client, "write", {"key": "k", "value": "one", "tier": "long_term"}).json()
    second = post(agent_client, "write", {"key": "k", "value": {"n": 2}, "tier": "long_term"})
    assert second.status_code == 200
    assert (first["version"], second.json()["version"]) == (1, 2)
    context = MemoryContext.objects.get(pk=first["context_id"])
    assert context.owner_id == agent_client.agent.pk
    assert context.context_type == MemoryContext.ContextType.AGENT_MEMORY
    current = MemoryEntry.objects.get(context=context, is_current=True)
    assert current.data == {"n": 2} and current.metadata["key"] == "k"
    assert post(agent_client, "read", {"key": "k"}).json()["value"] == '{"n": 2}'
    needs_session = post(agent_client, "write", {"key": "k", "value": 1, "tier": "short_term"})
    assert needs_session.status_code == 400 and code(needs_session) == "session_required"


def test_stats_count_every_tier(
    agent_client: AuthedAgent, make_agent_client: Callable[..., AuthedAgent]
) -> None:
    seed_tiers(agent_client)
    agent_client.client.get(f"{BASE}/short-term/s1/lunch")
    agent_client.client.get(f"{BASE}/short-term/s1/lunch")
    post(agent_client, "write", {"key": "billing-owner", "value": "changed", "tier": "long_term"})
    stats = agent_client.client.get(f"{BASE}/stats?session_id=s1")
    assert stats.status_code == 200
    body = stats.json()
    assert body["working"] == {"status": "ok", "session_id": "s1", "keys": 1}
    assert body["short_term"] == {"status": "ok", "entries": 2, "sessions": 1, "accesses": 2}
    assert body["long_term"] == {
        "status": "ok",
        "contexts": 1,
        "current": 1,
        "archived": 0,
        "versions": 2,
    }
    assert body["shared"]["status"] == "ok" and body["shared"]["pools"] >= 1
    assert body["shared"]["bytes"] > 0
    stranger = make_agent_client().client.get(f"{BASE}/stats").json()
    assert stranger["short_term"]["entries"] == 0 and stranger["long_term"]["contexts"] == 0


def test_long_term_filters_leave_out_tiers_without_those_fields(agent_client: AuthedAgent) -> None:
    seed_tiers(agent_client)
    for when, text in (("2023-05-08T10:00:00Z", "May deploy"), ("2024-01-02T10:00:00Z", "Jan")):
        entry = post(
            agent_client,
            "write",
            {"key": f"deploy-{when[:4]}", "value": f"billing deploy {text}", "tier": "long_term"},
        ).json()
        MemoryEntry.objects.filter(pk=entry["entry_id"]).update(occurred_at=when)
    body = post(
        agent_client,
        "search",
        {
            "query": "billing deploy",
            "filters": {
                "session_id": "s1",
                "occurred_from": "2023-01-01T00:00:00Z",
                "occurred_to": "2023-12-31T00:00:00Z",
            },
        },
    ).json()
    assert body["tiers"] == {
        "working": "skipped",
        "short_term": "skipped",
        "long_term": "ok",
        "shared": "skipped",
    }
    assert [hit["key"] for hit in body["results"]] == ["deploy-2023"]
    # Short-term memory types only: long-term memory has none of them.
    only_short = post(
        agent_client,
        "search",
        {"query": "billing deploy", "filters": {"memory_types": ["task_context"]}},
    ).json()
    assert {hit["tier"] for hit in only_short["results"]} == {"short_term"}


def test_long_term_recalls_through_the_router_are_logged(agent_client: AuthedAgent) -> None:
    from memory.long_term.services import access_flush
    from memory.models import MemoryAccessLog

    seed_tiers(agent_client)
    found = post(agent_client, "search", {"query": "billing owner", "tiers": ["long_term"]})
    (hit,) = found.json()["results"]
    access_flush()  # reads are buffered until a flush applies them
    entry = MemoryEntry.objects.get(pk=int(hit["id"]))
    assert entry.access_count == 1 and entry.last_accessed_at is not None
    read = post(agent_client, "read", {"key": "billing-owner"})
    assert read.json()["tier"] == "long_term"
    access_flush()
    assert list(
        MemoryAccessLog.objects.filter(entry=entry).order_by("id").values_list("action", "query")
    ) == [("search", "billing owner"), ("read", "")]
