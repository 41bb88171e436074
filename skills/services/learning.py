"""Task assignment by learned expertise, task outcomes flowing back into the profiles, and the
daily trust decay of idle agents (seed 002; docs/skills.md)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from core.actors import READ, Actor
from core.audit import audit_record
from core.errors import Conflict, ValidationFailed
from skills.models import AgentTrust, TaskAssignment
from skills.selectors.learning import rank_agents
from skills.services import usage
from skills.tuning import TUNING

# The advisory lock namespace serialising assignments within an account (loads are read, then
# an agent is given one more task).
_ASSIGN_LOCK = 0x5C11


def task_assign(
    *,
    actor: Actor,
    title: str,
    description: str = "",
    task_type: str | None = None,
    use_recency: bool = False,
    agent_ids: Sequence[int] | None = None,
) -> TaskAssignment:
    """Give the task to the best-scoring agent (``rank_agents``); when no candidate has run the
    task type before, to the least-loaded one instead. 409 ``no_available_agent`` when the
    account has no active candidate."""
    account_id = actor.account_id
    actor.require(account_id, READ)
    title = title.strip()
    if not title:
        raise ValidationFailed("A task needs a title.", code="empty_title")
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_ASSIGN_LOCK, account_id])
        ranking = rank_agents(
            actor=actor,
            title=title,
            description=description,
            task_type=task_type,
            use_recency=use_recency,
            agent_ids=agent_ids,
            limit=1,
        )
        if not ranking.results:
            raise Conflict("No active agent can take the task.", code="no_available_agent")
        if ranking.has_history:
            chosen, method = ranking.results[0], TaskAssignment.Method.LEARNED
        else:
            assert ranking.least_loaded is not None
            chosen, method = ranking.least_loaded, TaskAssignment.Method.LEAST_LOADED
        assignment = TaskAssignment.objects.create(
            account_id=account_id,
            agent_id=chosen.agent_id,
            requested_by_id=actor.agent_id,
            title=title[:500],
            description=description,
            task_type=ranking.task_type,
            method=method,
            score=chosen.score,
            expertise=chosen.expertise,
            confidence=chosen.confidence,
            base=chosen.base,
        )
        audit_record(
            actor=actor,
            action="skills.task.assign",
            account_id=account_id,
            target=assignment,
            changes={
                "agent": chosen.agent_id,
                "task_type": ranking.task_type,
                "method": method,
                "score": round(chosen.score, 6),
                "candidates": ranking.candidates,
            },
        )
    return assignment


def task_complete(
    *,
    actor: Actor,
    assignment: TaskAssignment,
    success: bool,
    duration_ms: int = 0,
    skill_id: int | None = None,
    version_id: int | None = None,
) -> TaskAssignment:
    """assigned -> succeeded | failed: the outcome becomes a usage record of the assigned agent
    for the task's type (so its learning profile, trust and the skill learn from it) and the
    agent's load drops. 409 ``task_completed`` when it was completed already. The outcome is
    the assigned agent's: another agent reports it only with the ``admin`` scope (403
    ``insufficient_scope``, ``skills.services.usage.reporter_check``)."""
    actor.require(assignment.account_id, READ)
    usage.reporter_check(actor=actor, agent_ids=[assignment.agent_id])
    to = TaskAssignment.Status.SUCCEEDED if success else TaskAssignment.Status.FAILED
    now = timezone.now()
    with transaction.atomic():
        updated = TaskAssignment.objects.filter(
            pk=assignment.pk, status=TaskAssignment.Status.ASSIGNED
        ).update(status=to, completed_at=now, updated_at=now)
        if not updated:
            raise Conflict("The task was completed already.", code="task_completed")
        usage.usage_record(
            actor=actor,
            account_id=assignment.account_id,
            assignment=assignment,
            records=[
                usage.UsageInput(
                    agent_id=assignment.agent_id,
                    task_type=assignment.task_type,
                    success=success,
                    duration_ms=duration_ms,
                    occurred_at=now,
                    skill_id=skill_id,
                    version_id=version_id,
                )
            ],
        )
        audit_record(
            actor=actor,
            action="skills.task.complete",
            account_id=assignment.account_id,
            target=assignment,
            changes={"status": to, "duration_ms": duration_ms},
        )
    assignment.refresh_from_db()
    return assignment


def trust_decay(*, now: datetime | None = None, dry_run: bool = False) -> dict[str, int]:
    """The daily job: the trust score of every agent idle for ``TUNING.outcomes.trust_idle_days``
    (no outcome since) moves toward neutral, ``t <- 0.5 + (t - 0.5) x 0.95``, at most once a day.
    One statement; no audit event (derived data)."""
    now = now or timezone.now()
    idle = AgentTrust.objects.filter(
        last_active_at__lt=now - timedelta(days=TUNING.outcomes.trust_idle_days)
    ).exclude(decayed_at__gt=now - timedelta(hours=20))
    if dry_run:
        return {"decayed": idle.count()}
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE skills_agenttrust
            SET trust_score = %(neutral)s::float8
                              + (trust_score - %(neutral)s::float8) * %(factor)s::float8,
                decayed_at = %(now)s, updated_at = %(now)s
            WHERE id = ANY(%(ids)s)
            """,
            {
                "neutral": TUNING.outcomes.trust_neutral,
                "factor": TUNING.outcomes.trust_decay,
                "now": now,
                "ids": list(idle.values_list("pk", flat=True)),
            },
        )
        return {"decayed": cursor.rowcount}
