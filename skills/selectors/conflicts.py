"""Conflict reads, scoped by the actor's accounts."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from core.actors import Actor
from skills.models import SkillConflict


def conflict_list(
    *,
    actor: Actor,
    status: str | None = None,
    conflict_type: str | None = None,
    severity: str | None = None,
    skill_id: int | None = None,
) -> QuerySet[SkillConflict]:
    """Open conflicts (detected, acknowledged) unless ``status`` names one."""
    conflicts = SkillConflict.objects.for_actor(actor)
    if status:
        conflicts = conflicts.filter(status=status)
    else:
        conflicts = conflicts.filter(status__in=SkillConflict.OPEN_STATUSES)
    if conflict_type:
        conflicts = conflicts.filter(conflict_type=conflict_type)
    if severity:
        conflicts = conflicts.filter(severity=severity)
    if skill_id is not None:
        conflicts = conflicts.filter(Q(skill_id=skill_id) | Q(other_skill_id=skill_id))
    return conflicts
