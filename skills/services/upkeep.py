"""The skill graph's upkeep: health scores, stale decay, re-embedding, gap detection, team
coverage (docs/skills.md, "Upkeep"). Each is a periodic job (``skills.tasks``); each acts on
sets and can stop or repeat at any point. Derived values only: no audit events, except for the
proposals gap detection opens (``dependency_proposal_open`` records them)."""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from core.actors import actor_for_account
from core.embeddings import get_embedding_provider
from core.embeddings.base import EmbeddingError
from rag.graph import selectors as graph
from skills.categories import CATEGORIES
from skills.models import LearningProfile, Skill, SkillConflict, SkillUsage
from skills.selectors.traversal import team_coverage
from skills.services import catalog
from skills.services.indexing import SKILL_ENTITY_TYPE
from skills.spaces import skill_text, text_checksum
from skills.tuning import TUNING

# Health = 0.5 x outcomes + 0.3 x recency + 0.2 x conflicts, and every other weight and threshold
# of upkeep: ``TUNING.health`` (skills.tuning).
REEMBED_BATCH = 2000


def health_score(*, effectiveness: float, days_idle: float, open_conflict_weight: float) -> float:
    """0.5 x effectiveness + 0.3 x exp(-days idle / 30) + 0.2 / (1 + open conflicts' weights /
    4), within 0..1. ``days_idle`` counts from the last use (or the creation when never used)."""
    health = TUNING.health
    recency = math.exp(-max(0.0, days_idle) / health.recency_days)
    conflicts = 1.0 / (1.0 + max(0.0, open_conflict_weight) / health.conflict_weight_scale)
    value = (
        health.outcomes_weight * effectiveness
        + health.recency_weight * recency
        + health.conflicts_weight * conflicts
    )
    return min(1.0, max(0.0, value))


def health_update(*, now: datetime | None = None, dry_run: bool = False) -> dict[str, int]:
    """Recompute every skill's health score in one statement per batch of values."""
    now = now or timezone.now()
    weights: dict[int, float] = defaultdict(float)
    for skill_id, other_id, severity in SkillConflict.objects.filter(
        status__in=SkillConflict.OPEN_STATUSES
    ).values_list("skill_id", "other_skill_id", "severity"):
        weight = SkillConflict.SEVERITY_WEIGHTS[severity]
        weights[skill_id] += weight
        if other_id is not None:
            weights[other_id] += weight
    ids, values = [], []
    for pk, effectiveness, last_used, created in Skill.objects.values_list(
        "pk", "effectiveness_score", "last_used_at", "created_at"
    ).iterator(chunk_size=5000):
        idle = (now - (last_used or created)).total_seconds() / 86_400
        ids.append(pk)
        values.append(
            round(
                health_score(
                    effectiveness=effectiveness,
                    days_idle=idle,
                    open_conflict_weight=weights.get(pk, 0.0),
                ),
                6,
            )
        )
    if not dry_run and ids:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "UPDATE skills_skill s SET health_score = v.h "
                "FROM unnest(%s::bigint[], %s::float8[]) AS v(id, h) "
                "WHERE s.id = v.id AND s.health_score IS DISTINCT FROM v.h",
                [ids, values],
            )
    return {"skills": len(ids)}


