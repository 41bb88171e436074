"""Usage records: what agents ran and how it went. One call writes one record or up to
``MAX_BATCH``, all or none, and everything that learns from them in the same transaction:

- each version's outcome counts (A/B comparison); a record naming a skill but no version is
  routed like the agent's context (sticky per agent, by traffic share);
- each skill's counts and effectiveness (an exponential moving average of outcomes);
- each agent's assignment to the skill (created on first use) and its proficiency (the same
  average, per agent and skill);
- each agent's learning profile for the task type, recomputed from its ``PROFILE_WINDOW`` most
  recent executions of that type (``skills.learning``);
- each agent's trust score (a slower moving average of its outcomes).

Who reports: an agent reports its own outcomes. Reporting another agent's (``agent_id`` of
another agent, or completing a task assigned to another) needs a key with the ``admin`` scope,
or a person with a role in the account, or an operator's tool: a write-scope key cannot lower
(or raise) another agent's ranking (403 ``insufficient_scope``, ``details.agent_ids``). Every
record keeps the agent that wrote it (``recorded_by``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from core.actors import READ, Actor
from core.audit import audit_record
from core.errors import NotFound, PermissionDenied, ValidationFailed
from core.models import Agent
from skills import learning
from skills.learning import task_type_normalise
from skills.models import (
    AgentSkill,
    AgentTrust,
    LearningProfile,
    Skill,
    SkillUsage,
    SkillVersion,
    TaskAssignment,
)
from skills.selectors.catalog import version_route
from skills.tuning import TUNING

MAX_BATCH = 1000
MAX_DURATION_MS = 10**12
# A record may be stamped a little ahead of the server's clock, never further.
CLOCK_SKEW = timedelta(minutes=5)


@dataclass(frozen=True)
class UsageInput:
    agent_id: int
    task_type: str
    success: bool
    duration_ms: int = 0
    occurred_at: datetime | None = None
    skill_id: int | None = None
    version_id: int | None = None


def reporter_check(*, actor: Actor, agent_ids: Iterable[int]) -> None:
    """403 ``insufficient_scope`` when an agent reports outcomes of other agents without the
    ``admin`` scope (module docstring). People (their role is checked by the caller) and
    tools may report for any agent of their account."""
    if actor.agent is None:
        return
    others = sorted(set(agent_ids) - {actor.agent.pk})
    if not others or (actor.api_key is not None and actor.api_key.has_scope("admin")):
        return
    raise PermissionDenied(
        "An agent reports its own outcomes: reporting another agent's needs the 'admin' scope.",
        code="insufficient_scope",
        details={
            "required_scope": "admin",
            "key_scopes": list(actor.api_key.scopes) if actor.api_key is not None else [],
            "agent_ids": others[:100],
        },
    )


def _resolve(account_id: int, records: Sequence[UsageInput], actor: Actor) -> list[SkillUsage]:
    if not 1 <= len(records) <= MAX_BATCH:
        raise ValidationFailed(
            f"Give 1 to {MAX_BATCH} records.",
            code="invalid_batch_size",
            details={"max": MAX_BATCH},
        )
    now = timezone.now()
    agent_ids = {r.agent_id for r in records}
    if Agent.objects.filter(account_id=account_id, pk__in=agent_ids).count() != len(agent_ids):
        raise NotFound("No such agent.", code="agent_not_found")
    skill_ids = {r.skill_id for r in records if r.skill_id is not None}
    skills = Skill.objects.filter(account_id=account_id, pk__in=skill_ids).only("pk").in_bulk()
    if set(skills) != skill_ids:
        raise NotFound("No such skill.", code="skill_not_found")
    version_ids = {r.version_id for r in records if r.version_id is not None}
    versions = SkillVersion.objects.filter(account_id=account_id, pk__in=version_ids).in_bulk()
    if set(versions) != version_ids:
        raise NotFound("No such version of this skill.", code="version_not_found")
    routed_skills = {r.skill_id for r in records if r.skill_id and r.version_id is None}
    active: dict[int, list[SkillVersion]] = defaultdict(list)
    for version in SkillVersion.objects.filter(skill_id__in=routed_skills, is_active=True):
        active[version.skill_id].append(version)
    rows = []
    for record in records:
        occurred = record.occurred_at or now
        if occurred > now + CLOCK_SKEW:
            raise ValidationFailed("occurred_at is in the future.", code="invalid_occurred_at")
        if not 0 <= record.duration_ms <= MAX_DURATION_MS:
            raise ValidationFailed(
                f"duration_ms is from 0 to {MAX_DURATION_MS}.", code="invalid_duration"
            )
        skill_id, version_id = record.skill_id, record.version_id
        if version_id is not None:
            owner = versions[version_id].skill_id
            if skill_id is not None and skill_id != owner:
                raise ValidationFailed(
                    "The version is not a version of that skill.",
                    code="version_skill_mismatch",
                )
            skill_id = owner
        elif skill_id is not None:
            routed = version_route(skill_id, active.get(skill_id, []), f"agent:{record.agent_id}")
            version_id = routed.pk if routed is not None else None
        rows.append(
            SkillUsage(
                account_id=account_id,
                agent_id=record.agent_id,
                skill_id=skill_id,
                version_id=version_id,
                task_type=task_type_normalise(record.task_type),
                success=record.success,
                duration_ms=record.duration_ms,
                occurred_at=occurred,
                recorded_by_id=actor.agent_id,
            )
        )
    return rows


def usage_record(
    *,
    actor: Actor,
    records: Sequence[UsageInput],
    account_id: int | None = None,
    assignment: TaskAssignment | None = None,
) -> list[SkillUsage]:
    """Write the records and everything that learns from them (module docstring), all or
    none. 404 ``agent_not_found`` / ``skill_not_found`` / ``version_not_found`` for ids that are
    missing or another account's; 403 ``insufficient_scope`` for another agent's records
    without the ``admin`` scope (``reporter_check``)."""
    account_id = actor.account_id if account_id is None else account_id
    actor.require(account_id, READ)  # agents and tools in their account; people: any role
    rows = _resolve(account_id, records, actor)  # missing and foreign ids: 404 first
    reporter_check(actor=actor, agent_ids=[r.agent_id for r in records])
    if assignment is not None:
        for row in rows:
            row.assignment = assignment
    with transaction.atomic():
        # Skills first, in id order, before the records (whose foreign keys share-lock them) and
        # the versions: the order version and traffic changes take them in (scope, skill,
        # versions), so the two never deadlock.
        skill_ids = sorted({r.skill_id for r in rows if r.skill_id is not None})
        list(Skill.objects.select_for_update().filter(pk__in=skill_ids).order_by("pk").values("pk"))
        created = SkillUsage.objects.bulk_create(rows)
        ordered = sorted(created, key=lambda r: (r.occurred_at, r.pk))
        _versions_count(ordered)
        _skills_learn(ordered)
        _assignments_learn(account_id, ordered)
        profiles_refresh({(r.agent_id, r.task_type) for r in ordered}, account_id=account_id)
        _trust_learn(account_id, ordered)
        audit_record(
            actor=actor,
            action="skills.usage.record",
            account_id=account_id,
            target_type="skills.skillusage",
            target_id=str(created[0].pk),
            changes={
                "records": len(created),
                "ids": [r.pk for r in created[:100]],
                "succeeded": sum(1 for r in created if r.success),
            },
        )
    return created


def _versions_count(rows: Sequence[SkillUsage]) -> None:
    counts: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in rows:
        if row.version_id is not None:
            count = counts[row.version_id]
            count[0 if row.success else 1] += 1
            count[2] += row.duration_ms
    if not counts:
        return
    ids = sorted(counts)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE skills_skillversion v
            SET success_count = v.success_count + t.ok,
                failure_count = v.failure_count + t.failed,
                total_duration_ms = v.total_duration_ms + t.ms
            FROM unnest(%s::bigint[], %s::int[], %s::int[], %s::bigint[]) AS t(id, ok, failed, ms)
            WHERE v.id = t.id
            """,
            [
                ids,
                [counts[i][0] for i in ids],
                [counts[i][1] for i in ids],
                [counts[i][2] for i in ids],
            ],
        )


