"""Long-term memory API on the real PostgreSQL with pgvector: contexts, grants and scopes,
versioned entries, batches, history, importance, archives, snapshots, search with explained
relevance, and the access log."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.models import AuditEvent
from memory.long_term.services import MAX_BATCH, access_flush
from memory.models import MemoryAccessLog, MemoryEntry, MemoryEntryPosting, MemoryEntryTerm
from memory.tuning import TUNING
from rag.graph.models import GraphMention
from tests.conftest import AuthedAgent
from tests.factories import TeamFactory
from tests.memory.conftest import code
from tests.support.mcp import error_code, tool_call

pytestmark = pytest.mark.django_db

BASE = "/api/v1/memory"


def create_context(authed: AuthedAgent, name: str = "notes", **fields: Any) -> Any:
    response = authed.client.post(f"{BASE}/contexts", {"name": name, **fields}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def add_entry(authed: AuthedAgent, context_id: int, content: str, **fields: Any) -> Any:
    response = authed.client.post(
        f"{BASE}/contexts/{context_id}/entries", {"content": content, **fields}, format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()


def search(authed: AuthedAgent, query: str, **body: Any) -> Any:
    return authed.client.post(f"{BASE}/long-term/search", {"query": query, **body}, format="json")


def test_context_lifecycle(agent_client: AuthedAgent) -> None:
    context = create_context(
        agent_client, "ops", context_type="project_context", description="d", metadata={"a": 1}
    )
    assert context["owner_agent_id"] == agent_client.agent.pk
    assert context["access"] == {"read": True, "write": True}
    assert (context["scope"], context["team_id"], context["entry_count"]) == ("agent", None, 0)
    cid = context["id"]
    assert agent_client.client.get(f"{BASE}/contexts/{cid}").json() == context
    listed = agent_client.client.get(f"{BASE}/contexts").json()
    assert [c["id"] for c in listed["results"]] == [cid]

    patched = agent_client.client.patch(
        f"{BASE}/contexts/{cid}", {"name": "ops2", "metadata": {"b": 2}}, format="json"
    ).json()
    assert (patched["name"], patched["metadata"]) == ("ops2", {"b": 2})
    taken = create_context(agent_client, "taken")
    clash = agent_client.client.patch(
        f"{BASE}/contexts/{taken['id']}", {"name": "ops2"}, format="json"
    )
    assert clash.status_code == 409 and code(clash) == "context_name_taken"
    again = agent_client.client.post(f"{BASE}/contexts", {"name": "ops2"}, format="json")
    assert again.status_code == 409 and code(again) == "context_name_taken"

    archived = agent_client.client.post(f"{BASE}/contexts/{cid}/archive").json()
    assert archived["archived_at"] is not None
    assert cid not in [
        c["id"] for c in agent_client.client.get(f"{BASE}/contexts").json()["results"]
    ]
    everything = agent_client.client.get(f"{BASE}/contexts?include_archived=true").json()
    assert cid in [c["id"] for c in everything["results"]]
    refused = agent_client.client.post(
        f"{BASE}/contexts/{cid}/entries", {"content": "x"}, format="json"
    )
    assert refused.status_code == 409 and code(refused) == "context_archived"
    back = agent_client.client.post(f"{BASE}/contexts/{cid}/unarchive").json()
    assert back["archived_at"] is None

    add_entry(agent_client, cid, "kept until the context goes")
    assert agent_client.client.delete(f"{BASE}/contexts/{cid}").status_code == 204
    gone = agent_client.client.get(f"{BASE}/contexts/{cid}")
    assert gone.status_code == 404 and code(gone) == "context_not_found"
    assert not MemoryEntry.objects.filter(context_id=cid).exists()
    # The index goes with it (PostgreSQL cascades, migration 0003).
    assert not MemoryEntryPosting.objects.filter(context_id=cid).exists()
    assert not MemoryEntryTerm.objects.filter(context_id=cid).exists()
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"memory.context.create", "memory.context.update", "memory.context.delete"} <= actions


@pytest.mark.parametrize(
    "body, expected",
    [
        ({}, "validation_error"),
        ({"name": "x", "scope": "team"}, "team_required"),
        ({"name": "x", "team_id": 5}, "team_not_allowed"),
        ({"name": "x", "scope": "team", "team_id": 987654321}, "team_not_found"),
        ({"name": "x", "scope": "nowhere"}, "validation_error"),
        ({"name": "x", "metadata": []}, "validation_error"),
        ({"name": "x", "colour": "red"}, "unknown_field"),
    ],
)
def test_context_create_refuses_bad_input(
    agent_client: AuthedAgent, body: dict[str, Any], expected: str
) -> None:
    response = agent_client.client.post(f"{BASE}/contexts", body, format="json")
    assert 400 <= response.status_code < 500 and code(response) == expected


def test_foreign_and_missing_contexts_answer_alike(
    agent_client: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    foreign = create_context(other_agent_client)
    entry = add_entry(other_agent_client, foreign["id"], "secret")
    for path in (f"contexts/{foreign['id']}", "contexts/987654321"):
        response = agent_client.client.get(f"{BASE}/{path}")
        assert response.status_code == 404 and code(response) == "context_not_found"
    for entry_id in (entry["id"], 987654321):
        response = agent_client.client.get(f"{BASE}/entries/{entry_id}")
        assert response.status_code == 404 and code(response) == "entry_not_found"
    response = search(agent_client, "secret", filters={"context_ids": [foreign["id"]]})
    assert response.status_code == 404 and code(response) == "context_not_found"


def test_grants_read_only_and_write(agent_client: AuthedAgent, teammate: AuthedAgent) -> None:
    context = create_context(agent_client)
    cid = context["id"]
    entry = add_entry(agent_client, cid, "The build server is in Frankfurt.")
    hidden = teammate.client.get(f"{BASE}/contexts/{cid}")
    assert hidden.status_code == 404 and code(hidden) == "context_not_found"

    granted = agent_client.client.post(
        f"{BASE}/contexts/{cid}/grants",
        {"agent_id": teammate.agent.pk, "level": "read"},
        format="json",
    )
    assert granted.status_code == 201 and granted.json()["level"] == "read"
    grants = agent_client.client.get(f"{BASE}/contexts/{cid}/grants").json()["results"]
    assert [(g["agent_id"], g["level"]) for g in grants] == [(teammate.agent.pk, "read")]
    seen = teammate.client.get(f"{BASE}/contexts/{cid}").json()
    assert seen["access"] == {"read": True, "write": False}
    assert teammate.client.get(f"{BASE}/entries/{entry['id']}").status_code == 200
    for method, path, body in (
        ("post", f"contexts/{cid}/entries", {"content": "x"}),
        ("post", f"contexts/{cid}/entries/batch", {"entries": [{"content": "x"}]}),
        ("patch", f"contexts/{cid}", {"name": "mine"}),
        ("delete", f"contexts/{cid}", None),
        ("post", f"contexts/{cid}/archive", None),
        ("post", f"contexts/{cid}/snapshots", {}),
        ("post", f"contexts/{cid}/grants", {"agent_id": teammate.agent.pk, "level": "write"}),
        ("patch", f"entries/{entry['id']}", {"content": "Berlin"}),
        ("delete", f"entries/{entry['id']}", None),
        ("post", f"entries/{entry['id']}/importance", {"delta": 0.1}),
        ("post", f"entries/{entry['id']}/archive", {}),
    ):
        response = getattr(teammate.client, method)(f"{BASE}/{path}", body, format="json")
        assert response.status_code == 403, (path, response.json())
        assert code(response) == "context_read_only"

    agent_client.client.post(
        f"{BASE}/contexts/{cid}/grants",
        {"agent_id": teammate.agent.pk, "level": "write"},
        format="json",
    )
    add_entry(teammate, cid, "Written by the teammate.")
    bad = agent_client.client.post(
        f"{BASE}/contexts/{cid}/grants", {"agent_id": 987654321, "level": "read"}, format="json"
    )
    assert bad.status_code == 404 and code(bad) == "agent_not_found"
    bad = agent_client.client.post(
        f"{BASE}/contexts/{cid}/grants", {"agent_id": 1, "level": "admin"}, format="json"
    )
    assert bad.status_code == 400
    revoked = agent_client.client.delete(f"{BASE}/contexts/{cid}/grants/{teammate.agent.pk}")
    assert revoked.status_code == 204
    again = agent_client.client.delete(f"{BASE}/contexts/{cid}/grants/{teammate.agent.pk}")
    assert again.status_code == 404 and code(again) == "grant_not_found"
    assert teammate.client.get(f"{BASE}/contexts/{cid}").status_code == 404


def test_team_scope_visibility(agent_client: AuthedAgent, teammate: AuthedAgent) -> None:
    team = TeamFactory.create(account=agent_client.agent.account)
    team.agents.add(agent_client.agent)
    context = create_context(agent_client, "team notes", scope="team", team_id=team.pk)
    assert context["team_id"] == team.pk
    add_entry(agent_client, context["id"], "Standup moved to 9:30.")
    assert teammate.client.get(f"{BASE}/contexts/{context['id']}").status_code == 404
    assert search(teammate, "standup").json()["results"] == []
    team.agents.add(teammate.agent)
    seen = teammate.client.get(f"{BASE}/contexts/{context['id']}").json()
    assert seen["access"] == {"read": True, "write": False}
    assert search(teammate, "standup", mode="keyword").json()["results"]
    listed = teammate.client.get(f"{BASE}/contexts?scope=team").json()["results"]
    assert [c["id"] for c in listed] == [context["id"]]


def test_global_scope_lets_every_agent_write(
    agent_client: AuthedAgent, teammate: AuthedAgent
) -> None:
    context = create_context(agent_client, "global", scope="global")
    add_entry(teammate, context["id"], "Anyone may write here.")


def test_entry_lifecycle_versions_and_history(agent_client: AuthedAgent) -> None:
    cid = create_context(agent_client)["id"]
    entry = add_entry(
        agent_client,
        cid,
        "The office is in Lisbon.",
        entry_type="fact",
        tags=["office"],
        metadata={"k": 1},
        importance=0.6,
    )
    assert (entry["version"], entry["is_current"], entry["previous_id"]) == (1, True, None)
    assert entry["embedding_model"] and "embedding" not in entry
    assert entry["author_agent_id"] == agent_client.agent.pk
    read = agent_client.client.get(f"{BASE}/entries/{entry['id']}").json()
    assert read["access_count"] == 1 and read["last_accessed_at"] is not None

    conflict = agent_client.client.patch(
        f"{BASE}/entries/{entry['id']}",
        {"content": "The office is in Porto.", "expected_version": 2},
        format="json",
    )
    assert conflict.status_code == 409 and code(conflict) == "version_conflict"
    assert conflict.json()["error"]["details"]["current_version"] == 1
    second = agent_client.client.patch(
        f"{BASE}/entries/{entry['id']}",
        {"content": "The office is in Porto.", "expected_version": 1},
        format="json",
    )
    assert second.status_code == 200
    new = second.json()
    assert (new["version"], new["previous_id"], new["lineage"]) == (
        2,
        entry["id"],
        entry["lineage"],
    )
    assert new["id"] != entry["id"] and new["tags"] == ["office"]
    stale = agent_client.client.patch(
        f"{BASE}/entries/{entry['id']}", {"content": "Madrid"}, format="json"
    )
    assert stale.status_code == 409 and code(stale) == "version_conflict"
    # History is read-only, in place too.
    stale = agent_client.client.patch(
        f"{BASE}/entries/{entry['id']}", {"importance": 0.9}, format="json"
    )
    assert stale.status_code == 409 and code(stale) == "version_conflict"
    in_place = agent_client.client.patch(
        f"{BASE}/entries/{new['id']}", {"importance": 0.9, "metadata": {"k": 2}}, format="json"
    ).json()
    assert (in_place["id"], in_place["version"], in_place["importance"]) == (new["id"], 2, 0.9)

    history = agent_client.client.get(f"{BASE}/entries/{new['id']}/versions").json()["results"]
    assert [(h["version"], h["is_current"]) for h in history] == [(2, True), (1, False)]
    assert history[1]["content"] == "The office is in Lisbon."
    listed = agent_client.client.get(f"{BASE}/contexts/{cid}/entries").json()["results"]
    assert [e["id"] for e in listed] == [new["id"]]

    empty = agent_client.client.patch(
        f"{BASE}/entries/{new['id']}", {"content": "  "}, format="json"
    )
    assert empty.status_code == 400 and code(empty) == "empty_entry"
    assert agent_client.client.delete(f"{BASE}/entries/{new['id']}").status_code == 204
    assert not MemoryEntry.objects.filter(lineage=entry["lineage"]).exists()
    gone = agent_client.client.get(f"{BASE}/entries/{entry['id']}")
    assert gone.status_code == 404 and code(gone) == "entry_not_found"


@pytest.mark.parametrize(
    "body, status, expected",
    [
        ({"content": ""}, 400, "empty_entry"),
        ({"data": {"k": 1}, "content": ""}, 201, None),
        ({"content": "x", "thread": "s1"}, 400, "invalid_thread"),
        ({"content": "x", "importance": 1.5}, 400, "validation_error"),
        ({"content": "x", "importance": "high"}, 400, "validation_error"),
        ({"content": "x", "entry_type": "poem"}, 400, "validation_error"),
        ({"content": "x", "position": 2**40, "thread": "t"}, 400, "validation_error"),
        ({"content": "x", "tags": "a"}, 400, "validation_error"),
        ({"content": "x" * 100_001}, 413, "content_too_large"),
    ],
)
def test_entry_create_input(
    agent_client: AuthedAgent, body: dict[str, Any], status: int, expected: str | None
) -> None:
    cid = create_context(agent_client)["id"]
    response = agent_client.client.post(f"{BASE}/contexts/{cid}/entries", body, format="json")
    assert response.status_code == status, response.json()
    if expected:
        assert code(response) == expected


def test_batch_writes_all_or_nothing_within_limits(agent_client: AuthedAgent) -> None:
    cid = create_context(agent_client)["id"]
    url = f"{BASE}/contexts/{cid}/entries/batch"
    written = agent_client.client.post(
        url,
        {"entries": [{"content": f"line {i}", "thread": "s", "position": i} for i in range(3)]},
        format="json",
    )
    assert written.status_code == 201
    assert [e["position"] for e in written.json()["entries"]] == [0, 1, 2]
    for entries in ([], [{"content": "x"}] * (MAX_BATCH + 1)):
        response = agent_client.client.post(url, {"entries": entries}, format="json")
        assert response.status_code == 400 and code(response) == "invalid_batch_size"
    broken = agent_client.client.post(
        url, {"entries": [{"content": "fine"}, {"content": ""}]}, format="json"
    )
    assert broken.status_code == 400 and code(broken) == "empty_entry"
    assert "entries[1]" in broken.json()["error"]["message"]
    assert MemoryEntry.objects.filter(context_id=cid).count() == 3
    bad = agent_client.client.post(url, {"entries": "x"}, format="json")
    assert bad.status_code == 400


def test_importance_and_archive(agent_client: AuthedAgent) -> None:
    cid = create_context(agent_client)["id"]
    entry = add_entry(agent_client, cid, "Invoices are due on the 5th.", importance=0.5)
    url = f"{BASE}/entries/{entry['id']}"
    boosted = agent_client.client.post(f"{url}/importance", {"delta": 0.8}, format="json").json()
    assert boosted["importance"] == 1.0
    lowered = agent_client.client.post(f"{url}/importance", {"delta": -0.25}, format="json")
    assert lowered.json()["importance"] == 0.75
    for delta in (2, "up", None):
        bad = agent_client.client.post(f"{url}/importance", {"delta": delta}, format="json")
        assert bad.status_code == 400
    assert search(agent_client, "invoices due", mode="keyword").json()["results"]
    archived = agent_client.client.post(f"{url}/archive", {"reason": "old"}, format="json")
    assert archived.json()["archived_at"] is not None
    assert search(agent_client, "invoices due", mode="keyword").json()["results"] == []
    listed = agent_client.client.get(f"{BASE}/contexts/{cid}/entries").json()["results"]
    assert listed == []
    listed = agent_client.client.get(f"{BASE}/contexts/{cid}/entries?include_archived=true")
    assert [e["id"] for e in listed.json()["results"]] == [entry["id"]]
    back = agent_client.client.post(f"{url}/unarchive").json()
    assert back["archived_at"] is None
    assert search(agent_client, "invoices due", mode="keyword").json()["results"]


def test_snapshots_and_restore(agent_client: AuthedAgent) -> None:
    cid = create_context(agent_client)["id"]
    first = add_entry(agent_client, cid, "Deploys happen on Tuesdays.")
    doomed = add_entry(agent_client, cid, "The staging database is called pluto.")
    snapshot = agent_client.client.post(
        f"{BASE}/contexts/{cid}/snapshots", {"name": "before"}, format="json"
    )
    assert snapshot.status_code == 201
    body = snapshot.json()
    assert (body["name"], body["entry_count"], body["context_id"]) == ("before", 2, cid)
    listed = agent_client.client.get(f"{BASE}/contexts/{cid}/snapshots").json()["results"]
    assert [s["id"] for s in listed] == [body["id"]]

    agent_client.client.patch(
        f"{BASE}/entries/{first['id']}", {"content": "Deploys happen on Fridays."}, format="json"
    )
    agent_client.client.delete(f"{BASE}/entries/{doomed['id']}")
    add_entry(agent_client, cid, "Written after the snapshot.")
    report = agent_client.client.post(f"{BASE}/snapshots/{body['id']}/restore")
    assert report.status_code == 200
    assert report.json() == {"restored": 1, "recreated": 1, "archived": 1, "unchanged": 0}
    contents = {
        e["content"]
        for e in agent_client.client.get(f"{BASE}/contexts/{cid}/entries").json()["results"]
    }
    assert contents == {"Deploys happen on Tuesdays.", "The staging database is called pluto."}
    missing = agent_client.client.post(f"{BASE}/snapshots/987654321/restore")
    assert missing.status_code == 404 and code(missing) == "snapshot_not_found"


def test_search_in_prf_mode_explains_its_stages(agent_client: AuthedAgent) -> None:
    cid = create_context(agent_client)["id"]
    first = add_entry(agent_client, cid, "Caroline researched adoption agencies for months.")
    second = add_entry(agent_client, cid, "The adoption agencies she called were helpful.")
    add_entry(agent_client, cid, "Cats sleep most of the day.")
    response = search(agent_client, "What did Caroline research?", mode="prf")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["results"][0]["id"] == first["id"]
    # The second entry shares no word with the question: the expanded BM25 stage found it.
    found = {hit["id"]: hit["retrieval"] for hit in body["results"]}
    assert found[second["id"]]["keyword_rank"] is not None
    assert {"vector", "keyword", "prf"} <= set(body["timings_ms"])


def test_graph_search_rescores_its_best_entries_by_late_interaction(
    agent_client: AuthedAgent, tune: Callable[[str, Any], None]
) -> None:
    cid = create_context(agent_client)["id"]
    for text in (
        "Melanie went camping in the mountains with her kids.",
        "Melanie signed up for a pottery class last week.",
        "Melanie painted a sunset over the lake.",
        "Melanie thinks the weather was nice yesterday.",
        "The train to Lisbon was late again.",
    ):
        add_entry(agent_client, cid, text)
    question = "What activities does Melanie partake in?"
    body = search(agent_client, question, mode="graph").json()
    assert "late" in body["timings_ms"]
    scores = [hit["retrieval"]["late_score"] for hit in body["results"]]
    assert len(scores) == 5 and all(-1 <= score <= 1 for score in scores)

    # Weighed heavily, the late score alone orders the hits.
    tune("memory.spaces.entries.late_weight", 1e3)
    heavy = search(agent_client, question, mode="graph").json()["results"]
    late = [hit["retrieval"]["late_score"] for hit in heavy]
    assert late == sorted(late, reverse=True)
    assert heavy[-1]["content"] == "The train to Lisbon was late again."
    # Off, a graph search reads no token states.
    tune("memory.spaces.entries.late_weight", 0)
    off = search(agent_client, question, mode="graph").json()
    assert "late" not in off["timings_ms"]
    assert all(hit["retrieval"]["late_score"] is None for hit in off["results"])


def test_the_mcp_tool_searches_as_the_api_does(agent_client: AuthedAgent) -> None:
    cid = create_context(agent_client)["id"]
    for text in (
        "Caroline moved to Porto to study marine biology.",
        "Caroline adopted a grey cat called Miso.",
        "The ferry timetable changes in October.",
    ):
        add_entry(agent_client, cid, text)
    bodies: list[dict[str, Any]] = [
        {"query": "Where does Caroline study?", "mode": "graph", "max_hops": 3},
        {"query": "Caroline's cat", "stages": ["vector", "keyword", "graph"], "top_k": 2},
    ]
    for body in bodies:
        result = tool_call(agent_client.secret, "memory_search", {"kind": "long_term", **body})
        assert not result["isError"], result
        through_mcp = result["structuredContent"]["results"]
        through_api = search(agent_client, **body).json()["results"]
        assert through_mcp and [hit["id"] for hit in through_mcp] == [
            hit["id"] for hit in through_api
        ]
        assert [hit["retrieval"]["graph_rank"] for hit in through_mcp] == [
            hit["retrieval"]["graph_rank"] for hit in through_api
        ]
    late = [hit["retrieval"]["late_score"] for hit in through_mcp]
    assert late == [None] * len(through_mcp) or all(-1 <= score <= 1 for score in late)
    refused = tool_call(
        agent_client.secret,
        "memory_search",
        {"kind": "long_term", "query": "cat", "stages": ["graph"], "mode": "vector"},
    )
    assert error_code(refused) == "invalid_stages"


def test_search_explains_components_and_logs_access(agent_client: AuthedAgent) -> None:
    cid = create_context(agent_client)["id"]
    deploy = add_entry(agent_client, cid, "The deploy runs on Fridays at noon.", importance=0.9)
    add_entry(agent_client, cid, "Cats sleep most of the day.", entry_type="observation")
    response = search(agent_client, "when do deploys run?", top_k=2)
    assert response.status_code == 200
    body = response.json()
    hit = body["results"][0]
    assert hit["id"] == deploy["id"] and hit["context_id"] == cid and hit["version"] == 1
    components = hit["components"]
    assert set(components) == {"similarity", "importance", "confidence", "recency"}
    assert components["importance"] == 0.9 and components["confidence"] == 1.0
    assert 0.99 <= components["recency"] <= 1
    expected = 0.7 * components["similarity"] + 0.1 * (
        components["importance"] + components["confidence"] + components["recency"]
    )
    assert hit["score"] == pytest.approx(expected, abs=1e-5)
    assert set(hit["retrieval"]) == {
        "score",
        "vector_rank",
        "vector_score",
        "keyword_rank",
        "keyword_score",
        "graph_rank",
        "graph_score",
        "graph",
        "late_score",
    }
    # No mode: a graph search. These entries mention no graph node, so no hit was reached by
    # the walk, and late interaction re-scored the candidates.
    assert hit["retrieval"]["graph"] is None
    assert -1 <= hit["retrieval"]["late_score"] <= 1
    assert {"vector", "keyword", "graph_seeds", "graph_walk", "late"} <= set(body["timings_ms"])

    filtered = search(
        agent_client, "cats day deploy", filters={"entry_types": ["observation"]}
    ).json()
    assert [h["content"] for h in filtered["results"]] == ["Cats sleep most of the day."]
    high = search(agent_client, "deploy", threshold=1).json()
    assert high["results"] == []

    access_flush()  # reads are buffered until a flush applies them
    log = agent_client.client.get(f"{BASE}/contexts/{cid}/access-log").json()["results"]
    assert {(row["action"], row["query"]) for row in log} >= {("search", "when do deploys run?")}
    assert all(row["agent_id"] == agent_client.agent.pk for row in log)
    entry = MemoryEntry.objects.get(pk=deploy["id"])
    assert entry.access_count == 1 and entry.last_accessed_at is not None
    agent_client.client.get(f"{BASE}/entries/{deploy['id']}")
    access_flush()
    assert MemoryAccessLog.objects.filter(entry_id=deploy["id"], action="read").count() == 1


@pytest.mark.parametrize(
    "body",
    [
        {"query": ""},
        {"query": "x", "top_k": 0},
        {"query": "x", "mode": "psychic"},
        {"query": "x", "threshold": 2},
        {"query": "x", "filters": {"context_ids": ["a"]}},
        {"query": "x", "filters": {"entry_types": ["poem"]}},
        {"query": "x", "filters": {"colour": "red"}},
        {"query": "x", "filters": {"occurred_from": "yesterday"}},
        {"query": "x", "weights": {"vector": -1}},
    ],
)
def test_search_refuses_bad_input(agent_client: AuthedAgent, body: dict[str, Any]) -> None:
    create_context(agent_client)
    response = agent_client.client.post(f"{BASE}/long-term/search", body, format="json")
    assert response.status_code == 400, response.json()


def test_search_needs_only_the_read_scope(
    agent_client: AuthedAgent, make_agent_client: Any
) -> None:
    reader = make_agent_client(scopes=("read",), agent=agent_client.agent)
    assert search(reader, "anything").status_code == 200
    refused = reader.client.post(f"{BASE}/contexts", {"name": "x"}, format="json")
    assert refused.status_code == 403 and code(refused) == "insufficient_scope"


def test_entries_go_to_the_named_context_or_the_agents_own_memory(
    agent_client: AuthedAgent, teammate: AuthedAgent
) -> None:
    client = agent_client.client
    own = client.post(
        f"{BASE}/entries",
        {"content": "The staging database is db-2.", "entry_type": "fact", "tags": ["infra"]},
        format="json",
    )
    assert own.status_code == 201, own.json()
    mine = own.json()["context_id"]
    context = client.get(f"{BASE}/contexts/{mine}").json()
    assert (context["name"], context["scope"]) == (f"agent:{agent_client.agent.pk}", "agent")
    again = client.post(f"{BASE}/entries", {"content": "Deploys on Fridays."}, format="json")
    assert again.json()["context_id"] == mine
    # A teammate's default memory is its own, and it cannot read this one.
    theirs = teammate.client.post(f"{BASE}/entries", {"content": "x"}, format="json").json()
    assert theirs["context_id"] != mine
    assert teammate.client.get(f"{BASE}/entries/{own.json()['id']}").status_code == 404

    named = create_context(agent_client, "project")
    batch = client.post(
        f"{BASE}/entries/batch",
        {"context": named["id"], "entries": [{"content": "a"}, {"content": "b"}]},
        format="json",
    )
    assert batch.status_code == 201, batch.json()
    assert {e["context_id"] for e in batch.json()["entries"]} == {named["id"]}
    default_batch = client.post(
        f"{BASE}/entries/batch", {"entries": [{"content": "c"}]}, format="json"
    )
    assert default_batch.json()["entries"][0]["context_id"] == mine
    # A context the caller may not write: 404 when invisible, 403 when read-only.
    foreign = teammate.client.post(
        f"{BASE}/entries", {"content": "x", "context": named["id"]}, format="json"
    )
    assert foreign.status_code == 404 and code(foreign) == "context_not_found"

    versions_of = own.json()["id"]
    patched = client.patch(
        f"{BASE}/entries/{versions_of}", {"content": "The staging database is db-3."}, format="json"
    ).json()
    versions = client.get(f"{BASE}/entries/{patched['id']}/versions").json()["results"]
    assert [v["version"] for v in versions] == [2, 1]


def test_a_search_names_its_mode_or_is_a_graph_search(agent_client: AuthedAgent) -> None:
    """No mode: graph (the default), or hybrid when the search names its stages."""
    cid = create_context(agent_client)["id"]
    deploy = add_entry(agent_client, cid, "The deploy runs on Fridays at noon.")
    add_entry(agent_client, cid, "Cats sleep most of the day.")
    default = search(agent_client, "when do deploys run?", top_k=2).json()
    assert default["results"][0]["id"] == deploy["id"]
    assert default["results"][0]["retrieval"]["late_score"] is not None
    assert {"graph_seeds", "graph_walk", "late"} <= set(default["timings_ms"])
    hybrid = search(agent_client, "when do deploys run?", top_k=2, mode="hybrid").json()
    assert hybrid["results"][0]["id"] == deploy["id"]
    assert hybrid["results"][0]["retrieval"]["late_score"] is None  # graph searches only
    assert "graph_walk" not in hybrid["timings_ms"]
    staged = search(agent_client, "when do deploys run?", top_k=2, stages=["vector"]).json()
    assert staged["results"][0]["retrieval"]["keyword_rank"] is None
    assert "keyword" not in staged["timings_ms"] and "graph_walk" not in staged["timings_ms"]
    walked = search(agent_client, "when do deploys run?", stages=["vector", "graph"]).json()
    assert "graph_walk" in walked["timings_ms"] and "keyword" not in walked["timings_ms"]


def test_written_entries_join_the_graph_and_a_default_search_hops_through_them(
    agent_client: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    """A write's entries are linked to the knowledge graph once it commits (the worker's
    ``memory.tasks.link_entries``, run here by eager Celery), and so is a new version: the
    default search then reaches, through the person, an entry that shares no word with the
    question but "born", which distractors share too."""
    cid = create_context(agent_client)["id"]
    with django_capture_on_commit_callbacks(execute=True):
        add_entry(agent_client, cid, "The Harbor Library is run by Jonas Lind.")
        born = add_entry(agent_client, cid, "Jonas Lind was born in Kiruna.")
        for text in (
            "Where was the new wing of the Harbor Library built? Near the port.",
            "The Harbor Library runs a story hour for children born this year.",
            "The person who runs the bakery was born in Lund.",
            "Where the Harbor Library keeps its maps: the second floor.",
        ):
            add_entry(agent_client, cid, text)
    question = "Where was the person who runs the Harbor Library born?"
    found = search(agent_client, question, top_k=3).json()["results"]
    reached = {hit["id"]: hit["retrieval"]["graph"] for hit in found}
    assert born["id"] in reached, [hit["content"] for hit in found]
    assert reached[born["id"]] is not None  # reached by the walk, not by its words
    # Linking follows new versions: the old text's node is left, the new one's reached.
    with django_capture_on_commit_callbacks(execute=True):
        moved = agent_client.client.patch(
            f"{BASE}/entries/{born['id']}",
            {"content": "Jonas Lind was born in Kiruna, near Abisko."},
            format="json",
        ).json()
    found = search(agent_client, question, top_k=3).json()["results"]
    assert moved["id"] in {hit["id"] for hit in found}
    assert next(h for h in found if h["id"] == moved["id"])["retrieval"]["graph"] is not None

    def linked(entry_id: int) -> set[str]:
        return set(
            GraphMention.objects.filter(space="memory_entries", unit_id=entry_id).values_list(
                "node__name", flat=True
            )
        )

    assert linked(born["id"]) == set()  # the earlier version: nothing derived from it stays
    assert {"Jonas Lind", "Abisko"} <= linked(moved["id"])
    with django_capture_on_commit_callbacks(execute=True):
        agent_client.client.post(f"{BASE}/entries/{moved['id']}/archive", format="json")
    assert linked(moved["id"]) == set()
    with django_capture_on_commit_callbacks(execute=True):
        agent_client.client.post(f"{BASE}/entries/{moved['id']}/unarchive", format="json")
    assert "Abisko" in linked(moved["id"])
    with django_capture_on_commit_callbacks(execute=True):
        assert agent_client.client.delete(f"{BASE}/entries/{moved['id']}").status_code == 204
    assert linked(moved["id"]) == set()
    assert not GraphMention.objects.filter(node__name="Abisko").exists()


def test_a_deleted_context_leaves_nothing_it_wrote_in_the_graph(
    agent_client: AuthedAgent,
    make_agent_client: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Deleting a context drops its entries' graph mentions once it commits
    (``memory.tasks.forget_context_links``): another context's, and another account's, stay."""
    intruder = make_agent_client()
    mine, kept = (
        create_context(agent_client, "mine")["id"],
        create_context(agent_client, "kept")["id"],
    )
    theirs = create_context(intruder, "theirs")["id"]
    with django_capture_on_commit_callbacks(execute=True):
        add_entry(agent_client, mine, "Petra Oskarsson sails with Lena Holm.")
        add_entry(agent_client, kept, "Lena Holm teaches at the Dune Academy.")
        add_entry(intruder, theirs, "Petra Oskarsson sails with Lena Holm.")

    def count(account_id: int, name: str) -> int:
        return GraphMention.objects.filter(account_id=account_id, node__name=name).count()

    mine_account, their_account = agent_client.agent.account_id, intruder.agent.account_id
    assert count(mine_account, "Petra Oskarsson") == 1 and count(mine_account, "Lena Holm") == 2
    with django_capture_on_commit_callbacks(execute=True):
        assert agent_client.client.delete(f"{BASE}/contexts/{mine}").status_code == 204
    assert not GraphMention.objects.filter(space="memory_entries", scope_id=mine).exists()
    assert count(mine_account, "Petra Oskarsson") == 0 and count(mine_account, "Lena Holm") == 1
    assert count(their_account, "Petra Oskarsson") == 1  # another account's graph: untouched


