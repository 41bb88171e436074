"""Skill proposals: research and propose, submit, review, approve (with sub-proposals for
missing dependencies), reject with a reason, create the skill, expire. The research itself is
``skills.services.research``.

An explicit state machine (``TRANSITIONS``); every transition is a compare-and-set on the status
(a conditional UPDATE), so two reviewers acting at once cannot both succeed, and records an audit
event with who, when and why. A transition the machine does not allow is 409
``invalid_transition`` with ``details.from`` / ``details.to``, and nothing changes. Agents (and
anyone in the account) propose and submit; only people with the reviewer or owner role start a
review, approve, reject or create the skill (403 ``reviewer_required``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models.functions import Lower
from django.utils import timezone

from core.actors import READ, Actor, actor_for_account
from core.audit import audit_record
from core.errors import Conflict, ValidationFailed
from skills.models import Skill, SkillProposal
from skills.roles import require_reviewer
from skills.services import catalog
from skills.services.research import (
    Research,
    category_infer,
    draft_procedure,
    offline_procedure,
    research,
)

Status = SkillProposal.Status

TRANSITIONS: dict[str, frozenset[str]] = {
    Status.DRAFT: frozenset({Status.SUBMITTED, Status.EXPIRED}),
    Status.SUBMITTED: frozenset(
        {Status.UNDER_REVIEW, Status.APPROVED, Status.REJECTED, Status.EXPIRED}
    ),
    Status.UNDER_REVIEW: frozenset({Status.APPROVED, Status.REJECTED, Status.EXPIRED}),
    Status.APPROVED: frozenset({Status.CREATED}),
    Status.REJECTED: frozenset(),
    Status.EXPIRED: frozenset(),
    Status.CREATED: frozenset(),
}
# A proposal nobody reviewed expires this long after it was written or submitted.
PROPOSAL_TTL = timedelta(days=14)
MAX_DEPENDENCIES = 20
MAX_REASON_CHARS = 5000


def proposal_exists() -> Conflict:
    return Conflict(
        "An open proposal for a skill of this name exists in the account.",
        code="proposal_exists",
    )


def _invalid(current: str, to: str) -> Conflict:
    return Conflict(
        f"A {current} proposal cannot become {to}.",
        code="invalid_transition",
        details={"from": current, "to": to},
    )


def _transition(
    actor: Actor,
    proposal: SkillProposal,
    to: str,
    *,
    action: str,
    reason: str = "",
    fields: dict[str, Any] | None = None,
) -> SkillProposal:
    """Move ``proposal`` to ``to`` if the machine allows it from its stored status (inside the
    caller's transaction, if any): a conditional UPDATE, then the audit event."""
    if to not in TRANSITIONS[proposal.status]:
        raise _invalid(proposal.status, to)
    written = {"status": to, "updated_at": timezone.now(), **(fields or {})}
    updated = SkillProposal.objects.filter(pk=proposal.pk, status=proposal.status).update(**written)
    if not updated:
        current = SkillProposal.objects.filter(pk=proposal.pk).values_list("status", flat=True)
        raise _invalid(current.first() or proposal.status, to)
    audit_record(
        actor=actor,
        action=action,
        account_id=proposal.account_id,
        target=proposal,
        changes={"from": proposal.status, "to": to, "reason": reason},
    )
    proposal.refresh_from_db()
    return proposal


def _dependency_names(name: str, dependencies: Sequence[str]) -> list[str]:
    kept: list[str] = []
    seen = {name.strip().lower()}
    for dependency in dependencies:
        dependency = dependency.strip()
        if not dependency:
            continue
        catalog.name_check(dependency)  # refuses names without a letter or digit
        if dependency.lower() == name.strip().lower():
            raise ValidationFailed("A skill cannot depend on itself.", code="dependency_cycle")
        if dependency.lower() not in seen:
            seen.add(dependency.lower())
            kept.append(dependency)
    if len(kept) > MAX_DEPENDENCIES:
        raise ValidationFailed(
            f"At most {MAX_DEPENDENCIES} dependencies.", code="too_many_dependencies"
        )
    return kept


def _open_proposal_named(account_id: int, name: str) -> SkillProposal | None:
    return (
        SkillProposal.objects.filter(account_id=account_id, status__in=SkillProposal.OPEN_STATUSES)
        .annotate(lname=Lower("name"))
        .filter(lname=name.strip().lower())
        .first()
    )


def _proposer(actor: Actor) -> dict[str, Any]:
    return {
        "proposed_by_agent_id": actor.agent_id,
        "proposed_by_user_id": actor.user_id,
        "proposed_by": str(actor)[:300],
    }


def research_and_propose(
    *,
    actor: Actor,
    name: str,
    description: str = "",
    category: str | None = None,
    dependencies: Sequence[str] = (),
    tags: Sequence[str] = (),
    execution_context: dict[str, Any] | None = None,
    submit: bool = False,
    account_id: int | None = None,
) -> SkillProposal:
    """Research the topic (``research``), infer the category and a confidence unless one is
    given, draft the procedure (the LLM, or offline), and write the proposal: a draft, or
    submitted with ``submit``. 409 ``skill_exists`` when the account has a skill of that name,
    ``proposal_exists`` when an open proposal has it."""
    account_id = actor.account_id if account_id is None else account_id
    actor.require(account_id, READ)
    name, _ = catalog.name_check(name)
    if category is not None:
        catalog.category_check(category)
    dependencies = _dependency_names(name, dependencies)
    tags = catalog.tags_clean(tags)
    if catalog.name_in_use(account_id, name):
        raise Conflict("A skill of this name exists in the account.", code="skill_exists")
    if _open_proposal_named(account_id, name) is not None:
        raise proposal_exists()
    found = research(actor=actor, account_id=account_id, name=name, description=description)
    if category is None:
        category, confidence = category_infer(
            name=name, description=description, related=found.skills
        )
    else:
        confidence = 1.0
    procedure, drafted_by = draft_procedure(
        name=name, description=description, dependencies=dependencies, found=found
    )
    now = timezone.now()
    proposal = SkillProposal(
        account_id=account_id,
        name=name,
        description=description,
        category=category,
        confidence=confidence,
        procedure=procedure,
        tags=tags,
        execution_context=dict(execution_context or {}),
        dependencies=dependencies,
        research=found.as_json(),
        drafted_by=drafted_by,
        status=Status.SUBMITTED if submit else Status.DRAFT,
        submitted_at=now if submit else None,
        expires_at=now + PROPOSAL_TTL,
        **_proposer(actor),
    )
    try:
        with transaction.atomic():
            proposal.save(force_insert=True)
            audit_record(
                actor=actor,
                action="skills.proposal.create",
                account_id=account_id,
                target=proposal,
                changes={
                    "name": name,
                    "category": category,
                    "confidence": confidence,
                    "status": proposal.status,
                    "dependencies": dependencies,
                },
            )
    except IntegrityError as exc:
        if "skill_proposal_one_open" in str(exc):
            raise proposal_exists() from exc
        raise
    return proposal


def proposal_submit(*, actor: Actor, proposal: SkillProposal) -> SkillProposal:
    """draft -> submitted: into the reviewers' queue, expiring ``PROPOSAL_TTL`` from now."""
    actor.require(proposal.account_id, READ)
    now = timezone.now()
    return _transition(
        actor,
        proposal,
        Status.SUBMITTED,
        action="skills.proposal.submit",
        fields={"submitted_at": now, "expires_at": now + PROPOSAL_TTL},
    )


def proposal_review_start(*, actor: Actor, proposal: SkillProposal) -> SkillProposal:
    """submitted -> under_review, by the reviewer taking it."""
    require_reviewer(actor, proposal.account_id)
    return _transition(
        actor,
        proposal,
        Status.UNDER_REVIEW,
        action="skills.proposal.review",
        fields={"reviewer_id": actor.user_id},
    )


def _decision_fields(actor: Actor, reason: str) -> dict[str, Any]:
    return {"reviewer_id": actor.user_id, "reviewed_at": timezone.now(), "decision_reason": reason}


@dataclass(frozen=True)
class Approval:
    proposal: SkillProposal
    sub_proposals: list[SkillProposal]


def proposal_approve(*, actor: Actor, proposal: SkillProposal, reason: str = "") -> Approval:
    """submitted | under_review -> approved. Each dependency that is neither a skill nor an open
    proposal of the account becomes a sub-proposal (submitted, its category inferred from its
    name), in the same transaction."""
    require_reviewer(actor, proposal.account_id)
    reason = reason.strip()[:MAX_REASON_CHARS]
    with transaction.atomic():
        approved = _transition(
            actor,
            proposal,
            Status.APPROVED,
            action="skills.proposal.approve",
            reason=reason,
            fields=_decision_fields(actor, reason),
        )
        subs = []
        for dependency in approved.dependencies:
            sub = dependency_proposal_open(
                actor=actor,
                account_id=approved.account_id,
                name=dependency,
                description=f"A dependency of the approved skill {approved.name!r}.",
                parent=approved,
            )
            if sub is not None:
                subs.append(sub)
    return Approval(proposal=approved, sub_proposals=subs)


def dependency_proposal_open(
    *,
    actor: Actor,
    account_id: int,
    name: str,
    description: str,
    parent: SkillProposal | None = None,
) -> SkillProposal | None:
    """A submitted proposal for a skill something needs (an approved proposal's dependency, a
    missing dependency found by the conflict scan, a gap), unless a skill or an open proposal
    of that name exists (None then). No search or LLM: its category is inferred from its name,
    its procedure is the offline draft. Inside the caller's transaction."""
    if catalog.name_in_use(account_id, name) or _open_proposal_named(account_id, name):
        return None
    category, confidence = category_infer(name=name, description=description, related=[])
    now = timezone.now()
    sub = SkillProposal.objects.create(
        account_id=account_id,
        name=name,
        description=description,
        category=category,
        confidence=confidence,
        procedure=offline_procedure(
            name=name, description=description, dependencies=[], found=Research([], [], [])
        ),
        status=Status.SUBMITTED,
        submitted_at=now,
        expires_at=now + PROPOSAL_TTL,
        parent=parent,
        drafted_by="offline",
        **_proposer(actor),
    )
    audit_record(
        actor=actor,
        action="skills.proposal.create",
        account_id=account_id,
        target=sub,
        changes={
            "name": name,
            "parent": parent.pk if parent is not None else None,
            "status": sub.status,
        },
    )
    return sub


def proposal_reject(*, actor: Actor, proposal: SkillProposal, reason: str) -> SkillProposal:
    """submitted | under_review -> rejected, with the reason (400 ``reason_required``)."""
    require_reviewer(actor, proposal.account_id)
    reason = reason.strip()
    if not reason:
        raise ValidationFailed("Say why the proposal is rejected.", code="reason_required")
    return _transition(
        actor,
        proposal,
        Status.REJECTED,
        action="skills.proposal.reject",
        reason=reason[:MAX_REASON_CHARS],
        fields=_decision_fields(actor, reason[:MAX_REASON_CHARS]),
    )


def proposal_create_skill(*, actor: Actor, proposal: SkillProposal) -> Skill:
    """approved -> created: the skill (active), its initial version, its graph node and its
    ``depends_on`` edges (to the dependencies that are skills, and to placeholder nodes for
    those still proposed, which their skills take over when created), in one transaction with
    the transition."""
    require_reviewer(actor, proposal.account_id)
    if Status.CREATED not in TRANSITIONS[proposal.status]:
        raise _invalid(proposal.status, Status.CREATED)
    existing = {
        s.name.lower(): s
        for s in Skill.objects.filter(account_id=proposal.account_id)
        .annotate(lname=Lower("name"))
        .filter(lname__in=[d.lower() for d in proposal.dependencies])
    }
    dependencies = [
        catalog.DependencyInput(existing[d.lower()].pk)
        for d in proposal.dependencies
        if d.lower() in existing
    ]
    missing = [d for d in proposal.dependencies if d.lower() not in existing]

    def created(skill: Skill) -> None:
        _transition(
            actor,
            proposal,
            Status.CREATED,
            action="skills.proposal.create_skill",
            fields={"skill_id": skill.pk},
        )

    try:
        return catalog.skill_create(
            actor=actor,
            account_id=proposal.account_id,
            name=proposal.name,
            category=proposal.category,
            description=proposal.description,
            status=Skill.Status.ACTIVE,
            execution_context=proposal.execution_context,
            procedure=proposal.procedure,
            tags=proposal.tags,
            dependencies=dependencies,
            graph_placeholders=missing,
            audit_changes={"proposal": proposal.pk},
            within=created,
        )
    except Conflict as exc:
        if exc.code == "skill_name_taken":
            raise Conflict(
                "A skill of this name exists in the account.", code="skill_exists"
            ) from exc
        raise


def proposals_expire(*, now: datetime | None = None, dry_run: bool = False) -> dict[str, int]:
    """Expire the drafts and unreviewed proposals whose time is up (the hourly job): each
    account's in one statement, audited as the system acting on that account."""
    now = now or timezone.now()
    overdue = SkillProposal.objects.filter(
        status__in=(Status.DRAFT, Status.SUBMITTED, Status.UNDER_REVIEW), expires_at__lt=now
    )
    if dry_run:
        return {"expired": overdue.count()}
    expired = 0
    for account_id in sorted(set(overdue.values_list("account_id", flat=True))):
        with transaction.atomic():
            rows = list(
                overdue.filter(account_id=account_id)
                .select_for_update(skip_locked=True)
                .values_list("pk", "status")
            )
            if not rows:
                continue
            SkillProposal.objects.filter(pk__in=[pk for pk, _ in rows]).update(
                status=Status.EXPIRED, updated_at=now
            )
            system = actor_for_account(account_id)
            for pk, status in rows:
                audit_record(
                    actor=system,
                    action="skills.proposal.expire",
                    account_id=account_id,
                    target_type="skills.skillproposal",
                    target_id=pk,
                    changes={
                        "from": status,
                        "to": Status.EXPIRED,
                        "reason": "not reviewed in time",
                    },
                )
            expired += len(rows)
    return {"expired": expired}