def _ema(start: float, outcomes: Iterable[bool], rate: float) -> float:
    value = start
    for outcome in outcomes:
        value += rate * ((1.0 if outcome else 0.0) - value)
    return min(1.0, max(0.0, value))


def _skills_learn(rows: Sequence[SkillUsage]) -> None:
    by_skill: dict[int, list[SkillUsage]] = defaultdict(list)
    for row in rows:
        if row.skill_id is not None:
            by_skill[row.skill_id].append(row)
    if not by_skill:
        return
    # Locked in id order, as every writer of skills' counters does.
    skills = {
        s.pk: s
        for s in Skill.objects.select_for_update()
        .filter(pk__in=sorted(by_skill))
        .order_by("pk")
        .only("pk", "effectiveness_score", "usage_count", "success_count", "last_used_at")
    }
    for skill_id, used in by_skill.items():
        skill = skills.get(skill_id)
        if skill is None:
            continue
        last = max(r.occurred_at for r in used)
        Skill.objects.filter(pk=skill_id).update(
            effectiveness_score=_ema(
                skill.effectiveness_score,
                (r.success for r in used),
                TUNING.outcomes.effectiveness_rate,
            ),
            usage_count=skill.usage_count + len(used),
            success_count=skill.success_count + sum(1 for r in used if r.success),
            last_used_at=max(last, skill.last_used_at) if skill.last_used_at else last,
        )