def test_what_a_private_entry_links_stays_with_its_readers(
    agent_client: AuthedAgent, teammate: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    """The nodes an entry of the agent's own memory is linked to keep that memory's visibility:
    a teammate without a grant finds neither the node nor the entry through the graph."""
    with django_capture_on_commit_callbacks(execute=True):
        response = agent_client.client.post(
            f"{BASE}/entries", {"content": "Zorvald Quennick was born in Kiruna."}, format="json"
        )
    assert response.status_code == 201, response.json()

    def names(authed: AuthedAgent) -> set[str]:
        answer = authed.client.get("/api/v1/graph/nodes", {"query": "Zorvald Quennick"})
        assert answer.status_code == 200, answer.json()
        return {hit["node"]["name"] for hit in answer.json()["results"]}

    assert "Zorvald Quennick" in names(agent_client)
    assert "Zorvald Quennick" not in names(teammate)
    found = search(teammate, "Where was Zorvald Quennick born?").json()["results"]
    assert found == []


def test_with_the_broker_down_links_are_made_by_the_writer_or_the_pending_job(
    agent_client: AuthedAgent,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The link task cannot be sent: the write still answers 201, and its process links a write
    of up to ``INLINE_LINK_MAX`` entries itself. A larger write, or one whose linking fails
    there, waits in ``PendingGraphLink`` for the ``memory.link_pending`` job, which links the
    live entries and unlinks those archived meanwhile."""
    from kombu.exceptions import OperationalError

    from memory import tasks
    from memory.long_term.services import graph_links
    from memory.models import PendingGraphLink

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("Error 111 connecting to localhost:6379. Connection refused.")

    def names(entry_ids: list[int]) -> set[str]:
        return set(
            GraphMention.objects.filter(space="memory_entries", unit_id__in=entry_ids)
            .values_list("node__name", flat=True)
        )  # fmt: skip

    monkeypatch.setattr(tasks.link_entries, "apply_async", refuse)
    cid = create_context(agent_client)["id"]
    with django_capture_on_commit_callbacks(execute=True):
        small = add_entry(agent_client, cid, "Ilse Brandvik founded the Tern Rowing Club.")
    assert {"Ilse Brandvik", "Tern Rowing Club"} <= names([small["id"]])
    assert not PendingGraphLink.objects.exists()

    monkeypatch.setattr(graph_links, "INLINE_LINK_MAX", 1)
    with django_capture_on_commit_callbacks(execute=True):
        batch = agent_client.client.post(
            f"{BASE}/entries/batch",
            {
                "context": cid,
                "entries": [
                    {"content": "Oskar Vell rows for the Tern Rowing Club."},
                    {"content": "Marit Solberg coaches Oskar Vell."},
                ],
            },
            format="json",
        )
    assert batch.status_code == 201, batch.json()
    ids = [entry["id"] for entry in batch.json()["entries"]]
    assert names(ids) == set()
    assert set(PendingGraphLink.objects.values_list("entry_id", flat=True)) == set(ids)
    assert "wait for the memory.link_pending job" in caplog.text

    # Linking fails in the writer's process too: the archive's unlinking waits as well.
    monkeypatch.setattr(graph_links, "INLINE_LINK_MAX", 100)

    def broken(**kwargs: Any) -> Any:
        raise RuntimeError("extractor down")

    monkeypatch.setattr(graph_links, "entries_link", broken)
    with django_capture_on_commit_callbacks(execute=True):
        archived = agent_client.client.post(f"{BASE}/entries/{small['id']}/archive", format="json")
    assert archived.status_code == 200, archived.json()
    assert "Ilse Brandvik" in names([small["id"]])  # not yet: derived data outlives its source
    monkeypatch.undo()
    pending = set(PendingGraphLink.objects.values_list("entry_id", flat=True))
    assert pending == {*ids, small["id"]}

    assert tasks.link_pending.delay(dry_run=True).get() == {"left": 3, "dry_run": 1}
    assert tasks.link_pending.delay().get() == {"linked": 3, "left": 0}
    assert {"Oskar Vell", "Marit Solberg", "Tern Rowing Club"} <= names(ids)
    assert names([small["id"]]) == set()  # archived: nothing derived from it stays
    assert not GraphMention.objects.filter(node__name="Ilse Brandvik").exists()


def test_an_entry_queued_again_while_the_pending_job_runs_is_linked_again(
    agent_client: AuthedAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job deletes only the rows it read: an entry queued again meanwhile (a newer write)
    stays queued for the next run."""
    from memory.long_term.services import graph_links
    from memory.models import PendingGraphLink

    cid = create_context(agent_client)["id"]
    entry = add_entry(agent_client, cid, "Tove Rask paints harbours.")["id"]
    graph_links.entries_link_later([entry], cid)
    real = graph_links.entries_link

    def requeued(**kwargs: Any) -> Any:
        outcome = real(**kwargs)
        graph_links.entries_link_later([entry], cid)  # a write meanwhile
        return outcome

    monkeypatch.setattr(graph_links, "entries_link", requeued)
    assert graph_links.pending_links_run() == {"linked": 1, "left": 1}
    monkeypatch.undo()
    assert graph_links.pending_links_run() == {"linked": 1, "left": 0}
    assert not PendingGraphLink.objects.exists()


def test_a_reached_node_reads_at_most_its_most_salient_units(
    agent_client: AuthedAgent,
    django_capture_on_commit_callbacks: Any,
    tune: Callable[[str, Any], None],
) -> None:
    """``units_read_per_node`` (memory entries: ``memory.spaces.entries``): of the units that
    mention a reached node, only that many are compared with the query, the most salient (the
    newest first among equals)."""
    import numpy as np

    from memory.spaces import MEMORY_ENTRIES
    from rag.graph.graph_types import Reach
    from rag.graph.models import GraphNode
    from rag.graph.retrieval import _unit_rows
    from rag.spaces import space_weights

    cid = create_context(agent_client)["id"]
    with django_capture_on_commit_callbacks(execute=True):
        written = [
            add_entry(agent_client, cid, f"Marta Kvist note {n}: she rowed {n} miles.")["id"]
            for n in range(5)
        ]
    node = GraphNode.objects.get(name="Marta Kvist")
    reached = {node.pk: Reach(node.pk, node.name, node.entity_type, node.pk, 0, 1.0, [], 5)}
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)

    def read() -> set[int]:
        cap = space_weights(MEMORY_ENTRIES).units_read_per_node
        rows, _ = _unit_rows(MEMORY_ENTRIES, [cid], reached, 1000, [], vector, "", None, cap)
        return {unit for found, unit, _ in rows if found == node.pk}

    assert space_weights(MEMORY_ENTRIES).units_read_per_node == 250
    assert read() == set(written)
    tune("memory.spaces.entries.units_read_per_node", 2)
    assert read() == set(written[-2:])  # equally salient: the newest
    tune("memory.spaces.entries.units_read_per_node", 0)  # 0: every one
    assert read() == set(written)


def test_a_graph_search_reads_the_units_of_its_least_mentioned_nodes_within_its_budget() -> None:
    """``units_read_per_search``: the reached nodes that are no hubs are read from the least
    mentioned up while their mentions (each counted up to ``units_read_per_node``) fit; the
    least mentioned always; 0: all of them."""
    from rag.graph.graph_types import Reach
    from rag.graph.retrieval import nodes_read

    counts = {1: 400, 2: 3, 3: 40, 4: 90, 5: 1200, 6: 40}
    reached = {n: Reach(n, f"n{n}", "person", 1, 1, 0.5, [], c) for n, c in counts.items()}
    assert set(nodes_read(reached, 1000)) == {1, 2, 3, 4, 6}  # 5 is a hub
    assert nodes_read(reached, 1000, 0, 100) == [2, 3, 6]  # 3 + 40 + 40; 90 more would pass
    assert nodes_read(reached, 1000, 0, 173) == [2, 3, 6, 4]
    # Counted up to the per-node read: node 1 brings 250, not 400.
    assert nodes_read(reached, 1000, 250, 423) == [2, 3, 6, 4, 1]
    assert nodes_read(reached, 1000, 0, 423) == [2, 3, 6, 4]
    assert nodes_read({1: reached[1]}, 1000, 0, 10) == [1]  # the least mentioned always


def test_a_search_naming_a_speaker_lifts_their_entries(
    agent_client: AuthedAgent, tune: Callable[[str, Any], None]
) -> None:
    """Query analysis of named speakers (``memory.search.speaker_lift``): the entries of the
    speaker a query names gain that share of their fused score against the others'; a query
    naming nobody ranks as before."""

    cid = create_context(agent_client)["id"]
    jon = add_entry(agent_client, cid, "I went to a pottery class on Sunday.", speaker="Jon")
    gina = add_entry(
        agent_client, cid, "On Sunday Jon and I went to the pottery class.", speaker="Gina"
    )
    assert (jon["speaker"], gina["speaker"]) == ("Jon", "Gina")
    add_entry(agent_client, cid, "Cats sleep most of the day.")

    def scores(query: str) -> dict[int, float]:
        # Hybrid: the lift alone, before a graph search's late interaction re-scores the hits.
        response = search(agent_client, query, mode="hybrid")
        assert response.status_code == 200, response.json()
        return {hit["id"]: hit["retrieval"]["score"] for hit in response.json()["results"]}

    lift = TUNING.search.speaker_lift
    assert lift > 0
    lifted = scores("When did Jon go to the pottery class on Sunday?")
    nobody = scores("When did they go to the pottery class on Sunday?")
    tune("memory.search.speaker_lift", 0.0)
    plain = scores("When did Jon go to the pottery class on Sunday?")
    # The named speaker's entry gains (1 + lift) against the other's; the scores stay on the
    # fused scale (the best 1).
    ratio = plain[jon["id"]] / plain[gina["id"]]
    assert lifted[jon["id"]] / lifted[gina["id"]] == pytest.approx(ratio * (1 + lift))
    assert max(lifted.values()) == pytest.approx(1.0)
    assert nobody == scores("When did they go to the pottery class on Sunday?")
    assert next(iter(lifted)) == jon["id"]


def test_an_entry_speaker_is_bounded(agent_client: AuthedAgent) -> None:
    cid = create_context(agent_client)["id"]
    response = agent_client.client.post(
        f"{BASE}/contexts/{cid}/entries", {"content": "x", "speaker": "s" * 201}, format="json"
    )
    assert response.status_code == 400 and code(response) == "validation_error"


def test_speakers_named_by_a_query() -> None:
    from memory.long_term.selectors import speakers_named

    speakers = ["Jon", "Dr. Ana Lima", "Gina", "", "?"]
    assert speakers_named("What did Dr Ana Lima say to jon?", speakers) == {"Jon", "Dr. Ana Lima"}
    assert speakers_named("What did Ana say?", speakers) == set()  # every word of the name
    assert speakers_named("When did they meet?", speakers) == set()


def test_one_context_of_ones_own_is_searched_without_the_sharing_rules(
    agent_client: AuthedAgent, teammate: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    """``searchable_contexts`` finds a single context of the agent's own with one plain read;
    anyone else's context (a teammate's, another account's), and an archived one of its own,
    still answer 404 as before."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from core.actors import actor_for_agent
    from core.errors import NotFound
    from memory.long_term.selectors import searchable_contexts
    from memory.models import MemoryContext

    mine = create_context(agent_client, "mine")["id"]
    theirs = create_context(teammate, "theirs")["id"]
    foreign = create_context(other_agent_client, "foreign")["id"]
    actor = actor_for_agent(agent_client.agent)
    with CaptureQueriesContext(connection) as reads:
        assert searchable_contexts(actor, [mine]) == [mine]
    assert len(reads) == 1
    assert "grant" not in reads[0]["sql"] and "team" not in reads[0]["sql"]
    for context_id in (theirs, foreign):
        with pytest.raises(NotFound):
            searchable_contexts(actor, [context_id])
    # Shared with the agent, a teammate's context is read through the rules, as before.
    MemoryContext.objects.filter(pk=theirs).update(scope=MemoryContext.Scope.ACCOUNT)
    assert searchable_contexts(actor, [theirs]) == [theirs]
    archived = agent_client.client.post(f"{BASE}/contexts/{mine}/archive", format="json")
    assert archived.status_code in (200, 204), archived.content
    with pytest.raises(NotFound):
        searchable_contexts(actor, [mine])
