"""Memory tools of agent runs (issue 18, seed 004): the structuring step writes or refuses with a
reason, semantic search answers at most 5 memories at cosine >= 0.5, related search follows
links, the summarised search cites its memories, and a run's search budget holds across
processes."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable
from typing import Any

import pytest

from core.actors import Actor, actor_for_agent
from core.errors import Throttled
from memory.context import run_budget, structuring
from memory.context.services import tools
from memory.models import MemoryEntry
from memory.tuning import TUNING
from tests.conftest import AuthedAgent
from tests.memory.conftest import code
from tests.support.openai_standin import (
    OpenAIStandIn,
    openai_standin_fixture,  # noqa: F401 (pytest collects fixtures from module globals)
)

pytestmark = pytest.mark.django_db
BASE = "/api/v1/memory"


def post(authed: AuthedAgent, path: str, body: dict[str, Any]) -> Any:
    return authed.client.post(f"{BASE}/{path}", body, format="json")


FACT = "The billing service deploys only after the nightly migration job has finished."


def test_a_note_becomes_a_memory_of_the_agents_own(agent_client: AuthedAgent) -> None:
    written = post(agent_client, "tools/write", {"text": FACT, "run_id": "run-1"})
    assert written.status_code == 200, written.content
    body = written.json()
    assert body["written"] is True and body["reason"] == "" and body["method"] == "offline"
    memory = body["memory"]
    entry = MemoryEntry.objects.get(pk=memory["id"])
    assert entry.context.is_agent_memory and entry.context.owner_id == agent_client.agent.pk
    assert entry.content == FACT
    assert entry.metadata["name"].startswith("The billing service deploys")
    assert entry.metadata["run_id"] == "run-1" and entry.metadata["related"] == []
    assert "billing" in entry.tags or "migration" in entry.tags
    run = agent_client.client.get(f"{BASE}/runs/run-1").json()
    assert (run["memories_written"], run["searches"], run["max_searches"]) == (1, 0, 10)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", structuring.EMPTY),
        ("   ", structuring.EMPTY),
        ("ok thanks!", structuring.TRIVIAL),
        ("Write to ana.silva@example.com about the billing migration plan", "personal_data"),
        ("The customer's card is 4111 1111 1111 1111 for the renewal order", "personal_data"),
        ("Call the support line on +44 20 7946 0958 about the billing outage", "personal_data"),
        ("I'm going to lunch right now, back soon", structuring.NOT_GENERAL),
    ],
)
def test_the_structuring_step_refuses_with_a_reason(
    agent_client: AuthedAgent, text: str, reason: str
) -> None:
    refused = post(agent_client, "tools/write", {"text": text}).json()
    assert (refused["written"], refused["reason"], refused["memory"]) == (False, reason, None)
    assert not MemoryEntry.objects.exists()


def test_a_duplicate_is_refused_and_names_the_memory_it_repeats(
    agent_client: AuthedAgent,
) -> None:
    first = post(agent_client, "tools/write", {"text": FACT}).json()
    again = post(agent_client, "tools/write", {"text": FACT + " "}).json()
    assert again["written"] is False and again["reason"] == structuring.DUPLICATE
    assert again["duplicate_of"] == first["memory"]["id"] and again["similarity"] >= 0.92
    assert MemoryEntry.objects.count() == 1


def test_a_near_copy_that_says_more_is_not_a_duplicate(agent_client: AuthedAgent) -> None:
    """A memory at cosine >= 0.92 with a value of its own is written (nothing automatic loses
    a fact: docs/memory/tools.md)."""
    first = "The staging server of the search team listens on port 5433."
    post(agent_client, "tools/write", {"text": first})
    other = post(agent_client, "tools/write", {"text": first.replace("5433", "6543")}).json()
    assert other["written"] is True, other
    assert MemoryEntry.objects.count() == 2


def test_related_references_are_bounded_and_must_be_readable(
    agent_client: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    theirs = post(other_agent_client, "tools/write", {"text": FACT}).json()["memory"]["id"]
    eleven = [{"kind": "entry", "id": n} for n in range(1, 12)]
    too_many = post(agent_client, "tools/write", {"text": FACT, "related": eleven})
    assert too_many.status_code == 400
    foreign = post(
        agent_client, "tools/write", {"text": FACT, "related": [{"kind": "entry", "id": theirs}]}
    )
    missing = post(
        agent_client, "tools/write", {"text": FACT, "related": [{"kind": "entry", "id": 10**12}]}
    )
    assert foreign.status_code == missing.status_code == 404
    assert code(foreign) == code(missing) == "related_not_found"
    unknown = post(agent_client, "tools/write", {"text": FACT, "related": [{"kind": "x", "id": 1}]})
    assert unknown.status_code == 400


@pytest.mark.real_embeddings  # close by meaning, above a threshold calibrated on the model
def test_semantic_search_answers_close_memories_only(agent_client: AuthedAgent) -> None:
    for text in (
        FACT,
        "Lisbon office opening hours are nine to six on weekdays.",
        "The mobile app release needs two reviewers to approve it.",
    ):
        assert post(agent_client, "tools/write", {"text": text}).json()["written"]
    found = post(agent_client, "tools/search", {"query": "when does billing deploy?"}).json()
    results = found["results"]
    assert 1 <= len(results) <= 5 and results[0]["content"] == FACT
    assert all(hit["score"] >= TUNING.tools.min_relevance_score for hit in results)
    nothing = post(agent_client, "tools/search", {"query": "recipe for a chocolate cake"})
    assert nothing.json() == {"results": []}


def test_related_search_finds_the_memories_about_an_item(agent_client: AuthedAgent) -> None:
    anchor = post(agent_client, "tools/write", {"text": FACT}).json()["memory"]["id"]
    linked = post(
        agent_client,
        "tools/write",
        {
            "text": "Rolling back billing needs the migration job's last checkpoint id.",
            "related": [{"kind": "entry", "id": anchor}],
        },
    ).json()["memory"]["id"]
    found = post(agent_client, "tools/related", {"related": [{"kind": "entry", "id": anchor}]})
    assert [hit["id"] for hit in found.json()["results"]] == [linked]
    assert found.json()["results"][0]["matched"] == [{"kind": "entry", "id": anchor}]
    assert post(agent_client, "tools/related", {"related": []}).status_code == 400


def test_the_summarised_search_cites_its_memories(agent_client: AuthedAgent) -> None:
    post(agent_client, "tools/write", {"text": FACT})
    post(agent_client, "tools/write", {"text": "Billing deploys are announced in #releases."})
    found = post(agent_client, "tools/summarised-search", {"query": "billing deploys"}).json()
    assert found["method"] == "offline" and found["searches"][0] == "semantic"
    assert found["memories"] and "[1]" in found["summary"]
    cited = {int(n) for n in __import__("re").findall(r"\[(\d+)\]", found["summary"])}
    assert cited <= set(range(1, len(found["memories"]) + 1))
    empty = post(agent_client, "tools/summarised-search", {"query": "volcano photography"})
    assert empty.json()["summary"] == "" and empty.json()["memories"] == []


@pytest.mark.real_embeddings  # each search finds the fact above the model's relevance threshold
def test_a_run_has_ten_searches(agent_client: AuthedAgent) -> None:
    post(agent_client, "tools/write", {"text": FACT})
    query = "when does the billing service deploy?"
    for n in range(10):
        searched = post(agent_client, "tools/search", {"query": query, "run_id": "r"})
        assert searched.status_code == 200, n
    spent = post(agent_client, "tools/summarised-search", {"query": "billing", "run_id": "r"})
    assert spent.status_code == 429 and code(spent) == "search_budget_exhausted"
    assert spent.json()["error"]["details"]["searches"] == 10
    run = agent_client.client.get(f"{BASE}/runs/r").json()
    assert run["searches"] == 10 and run["memories_checked"] >= 10
    # Another run, and a search without a run, are not limited by it.
    assert (
        post(agent_client, "tools/search", {"query": "billing", "run_id": "r2"}).status_code == 200
    )
    assert post(agent_client, "tools/search", {"query": "billing"}).status_code == 200
    assert agent_client.client.get(f"{BASE}/runs/never").status_code == 404


def test_runs_are_their_agents_own(
    agent_client: AuthedAgent, make_agent_client: Callable[..., AuthedAgent]
) -> None:
    teammate = make_agent_client(account=agent_client.agent.account)
    post(agent_client, "tools/search", {"query": "billing", "run_id": "shared-name"})
    assert teammate.client.get(f"{BASE}/runs/shared-name").status_code == 404


def _spend(agent: Any, run_id: str, times: int, results: Any) -> None:
    refused = 0
    for _ in range(times):
        try:
            run_budget.search_count(agent, run_id)
        except Throttled:
            refused += 1
    results.put(refused)


def test_the_budget_holds_across_processes(agent_client: AuthedAgent) -> None:
    """Two processes spend one run's budget at once: ten searches pass between them."""
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    workers = [
        context.Process(target=_spend, args=(agent_client.agent, "race", 8, results))
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    refused = results.get(timeout=5) + results.get(timeout=5)
    assert refused == 6
    assert run_budget.run_report(agent_client.agent, "race").searches == 10


# --- the LLM's structuring, through a local stand-in of its API -------------------------------


def test_with_an_llm_the_model_structures_and_may_refuse(
    agent_client: AuthedAgent, llm: OpenAIStandIn
) -> None:
    llm.reply_with(
        json.dumps(
            {
                "decision": "write",
                "reason": "",
                "name": "Billing deploy order",
                "text": "Billing deploys wait for the nightly migration job.",
                "entry_type": "decision",
                "tags": ["billing", "deploys"],
            }
        ),
        json.dumps(
            {
                "decision": "refuse",
                "reason": "not_general",
                "name": "",
                "text": "",
                "entry_type": "fact",
                "tags": [],
            }
        ),
    )
    written = post(agent_client, "tools/write", {"text": FACT}).json()
    assert written["written"] and written["method"] == "openai:stand-in-model"
    entry = MemoryEntry.objects.get(pk=written["memory"]["id"])
    assert (entry.metadata["name"], entry.entry_type, entry.tags) == (
        "Billing deploy order",
        "decision",
        ["billing", "deploys"],
    )
    refused = post(
        agent_client, "tools/write", {"text": "We chatted about the weekend plans a lot"}
    )
    assert (refused.json()["written"], refused.json()["reason"]) == (False, "not_general")
    # Personal data never reaches the model.
    asked = len(llm.requests)
    post(agent_client, "tools/write", {"text": "Mail bob@example.org the migration plan today"})
    assert len(llm.requests) == asked


def test_offline_structuring_names_types_and_tags() -> None:
    structured = structuring.offline_structure(
        "We decided to move the nightly backup to 02:00 because the backup overlaps billing."
    )
    assert structured.entry_type == "decision" and not structured.refused
    assert structured.name.startswith("We decided to move the nightly backup")
    assert "backup" in structured.tags


def test_write_needs_the_write_scope_in_the_service(agent_client: AuthedAgent) -> None:
    from core.errors import PermissionDenied
    from core.models import ApiKey

    key = ApiKey(agent=agent_client.agent, scopes=["read"])
    reader: Actor = actor_for_agent(agent_client.agent, key)
    with pytest.raises(PermissionDenied):
        tools.memory_tool_write(actor=reader, text=FACT)
