"""Proposal reads: one proposal, the review queue, and what a reviewer sees beside a proposal
(related existing skills and the conflicts it would bring)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet
from django.db.models.functions import Lower

from core.actors import Actor
from core.errors import NotFound
from skills.models import Skill, SkillProposal
from skills.similarity import (
    name_similarity,
    overlap_severity,
)
from skills.tuning import TUNING


def proposal_get(*, actor: Actor, proposal_id: int) -> SkillProposal:
    """A proposal of the actor's accounts; 404 ``proposal_not_found`` otherwise."""
    proposal = SkillProposal.objects.for_actor(actor).filter(pk=proposal_id).first()
    if proposal is None:
        raise NotFound("No such skill proposal.", code="proposal_not_found")
    return proposal


def review_queue(*, actor: Actor) -> QuerySet[SkillProposal]:
    """Submitted and under-review proposals, oldest first (first come, first reviewed)."""
    return (
        SkillProposal.objects.for_actor(actor)
        .filter(status__in=SkillProposal.REVIEWABLE_STATUSES)
        .order_by("submitted_at", "id")
    )


@dataclass(frozen=True)
class PredictedConflict:
    conflict_type: str
    severity: str
    skill: Skill | None
    detail: str


@dataclass(frozen=True)
class Review:
    proposal: SkillProposal
    related: list[Skill]
    conflicts: list[PredictedConflict]
    existing_dependencies: list[Skill]
    missing_dependencies: list[str]


def proposal_review(proposal: SkillProposal) -> Review:
    """The related skills research found (as they are now), and the conflicts creating the skill
    would bring: near-duplicate names and overlapping meaning with existing skills of the
    account, and dependencies that are no skill yet (they become sub-proposals on approval)."""
    found = proposal.research.get("skills", []) if isinstance(proposal.research, dict) else []
    ids = [int(s["skill_id"]) for s in found if isinstance(s, dict) and s.get("skill_id")]
    related_by_id = Skill.objects.filter(account_id=proposal.account_id, pk__in=ids).in_bulk()
    related = [related_by_id[i] for i in ids if i in related_by_id]
    conflicts: list[PredictedConflict] = []
    names = Skill.objects.filter(account_id=proposal.account_id).exclude(status="archived")
    for skill in names.only("pk", "name", "status", "category"):
        similarity = name_similarity(proposal.name, skill.name)
        if similarity >= TUNING.conflicts.name_similarity:
            conflicts.append(
                PredictedConflict(
                    "naming",
                    "high" if similarity == 1.0 else "medium",
                    skill,
                    f"The name is {similarity:.0%} like {skill.name!r}.",
                )
            )
    for hit in found:
        if not isinstance(hit, dict) or hit.get("similarity") is None:
            continue
        closeness = float(hit["similarity"])
        match = related_by_id.get(int(hit.get("skill_id") or 0))
        if (
            match is None
            or closeness < TUNING.conflicts.overlap_similarity
            or match.status != Skill.Status.ACTIVE
        ):
            continue
        conflicts.append(
            PredictedConflict(
                "overlap",
                overlap_severity(closeness),
                match,
                f"Its meaning is {closeness:.2f} similar to {match.name!r}.",
            )
        )
    lowered = [d.lower() for d in proposal.dependencies]
    existing: list[Skill] = list(
        Skill.objects.filter(account_id=proposal.account_id)
        .annotate(lname=Lower("name"))
        .filter(lname__in=lowered)
    )
    have = {s.name.lower() for s in existing}
    missing = [d for d in proposal.dependencies if d.lower() not in have]
    for name in missing:
        conflicts.append(
            PredictedConflict(
                "dependency", "medium", None, f"Depends on {name!r}, which is no skill yet."
            )
        )
    return Review(
        proposal=proposal,
        related=related,
        conflicts=conflicts,
        existing_dependencies=existing,
        missing_dependencies=missing,
    )
