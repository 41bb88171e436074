"""Upkeep jobs: health scores (worked example), stale decay, re-embedding, gap detection, team
coverage, and the job table."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.utils import timezone

from core import services as core_services
from core.actors import Actor, actor_for_account
from core.jobs import periodic_jobs
from core.models import JobRun
from rag.models import GraphNode
from skills import tasks
from skills.models import Skill, SkillConflict, SkillProposal
from skills.selectors import traversal
from skills.services import catalog, upkeep, usage
from tests.conftest import AuthedAgent
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db


def test_health_score_worked_example() -> None:
    # effectiveness 0.8, last used 15 days ago, one open high conflict (weight 4):
    # 0.5 x 0.8 + 0.3 x exp(-15 / 30) + 0.2 / (1 + 4 / 4) = 0.4 + 0.181959 + 0.1 = 0.681959
    value = upkeep.health_score(effectiveness=0.8, days_idle=15, open_conflict_weight=4)
    assert value == pytest.approx(0.4 + 0.3 * math.exp(-0.5) + 0.1)
    assert value == pytest.approx(0.681959, abs=1e-6)
    assert upkeep.health_score(effectiveness=1, days_idle=0, open_conflict_weight=0) == 1.0


def test_health_job_follows_outcomes_recency_and_conflicts(
    make_skill: Callable[..., Skill], actor: Actor
) -> None:
    used = make_skill("Used skill")
    idle = make_skill("Idle skill", category="testing")
    Skill.objects.filter(pk=idle.pk).update(created_at=timezone.now() - timedelta(days=60))
    usage.usage_record(
        actor=actor,
        records=[
            usage.UsageInput(agent_id=actor.agent_id, skill_id=used.pk, task_type="t", success=True)  # type: ignore[arg-type]
        ],
    )
    SkillConflict.objects.create(
        account_id=used.account_id,
        conflict_type="naming",
        severity="critical",
        skill=used,
        fingerprint="test",
    )
    assert tasks.health.delay().get() == {"skills": 2}
    used.refresh_from_db()
    idle.refresh_from_db()
    assert used.health_score == pytest.approx(
        upkeep.health_score(effectiveness=0.55, days_idle=0, open_conflict_weight=8), abs=1e-3
    )
    assert idle.health_score == pytest.approx(
        upkeep.health_score(effectiveness=0.5, days_idle=60, open_conflict_weight=0), abs=1e-3
    )


def test_stale_decay_touches_only_unused_skills(
    make_skill: Callable[..., Skill], actor: Actor
) -> None:
    stale = make_skill("Stale skill")
    fresh = make_skill("Fresh skill", category="testing")
    Skill.objects.filter(pk=stale.pk).update(
        created_at=timezone.now() - timedelta(days=40), effectiveness_score=0.8
    )
    assert tasks.stale_decay.delay(dry_run=True).get() == {"decayed": 1}
    assert tasks.stale_decay.delay().get() == {"decayed": 1}
    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert stale.effectiveness_score == pytest.approx(0.72)
    assert fresh.effectiveness_score == 0.5


def test_reembedding_finds_changed_skills_and_restores_nodes(
    make_skill: Callable[..., Skill], reviewer: Actor
) -> None:
    changed = make_skill("Changed skill")
    orphan = make_skill("Orphan skill", category="testing")
    untouched = make_skill("Untouched skill", category="analysis")
    Skill.objects.filter(pk=changed.pk).update(embedding_model="old-model")
    Skill.objects.filter(pk=orphan.pk).update(description="Edited behind the services' back.")
    node = GraphNode.objects.get(pk=untouched.graph_node_id or 0)
    from rag.graph.services import nodes as graph_services

    graph_services.node_delete(actor=reviewer, node=node)
    assert tasks.reembed.delay(dry_run=True).get() == {"due": 3}
    assert tasks.reembed.delay().get() == {"due": 3, "reembedded": 3}
    assert tasks.reembed.delay().get() == {"due": 0, "reembedded": 0}
    untouched.refresh_from_db()
    assert GraphNode.objects.get(pk=untouched.graph_node_id or 0).name == "Untouched skill"
    changed.refresh_from_db()
    assert changed.embedding_model != "old-model"


def test_gap_detection_proposes_skills_for_failing_or_uncovered_task_types(
    actor: Actor, agent_client: AuthedAgent
) -> None:
    agent = agent_client.agent
    now = timezone.now()
    records = [
        usage.UsageInput(agent_id=agent.pk, task_type="db_migration", success=i < 2)
        for i in range(6)
    ] + [usage.UsageInput(agent_id=agent.pk, task_type="triage", success=True) for _ in range(6)]
    records.append(
        usage.UsageInput(
            agent_id=agent.pk,
            task_type="old_type",
            success=False,
            occurred_at=now - timedelta(days=90),
        )
    )
    usage.usage_record(actor=actor, records=records)
    assert tasks.gap_detection.delay(dry_run=True).get() == {"gaps": 1, "proposals": 0}
    assert tasks.gap_detection.delay().get() == {"gaps": 1, "proposals": 1}
    proposal = SkillProposal.objects.get()
    assert (proposal.name, proposal.status) == ("Db migration handling", "submitted")
    assert "4 of 6 executions failed" in proposal.description
    assert tasks.gap_detection.delay().get() == {"gaps": 1, "proposals": 0}  # open already


def test_team_coverage(make_skill: Callable[..., Skill], agent_client: AuthedAgent) -> None:
    account = agent_client.agent.account
    tool = actor_for_account(account.pk)
    team = core_services.team_create(actor=tool, account=account, name="Platform")
    member = AgentFactory.create(account=account)
    member.teams.add(team)
    core_services.team_create(actor=tool, account=account, name="Empty")
    deploy = make_skill("Deploy service")
    review = make_skill("Review code", category="code_review")
    catalog.agent_skill_set(actor=tool, skill=deploy, agent_id=member.pk, proficiency=0.9)
    catalog.agent_skill_set(actor=tool, skill=review, agent_id=member.pk, proficiency=0.2)
    [empty, platform] = traversal.team_coverage(account.pk)
    assert platform.categories == {"deployment": 1} and platform.agents == 1
    assert "code_review" in platform.missing and empty.categories == {}
    counts = tasks.team_coverage.delay().get()
    assert counts == {"teams": 2, "teams_without_coverage": 1, "uncovered": 21}
    assert JobRun.objects.get(job="skills.team_coverage").counts == counts


def test_every_skills_job_is_scheduled_with_expiry_and_a_dry_run() -> None:
    jobs = {job.name: job for job in periodic_jobs() if job.name.startswith("skills.")}
    assert set(jobs) == {
        "skills.expire_proposals",
        "skills.trust_decay",
        "skills.conflict_scan",
        "skills.health",
        "skills.stale_decay",
        "skills.reembed",
        "skills.gap_detection",
        "skills.team_coverage",
    }
    assert jobs["skills.conflict_scan"].crontab == "15 4 * * *"
    assert jobs["skills.gap_detection"].crontab == "0 3 1 * *"
    assert jobs["skills.expire_proposals"].every_seconds == 3600
    for job in jobs.values():
        task = getattr(tasks, job.task.rsplit(".", 1)[1])
        assert job.expires_seconds > 0
        assert isinstance(task.delay(dry_run=True).get(), dict)
