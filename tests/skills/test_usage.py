"""Usage records: one or many, all or none; what learns from them (versions, skills,
assignments, learning profiles, trust)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from core.actors import Actor, actor_for_account
from core.errors import NotFound, ValidationFailed
from skills import learning
from skills.models import (
    AgentSkill,
    AgentTrust,
    LearningProfile,
    Skill,
    SkillUsage,
    SkillVersion,
)
from skills.selectors import catalog as catalog_selectors
from skills.services import usage as services
from skills.services import versions as version_services
from tests.conftest import AuthedAgent
from tests.factories import AgentFactory
from tests.skills.conftest import code

pytestmark = pytest.mark.django_db
URL = "/api/v1/skills/usage"


def learned() -> Any:
    return (
        SkillUsage.objects.count(),
        list(SkillVersion.objects.order_by("pk").values_list("success_count", "failure_count")),
        list(Skill.objects.order_by("pk").values_list("usage_count", "effectiveness_score")),
        AgentSkill.objects.count(),
        LearningProfile.objects.count(),
        AgentTrust.objects.count(),
    )


def test_one_record_counts_everywhere(
    agent_client: AuthedAgent, make_skill: Callable[..., Skill]
) -> None:
    skill = make_skill("Triage bug", category="debugging")
    agent = agent_client.agent
    response = agent_client.client.post(
        URL,
        {
            "agent_id": agent.pk,
            "skill_id": skill.pk,
            "task_type": "Bug Triage",
            "success": True,
            "duration_ms": 1200,
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    [record] = response.json()["records"]
    version = SkillVersion.objects.get(skill=skill)
    assert record["version_id"] == version.pk  # routed: the only active version
    assert record["task_type"] == "bug_triage"
    assert record["occurred_at"]  # defaults to now
    version.refresh_from_db()
    skill.refresh_from_db()
    assert (version.success_count, version.failure_count, version.total_duration_ms) == (1, 0, 1200)
    assert (skill.usage_count, skill.success_count) == (1, 1)
    assert skill.effectiveness_score == pytest.approx(0.55)  # 0.5 + 0.1 * (1 - 0.5)
    assignment = AgentSkill.objects.get(agent=agent, skill=skill)
    assert assignment.proficiency == pytest.approx(0.55) and assignment.usage_count == 1
    profile = LearningProfile.objects.get(agent=agent, task_type="bug_triage")
    assert (profile.executions, profile.success_rate, profile.confidence) == (1, 1.0, 0.05)
    assert AgentTrust.objects.get(agent=agent).trust_score == pytest.approx(0.525)


def test_batches_are_all_or_none(
    agent_client: AuthedAgent, other_agent_client: AuthedAgent, make_skill: Callable[..., Skill]
) -> None:
    skill = make_skill("Write tests", category="testing")
    agent = agent_client.agent
    good = {"agent_id": agent.pk, "task_type": "testing", "success": False}
    before = learned()
    foreign_version = SkillVersion.objects.create(
        account=other_agent_client.agent.account,
        skill=make_skill_elsewhere(other_agent_client),
        version="1.0.1",
        major=1,
        minor=0,
        patch=1,
        change_type="patch",
    )
    bad_records: list[tuple[dict[str, Any], int, str]] = [
        ({"agent_id": other_agent_client.agent.pk}, 404, "agent_not_found"),
        ({"skill_id": 987654321}, 404, "skill_not_found"),
        ({"version_id": foreign_version.pk}, 404, "version_not_found"),
        ({"task_type": "!!"}, 400, "validation_error"),  # the schema's pattern
        (
            {"occurred_at": (timezone.now() + timedelta(hours=1)).isoformat()},
            400,
            "invalid_occurred_at",
        ),
        ({"success": "yes"}, 400, "validation_error"),
    ]
    before = learned()
    for change, status, expected in bad_records:
        response = agent_client.client.post(
            URL, {"records": [good, {**good, **change}]}, format="json"
        )
        assert response.status_code == status and code(response) == expected, change
        assert learned() == before, change
    mismatch = services.UsageInput(
        agent_id=agent.pk,
        task_type="testing",
        success=True,
        skill_id=skill.pk,
        version_id=SkillVersion.objects.get(
            skill__account=agent.account, version="1.0.0", skill__name="Other skill"
        ).pk,
    )
    with pytest.raises(ValidationFailed) as raised:
        services.usage_record(actor=actor_of(agent_client), records=[mismatch])
    assert raised.value.code == "version_skill_mismatch"
    with pytest.raises(ValidationFailed) as task_type:
        services.usage_record(
            actor=actor_of(agent_client),
            records=[services.UsageInput(agent_id=agent.pk, task_type="a b/c", success=True)],
        )
    assert task_type.value.code == "invalid_task_type"
    empty = agent_client.client.post(URL, {"records": []}, format="json")
    assert empty.status_code == 400
    batch = agent_client.client.post(URL, {"records": [good] * 3}, format="json")
    assert batch.status_code == 201 and batch.json()["count"] == 3
    assert LearningProfile.objects.get(agent=agent, task_type="testing").executions == 3


def actor_of(client: AuthedAgent) -> Actor:
    from core.actors import actor_for_agent

    return actor_for_agent(client.agent)


def make_skill_elsewhere(client: AuthedAgent) -> Skill:
    from skills.services import catalog

    return catalog.skill_create(actor=actor_of(client), name="Foreign", category="testing")


@pytest.fixture(autouse=True)
def _other_skill(make_skill: Callable[..., Skill]) -> None:
    make_skill("Other skill", category="testing")


def test_records_without_a_version_are_routed_by_agent_and_share(
    reviewer: Actor, make_skill: Callable[..., Skill], agent_client: AuthedAgent
) -> None:
    actor = actor_for_account(agent_client.agent.account_id)  # records for 40 agents: a tool
    skill = make_skill("Plan sprint", category="planning")
    version_services.version_create(
        actor=reviewer,
        skill=skill,
        version="1.1.0",
        change_type="experimental",
        traffic={"1.0.0": 0.5, "1.1.0": 0.5},
    )
    agents = [AgentFactory.create(account=agent_client.agent.account) for _ in range(40)]
    services.usage_record(
        actor=actor,
        records=[
            services.UsageInput(
                agent_id=a.pk, skill_id=skill.pk, task_type="planning", success=True
            )
            for a in agents
        ],
    )
    variants = list(SkillVersion.objects.filter(skill=skill, is_active=True))
    for record in SkillUsage.objects.filter(skill=skill):
        expected = catalog_selectors.version_route(skill.pk, variants, f"agent:{record.agent_id}")
        assert record.version_id == expected.pk  # type: ignore[union-attr]
    counts = sorted(v.success_count for v in SkillVersion.objects.filter(skill=skill))
    assert sum(counts) == 40 and counts[0] > 5  # both variants got traffic


def test_profiles_keep_the_hundred_most_recent_executions(
    actor: Actor, agent_client: AuthedAgent
) -> None:
    agent = agent_client.agent
    now = timezone.now()
    old = [
        services.UsageInput(
            agent_id=agent.pk,
            task_type="deploy",
            success=False,
            occurred_at=now - timedelta(days=30, minutes=i),
        )
        for i in range(20)
    ]
    recent = [
        services.UsageInput(
            agent_id=agent.pk,
            task_type="deploy",
            success=True,
            occurred_at=now - timedelta(hours=i),
        )
        for i in range(100)
    ]
    services.usage_record(actor=actor, records=old)
    services.usage_record(actor=actor, records=recent)
    profile = LearningProfile.objects.get(agent=agent, task_type="deploy")
    assert (profile.executions, profile.total_executions, profile.successes) == (100, 120, 100)
    assert profile.success_rate == 1.0 and profile.confidence == 1.0
    times, outcomes = learning.window_unpack(profile.window)
    assert len(times) == 100 and times[0] >= times[-1] and outcomes.sum() == 100
    with pytest.raises(NotFound):
        services.usage_record(
            actor=actor,
            records=[services.UsageInput(agent_id=987654321, task_type="x", success=True)],
        )
