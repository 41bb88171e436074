"""Learning profiles and agent scoring with worked numbers (docs/skills.md), task-type
inference, ranking with and without recency, assignment with its least-loaded fallback,
outcomes flowing back, the trust decay job."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from core.actors import Actor, actor_for_account
from core.errors import Conflict
from core.models import Agent, JobRun
from skills import learning, tasks
from skills.models import AgentTrust, LearningProfile, TaskAssignment
from skills.selectors import learning as selectors
from skills.services import learning as services
from skills.services import usage
from tests.conftest import AuthedAgent
from tests.factories import AgentFactory
from tests.skills.conftest import code

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def runs(agent: Agent, task_type: str, *batches: tuple[int, int, float]) -> list[usage.UsageInput]:
    """(count, successes, days ago) batches of executions."""
    records = []
    for count, successes, days in batches:
        for i in range(count):
            records.append(
                usage.UsageInput(
                    agent_id=agent.pk,
                    task_type=task_type,
                    success=i < successes,
                    occurred_at=NOW - timedelta(days=days, seconds=i),
                )
            )
    return records


def busy(agent: Agent, tasks_open: int) -> None:
    for i in range(tasks_open):
        TaskAssignment.objects.create(
            account_id=agent.account_id,
            agent=agent,
            title=f"busy {i}",
            task_type="other",
            method="learned",
        )


# --- the formulas ----------------------------------------------------------------------------


def test_formulas_with_worked_numbers() -> None:
    assert learning.recency_weight(1) == pytest.approx(3 * math.exp(-1 / 7))  # 2.600634
    assert learning.recency_weight(10) == pytest.approx(math.exp(-10 / 7))  # 0.239651
    assert learning.recency_weight(7) == pytest.approx(math.exp(-1))  # the 3x ends at 7 days
    now = NOW.timestamp()
    times = [now - 86_400] * 4 + [now - 10 * 86_400] * 6
    outcomes = [True, True, True, False, True, True, False, False, False, False]  # 3/4, 2/6
    assert learning.success_rate(outcomes) == 0.5
    # (3 x 2.600634 + 2 x 0.239651) / (4 x 2.600634 + 6 x 0.239651) = 8.281203 / 11.840441
    assert learning.recent_success_rate(times, outcomes, now) == pytest.approx(0.699400, abs=1e-6)
    assert learning.confidence(10) == 0.5 and learning.confidence(35) == 1.0
    assert learning.base_score(available=True, load=3, capacity=5) == pytest.approx(0.4)
    assert learning.base_score(available=True, load=7, capacity=5) == 0.0
    assert learning.base_score(available=False, load=0, capacity=5) == 0.0
    assert learning.agent_score(base=0.4, expertise=0.5, confidence=0.5) == pytest.approx(0.47)
    curve = learning.learning_curve(times, outcomes)
    assert [(p.day.isoformat(), p.executions, p.success_rate) for p in curve] == [
        ("2026-02-28", 6, pytest.approx(2 / 6)),
        ("2026-03-09", 4, 0.75),
    ]
    assert curve[-1].cumulative_success_rate == 0.5
    assert learning.capacity_of({"max_concurrent_tasks": 2}) == 2
    assert learning.capacity_of({"max_concurrent_tasks": "2"}) == 5


def test_ranking_worked_example_and_recency_changes_the_order(
    actor: Actor, agent_client: AuthedAgent
) -> None:
    account = agent_client.agent.account
    tool = actor_for_account(account.pk)  # records outcomes of other agents
    a = AgentFactory.create(account=account, name="alpha")
    b = AgentFactory.create(account=account, name="bravo")
    c = AgentFactory.create(account=account, name="charlie")
    Agent.objects.filter(pk=agent_client.agent.pk).update(status="disabled")
    usage.usage_record(actor=tool, records=runs(a, "code_review", (4, 3, 1), (6, 2, 10)))
    usage.usage_record(actor=tool, records=runs(b, "code_review", (20, 12, 20)))
    busy(a, 3)
    busy(b, 4)
    plain = selectors.rank_agents(
        actor=actor, title="Review the diff", task_type="code_review", now=NOW
    )
    assert plain.candidates == 3  # the disabled agent is no candidate
    scores = {s.agent_id: s for s in plain.results}
    # alpha: 0.3 x 0.4 + 0.5 x 0.5 + 0.2 x 0.5 = 0.47; bravo: 0.3 x 0.2 + 0.5 x 0.6 + 0.2 x 1
    # = 0.56; charlie (no history, idle): 0.3 x 1 = 0.3.
    assert scores[a.pk].score == pytest.approx(0.47)
    assert scores[b.pk].score == pytest.approx(0.56)
    assert scores[c.pk].score == pytest.approx(0.3)
    assert [s.agent_id for s in plain.results] == [b.pk, a.pk, c.pk]
    recent = selectors.rank_agents(
        actor=actor, title="Review", task_type="code_review", use_recency=True, now=NOW
    )
    scores = {s.agent_id: s for s in recent.results}
    # alpha's expertise becomes 0.699400: 0.12 + 0.349700 + 0.1 = 0.569700 > bravo's 0.56.
    assert scores[a.pk].expertise == pytest.approx(0.699400, abs=1e-6)
    assert scores[a.pk].score == pytest.approx(0.569700, abs=1e-6)
    assert [s.agent_id for s in recent.results] == [a.pk, b.pk, c.pk]


def test_task_types_are_inferred_from_title_and_description(
    actor: Actor, agent_client: AuthedAgent
) -> None:
    account_id = agent_client.agent.account_id
    usage.usage_record(actor=actor, records=runs(agent_client.agent, "code_review", (1, 1, 1)))
    infer = selectors.task_type_infer
    assert infer(account_id=account_id, title="Review the code of PR 12", description="") == (
        "code_review"
    )
    assert infer(account_id=account_id, title="Fix the crash", description="in the parser") == (
        "debugging"
    )
    assert infer(account_id=account_id, title="Hello there", description="") == "general"
    ranking = selectors.rank_agents(actor=actor, title="Please review this code")
    assert (ranking.task_type, ranking.inferred) == ("code_review", True)


def test_assignment_falls_back_to_the_least_loaded_agent_without_history(
    actor: Actor, agent_client: AuthedAgent
) -> None:
    account = agent_client.agent.account
    idle = AgentFactory.create(account=account, name="idle", metadata={"max_concurrent_tasks": 10})
    busy(agent_client.agent, 2)
    first = services.task_assign(actor=actor, title="Translate the docs", task_type="translation")
    assert (first.agent_id, first.method) == (idle.pk, "least_loaded")
    # With history, the best score wins even when busier.
    usage.usage_record(actor=actor, records=runs(agent_client.agent, "translation", (20, 20, 0.5)))
    second = services.task_assign(actor=actor, title="Translate more", task_type="translation")
    assert (second.agent_id, second.method) == (agent_client.agent.pk, "learned")
    assert second.score == pytest.approx(0.3 * (1 - 2 / 5) + 0.5 + 0.2)
    Agent.objects.filter(account=account).update(status="disabled")
    with pytest.raises(Conflict) as raised:
        services.task_assign(actor=actor, title="Nobody", task_type="translation")
    assert raised.value.code == "no_available_agent"


def test_outcomes_of_assigned_tasks_flow_back_into_the_profile(
    agent_client: AuthedAgent,
) -> None:
    client = agent_client.client
    assigned = client.post(
        "/api/v1/tasks/assign", {"title": "Write release notes", "task_type": "docs"}, format="json"
    )
    assert assigned.status_code == 201, assigned.json()
    task = assigned.json()
    assert task["agent_id"] == agent_client.agent.pk and task["method"] == "least_loaded"
    profile_url = f"/api/v1/agents/{agent_client.agent.pk}/learning-profile"
    assert client.get(profile_url).json()["load"] == 1
    done = client.post(
        f"/api/v1/tasks/{task['id']}/complete", {"success": True, "duration_ms": 90}, format="json"
    )
    assert done.status_code == 200 and done.json()["status"] == "succeeded"
    again = client.post(f"/api/v1/tasks/{task['id']}/complete", {"success": False}, format="json")
    assert again.status_code == 409 and code(again) == "task_completed"
    profile = client.get(profile_url).json()
    assert profile["load"] == 0
    [docs] = profile["task_types"]
    assert (docs["task_type"], docs["executions"], docs["success_rate"]) == ("docs", 1, 1.0)
    assert docs["confidence"] == 0.05 and len(docs["learning_curve"]) == 1
    assert LearningProfile.objects.get(agent=agent_client.agent, task_type="docs").executions == 1


def test_rank_api(agent_client: AuthedAgent, other_agent_client: AuthedAgent) -> None:
    response = agent_client.client.post(
        "/api/v1/agents/rank", {"title": "Deploy to kubernetes", "use_recency": True}, format="json"
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["task_type"] == "deployment" and body["inferred_task_type"] is True
    [only] = body["results"]
    assert set(only) >= {"agent_id", "score", "expertise", "confidence", "base"}
    assert only["agent_id"] == agent_client.agent.pk and only["score"] == pytest.approx(0.3)
    foreign = agent_client.client.get(
        f"/api/v1/agents/{other_agent_client.agent.pk}/learning-profile"
    )
    assert foreign.status_code == 404 and code(foreign) == "agent_not_found"
    restricted = agent_client.client.post(
        "/api/v1/tasks/assign",
        {"title": "x", "agent_ids": [other_agent_client.agent.pk]},
        format="json",
    )
    assert restricted.status_code == 404 and code(restricted) == "agent_not_found"


def test_trust_decays_for_idle_agents_once_a_day(actor: Actor, agent_client: AuthedAgent) -> None:
    active = agent_client.agent
    idle = AgentFactory.create(account=active.account)
    usage.usage_record(
        actor=actor_for_account(active.account_id),  # outcomes of two agents: a tool
        records=[
            usage.UsageInput(agent_id=active.pk, task_type="t", success=True),
            usage.UsageInput(agent_id=idle.pk, task_type="t", success=True),
        ],
    )
    AgentTrust.objects.filter(agent=idle).update(
        trust_score=0.9, last_active_at=timezone.now() - timedelta(days=8)
    )
    before = AgentTrust.objects.get(agent=active).trust_score
    assert tasks.trust_decay.delay(dry_run=True).get() == {"decayed": 1}
    assert tasks.trust_decay.delay().get() == {"decayed": 1}
    assert AgentTrust.objects.get(agent=idle).trust_score == pytest.approx(0.5 + 0.4 * 0.95)
    assert AgentTrust.objects.get(agent=active).trust_score == before
    assert tasks.trust_decay.delay().get() == {"decayed": 0}  # once a day
    assert JobRun.objects.filter(job="skills.trust_decay").count() == 3