def _assignments_learn(account_id: int, rows: Sequence[SkillUsage]) -> None:
    by_pair: dict[tuple[int, int], list[SkillUsage]] = defaultdict(list)
    for row in rows:
        if row.skill_id is not None:
            by_pair[(row.agent_id, row.skill_id)].append(row)
    if not by_pair:
        return
    AgentSkill.objects.bulk_create(
        [
            AgentSkill(account_id=account_id, agent_id=agent, skill_id=skill)
            for agent, skill in sorted(by_pair)
        ],
        ignore_conflicts=True,
    )
    agents = sorted({agent for agent, _ in by_pair})
    skills = sorted({skill for _, skill in by_pair})
    existing = {
        (a.agent_id, a.skill_id): a
        for a in AgentSkill.objects.select_for_update()
        .filter(agent_id__in=agents, skill_id__in=skills)
        .order_by("pk")
    }
    changed = []
    for pair, used in by_pair.items():
        assignment = existing[pair]
        assignment.proficiency = _ema(
            assignment.proficiency, (r.success for r in used), TUNING.outcomes.proficiency_rate
        )
        assignment.usage_count += len(used)
        assignment.success_count += sum(1 for r in used if r.success)
        last = max(r.occurred_at for r in used)
        assignment.last_used_at = (
            max(last, assignment.last_used_at) if assignment.last_used_at else last
        )
        assignment.updated_at = timezone.now()
        changed.append(assignment)
    AgentSkill.objects.bulk_update(
        changed, ["proficiency", "usage_count", "success_count", "last_used_at", "updated_at"]
    )


def profiles_refresh(pairs: Iterable[tuple[int, str]], *, account_id: int) -> int:
    """Recompute the learning profiles of these (agent, task type) pairs from their usage
    records (inside the caller's transaction). Each profile row is locked first, so concurrent
    writers recompute one after the other, each seeing the other's committed records."""
    pairs = sorted(set(pairs))
    if not pairs:
        return 0
    LearningProfile.objects.bulk_create(
        [LearningProfile(account_id=account_id, agent_id=a, task_type=t) for a, t in pairs],
        ignore_conflicts=True,
    )
    agents = sorted({a for a, _ in pairs})
    locked = {
        (p.agent_id, p.task_type): p
        for p in LearningProfile.objects.select_for_update()
        .filter(agent_id__in=agents, task_type__in={t for _, t in pairs})
        .order_by("agent_id", "task_type")
    }
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT q.agent_id, q.task_type, w.times, w.outcomes, w.last_at, c.total
            FROM unnest(%(agents)s::bigint[], %(types)s::varchar[]) AS q(agent_id, task_type)
            CROSS JOIN LATERAL (
                SELECT array_agg(extract(epoch FROM r.occurred_at)::float8
                                 ORDER BY r.occurred_at DESC, r.id DESC) AS times,
                       array_agg(r.success ORDER BY r.occurred_at DESC, r.id DESC) AS outcomes,
                       max(r.occurred_at) AS last_at
                FROM (
                    SELECT u.id, u.occurred_at, u.success FROM skills_skillusage u
                    WHERE u.agent_id = q.agent_id AND u.task_type = q.task_type
                    ORDER BY u.occurred_at DESC, u.id DESC
                    LIMIT %(window)s
                ) r
            ) w
            CROSS JOIN LATERAL (
                SELECT count(*) AS total FROM skills_skillusage u
                WHERE u.agent_id = q.agent_id AND u.task_type = q.task_type
            ) c
            """,
            {
                "agents": [a for a, _ in pairs],
                "types": [t for _, t in pairs],
                "window": learning.PROFILE_WINDOW,
            },
        )
        rows = cursor.fetchall()
    changed = []
    now = timezone.now()
    for agent_id, task_type, times, outcomes, last_at, total in rows:
        profile = locked.get((agent_id, task_type))
        if profile is None:
            continue
        times, outcomes = list(times or []), list(outcomes or [])
        profile.executions = len(times)
        profile.successes = sum(1 for o in outcomes if o)
        profile.total_executions = int(total)
        profile.success_rate = learning.success_rate(outcomes)
        profile.confidence = learning.confidence(len(times))
        profile.last_execution_at = last_at
        profile.window = learning.window_pack(times, outcomes)
        profile.updated_at = now
        changed.append(profile)
    LearningProfile.objects.bulk_update(
        changed,
        [
            "executions",
            "successes",
            "total_executions",
            "success_rate",
            "confidence",
            "last_execution_at",
            "window",
            "updated_at",
        ],
    )
    return len(changed)


def _trust_learn(account_id: int, rows: Sequence[SkillUsage]) -> None:
    by_agent: dict[int, list[SkillUsage]] = defaultdict(list)
    for row in rows:
        by_agent[row.agent_id].append(row)
    AgentTrust.objects.bulk_create(
        [AgentTrust(account_id=account_id, agent_id=agent) for agent in sorted(by_agent)],
        ignore_conflicts=True,
    )
    trusts = {
        t.agent_id: t
        for t in AgentTrust.objects.select_for_update()
        .filter(agent_id__in=sorted(by_agent))
        .order_by("agent_id")
    }
    changed = []
    now = timezone.now()
    for agent_id, used in by_agent.items():
        trust = trusts[agent_id]
        trust.trust_score = _ema(
            trust.trust_score, (r.success for r in used), TUNING.outcomes.trust_rate
        )
        last = max(r.occurred_at for r in used)
        trust.last_active_at = max(last, trust.last_active_at) if trust.last_active_at else last
        trust.updated_at = now
        changed.append(trust)
    AgentTrust.objects.bulk_update(changed, ["trust_score", "last_active_at", "updated_at"])