def stale_decay(*, now: datetime | None = None, dry_run: bool = False) -> dict[str, int]:
    """Weekly: the effectiveness of skills unused for 30 days (never used: created 30 days ago)
    is multiplied by 0.9."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=TUNING.health.stale_after_days)
    stale = Skill.objects.filter(
        Q(last_used_at__lt=cutoff) | Q(last_used_at__isnull=True, created_at__lt=cutoff)
    ).exclude(status=Skill.Status.ARCHIVED)
    if dry_run:
        return {"decayed": stale.count()}
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE skills_skill SET effectiveness_score = effectiveness_score * %s::float8 "
            "WHERE id = ANY(%s)",
            [TUNING.health.stale_factor, list(stale.values_list("pk", flat=True))],
        )
        return {"decayed": cursor.rowcount}


def _needs_embedding(skill: Skill, model: str) -> bool:
    text = skill_text(
        name=skill.name,
        category=skill.category,
        description=skill.description,
        tags=skill.tags,
        procedure=skill.procedure,
    )
    return (
        skill.embedding_model != model
        or skill.embedding_checksum != text_checksum(text)
        or skill.graph_node_id is None
    )


def reembed(*, dry_run: bool = False, limit: int = REEMBED_BATCH) -> dict[str, int]:
    """Weekly: re-index and re-embed the skills whose embedding is not of the current model or
    not of their current text, and restore deleted graph nodes; at most ``limit`` a run (the
    next run continues). A provider failure stops the run (the rest waits for the next one)."""
    model = get_embedding_provider().model_id
    candidates = Skill.objects.defer("embedding").order_by("pk")
    node_ids = set(graph.node_ids_of_type(entity_types=[SKILL_ENTITY_TYPE]))
    due = []
    for skill in candidates.iterator(chunk_size=2000):
        if _needs_embedding(skill, model) or skill.graph_node_id not in node_ids:
            due.append(skill)
            if len(due) >= limit:
                break
    if dry_run:
        return {"due": len(due)}
    done = 0
    for skill in due:
        system = actor_for_account(skill.account_id)
        try:
            catalog.skill_reindex(actor=system, skill=skill)
        except EmbeddingError:
            break
        done += 1
    return {"due": len(due), "reembedded": done}


def _title(task_type: str) -> str:
    words = task_type.replace("_", " ").replace("-", " ").replace(".", " ").replace(":", " ")
    return " ".join(words.split()).capitalize()


def gaps_detect(*, now: datetime | None = None, dry_run: bool = False) -> dict[str, int]:
    """Monthly: task types that failed at least half the time, or that no agent does well,
    become proposals (submitted) for a skill handling them, unless a skill or an open
    proposal of that name exists."""
    from skills.services.proposals import dependency_proposal_open

    now = now or timezone.now()
    since = now - timedelta(days=TUNING.health.gap_days)
    stats = (
        SkillUsage.objects.filter(occurred_at__gte=since)
        .values("account_id", "task_type")
        .annotate(runs=Count("id"), failures=Count("id", filter=Q(success=False)))
        .order_by("account_id", "task_type")
    )
    capable = set(
        LearningProfile.objects.filter(
            executions__gte=TUNING.health.gap_min_executions,
            success_rate__gte=TUNING.health.capable_success_rate,
        )
        .values_list("account_id", "task_type")
        .distinct()
    )
    counts = {"gaps": 0, "proposals": 0}
    for row in stats:
        if row["runs"] < TUNING.health.gap_min_executions:
            continue
        failing = row["failures"] / row["runs"] >= TUNING.health.gap_failure_rate
        uncovered = (row["account_id"], row["task_type"]) not in capable
        if not (failing or uncovered):
            continue
        counts["gaps"] += 1
        if dry_run:
            continue
        days = TUNING.health.gap_days
        reason = (
            f"{row['failures']} of {row['runs']} executions failed in the last {days} days"
            if failing
            else "no agent succeeds at half of them"
        )
        with transaction.atomic():
            proposal = dependency_proposal_open(
                actor=actor_for_account(row["account_id"]),
                account_id=row["account_id"],
                name=f"{_title(row['task_type'])} handling",
                description=f"Gap detected for task type {row['task_type']!r}: {reason}.",
            )
        if proposal is not None:
            counts["proposals"] += 1
    return counts


def coverage_report(*, dry_run: bool = False) -> dict[str, int]:
    """Weekly: team coverage of the categories (``team_coverage``), summed over accounts for the
    job record: teams, teams covering no category, and categories no team covers."""
    teams = uncovered_teams = missing = 0
    for account_id in Skill.objects.values_list("account_id", flat=True).distinct().order_by():
        report = team_coverage(account_id)
        teams += len(report)
        uncovered_teams += sum(1 for team in report if not team.categories)
        covered = {c for team in report for c in team.categories}
        missing += len(set(CATEGORIES) - covered)
    return {"teams": teams, "teams_without_coverage": uncovered_teams, "uncovered": missing}
