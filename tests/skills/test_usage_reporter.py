"""Outcomes are reported by the agent they are about. A write-scope agent used to record
failures for another agent (``POST /skills/usage {"agent_id": <other>}``) and so lower its
ranking; the same through completing a task it had assigned to that agent. Reporting another
agent's outcomes now needs the ``admin`` scope (or a person with a role, or a tool), checked by
the service; every record keeps who wrote it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core import services as core_services
from core.actors import actor_for_account, actor_for_agent, actor_for_user
from core.errors import PermissionDenied
from skills.models import AgentTrust, LearningProfile, SkillUsage, TaskAssignment
from skills.selectors import learning as learning_selectors
from skills.services import learning, usage
from tests.conftest import AuthedAgent
from tests.factories import AgentFactory, UserFactory
from tests.skills.conftest import code

pytestmark = pytest.mark.django_db

USAGE = "/api/v1/skills/usage"


@pytest.fixture
def victim(agent_client: AuthedAgent, make_agent_client: Callable[..., AuthedAgent]) -> Any:
    """Another agent of the same account, with a good record of its own."""
    other = make_agent_client(agent=AgentFactory.create(account=agent_client.agent.account))
    for _ in range(5):
        response = other.client.post(
            USAGE,
            {"agent_id": other.agent.pk, "task_type": "review", "success": True},
            format="json",
        )
        assert response.status_code == 201, response.json()
    return other


def standing(agent_id: int) -> Any:
    profile = LearningProfile.objects.get(agent_id=agent_id, task_type="review")
    trust = AgentTrust.objects.get(agent_id=agent_id)
    return profile.executions, profile.success_rate, trust.trust_score


def test_a_write_key_cannot_record_outcomes_for_another_agent(
    agent_client: AuthedAgent, victim: AuthedAgent
) -> None:
    before = standing(victim.agent.pk)
    failure = {"agent_id": victim.agent.pk, "task_type": "review", "success": False}
    own = {"agent_id": agent_client.agent.pk, "task_type": "review", "success": True}
    for body in (failure, {"records": [own, failure]}):
        response = agent_client.client.post(USAGE, body, format="json")
        assert response.status_code == 403, response.json()
        assert code(response) == "insufficient_scope"
        details = response.json()["error"]["details"]
        assert details["required_scope"] == "admin" and details["agent_ids"] == [victim.agent.pk]
    assert standing(victim.agent.pk) == before
    assert not SkillUsage.objects.filter(agent=agent_client.agent).exists()  # all or none
    ranking = learning_selectors.rank_agents(
        actor=actor_for_agent(agent_client.agent), title="Review", task_type="review"
    )
    assert ranking.results[0].agent_id == victim.agent.pk
    # Its own outcomes it reports, and the record says who wrote it.
    mine = agent_client.client.post(USAGE, own, format="json")
    assert mine.status_code == 201
    assert mine.json()["records"][0]["recorded_by_id"] == agent_client.agent.pk


def test_an_admin_key_a_person_or_a_tool_may_report_for_another_agent(
    agent_client: AuthedAgent,
    victim: AuthedAgent,
    make_agent_client: Callable[..., AuthedAgent],
) -> None:
    admin = make_agent_client(agent=agent_client.agent, scopes=("admin",))
    failure = {"agent_id": victim.agent.pk, "task_type": "review", "success": False}
    response = admin.client.post(USAGE, failure, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["records"][0]["recorded_by_id"] == agent_client.agent.pk
    account = agent_client.agent.account
    owner = UserFactory.create(is_staff=True)
    core_services.membership_grant(account=account, user=owner, role="operator")
    for actor in (actor_for_user(owner), actor_for_account(account.pk)):
        (record,) = usage.usage_record(
            actor=actor,
            records=[usage.UsageInput(agent_id=victim.agent.pk, task_type="review", success=True)],
        )
        assert record.recorded_by_id is None


def test_the_service_checks_its_actor(agent_client: AuthedAgent, victim: AuthedAgent) -> None:
    before = standing(victim.agent.pk)
    writer = actor_for_agent(agent_client.agent, agent_client.key)
    with pytest.raises(PermissionDenied) as refused:
        usage.usage_record(
            actor=writer,
            records=[usage.UsageInput(agent_id=victim.agent.pk, task_type="review", success=False)],
        )
    assert refused.value.code == "insufficient_scope"
    assert standing(victim.agent.pk) == before


def test_completing_another_agents_task_needs_the_admin_scope(
    agent_client: AuthedAgent, victim: AuthedAgent, make_agent_client: Callable[..., AuthedAgent]
) -> None:
    """Assigning a task to an agent and failing it was the same hole by another door."""
    before = standing(victim.agent.pk)
    assigned = agent_client.client.post(
        "/api/v1/tasks/assign",
        {"title": "Review the diff", "task_type": "review", "agent_ids": [victim.agent.pk]},
        format="json",
    )
    assert assigned.status_code == 201 and assigned.json()["agent_id"] == victim.agent.pk
    url = f"/api/v1/tasks/{assigned.json()['id']}/complete"
    refused = agent_client.client.post(url, {"success": False}, format="json")
    assert refused.status_code == 403 and code(refused) == "insufficient_scope"
    task = TaskAssignment.objects.get(pk=assigned.json()["id"])
    assert task.status == TaskAssignment.Status.ASSIGNED
    assert standing(victim.agent.pk) == before
    with pytest.raises(PermissionDenied):
        learning.task_complete(
            actor=actor_for_agent(agent_client.agent, agent_client.key),
            assignment=task,
            success=False,
        )
    # The assigned agent reports its own outcome.
    done = victim.client.post(url, {"success": True}, format="json")
    assert done.status_code == 200 and done.json()["status"] == "succeeded"
