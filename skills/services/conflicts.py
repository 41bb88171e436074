"""The daily conflict scan, auto-repair and people's decisions on conflicts; detection itself
is ``skills.services.conflict_detection``.

Detection, per account and per type (docs/skills.md, "Conflicts"):

- overlap: two active skills whose embeddings' cosine similarity is at least 0.85 (low; medium
  from 0.90, high from 0.95), each skill compared with its nearest active neighbours (HNSW);
- contradiction: two similar active skills (0.60 or more) where one's procedure or description
  says always / must do something the other says never / do not / avoid doing (high);
- dependency: a ``depends_on`` edge to a node no skill holds, or to an archived skill (missing,
  high); a ``depends_on`` cycle (critical);
- version_mismatch: a dependency's version requirement its active versions do not meet (medium);
- naming: two skills that are not archived with near-duplicate names (the same analysed terms:
  medium; a name similarity ratio of 0.85 or more: low).

The scan keeps one open conflict per problem (its fingerprint: a partial unique index), updates
what it sees again, resolves what it no longer sees and never re-opens a dismissed problem.
Priority = severity weight (1 / 2 / 4 / 8) x (1 + log10(1 + uses of its skills in the last 30
days)) x (1 + min(days open, 30) / 30).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from core.actors import Actor, actor_for_account
from core.audit import audit_record
from core.errors import Conflict
from skills.models import Skill, SkillConflict, SkillUsage
from skills.roles import require_reviewer
from skills.services.conflict_detection import detect_all
from skills.tuning import TUNING

Type = SkillConflict.ConflictType
Status = SkillConflict.Status

# What a person may do with an open conflict.
TRANSITIONS: dict[str, frozenset[str]] = {
    Status.DETECTED: frozenset({Status.ACKNOWLEDGED, Status.RESOLVED, Status.DISMISSED}),
    Status.ACKNOWLEDGED: frozenset({Status.RESOLVED, Status.DISMISSED}),
    Status.RESOLVED: frozenset(),
    Status.DISMISSED: frozenset(),
}


# --- priority --------------------------------------------------------------------------------


def priority(*, severity: str, recent_uses: int, age_days: float) -> float:
    """weight x (1 + log10(1 + recent uses)) x (1 + min(age, 30) / 30)."""
    weight = SkillConflict.SEVERITY_WEIGHTS[severity]
    age = min(max(age_days, 0.0), TUNING.conflicts.priority_age_days)
    return round(
        weight * (1 + math.log10(1 + recent_uses)) * (1 + age / TUNING.conflicts.priority_age_days),
        6,
    )


def _recent_uses(account_id: int, now: datetime) -> dict[int, int]:
    return dict(
        SkillUsage.objects.filter(
            account_id=account_id,
            skill__isnull=False,
            occurred_at__gte=now - timedelta(days=TUNING.conflicts.priority_usage_days),
        )
        .values("skill_id")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("skill_id", "n")
    )


# --- the scan --------------------------------------------------------------------------------


def conflicts_scan(
    *, account_id: int, now: datetime | None = None, dry_run: bool = False
) -> dict[str, int]:
    """Detect every type, then in one transaction: open the new problems, refresh those seen
    again (severity, details, priority), resolve open ones no longer seen. Dismissed problems
    stay dismissed."""
    now = now or timezone.now()
    found = {d.fingerprint: d for d in detect_all(account_id)}
    uses = _recent_uses(account_id, now)
    system = actor_for_account(account_id)
    counts = {"detected": len(found), "opened": 0, "updated": 0, "resolved": 0}
    with transaction.atomic():
        dismissed = set(
            SkillConflict.objects.filter(
                account_id=account_id, status=Status.DISMISSED, fingerprint__in=list(found)
            ).values_list("fingerprint", flat=True)
        )
        open_ = {
            c.fingerprint: c
            for c in SkillConflict.objects.select_for_update().filter(
                account_id=account_id, status__in=SkillConflict.OPEN_STATUSES
            )
        }
        for fingerprint, detected in found.items():
            recent = uses.get(detected.skill_id, 0) + uses.get(detected.other_skill_id or 0, 0)
            existing = open_.get(fingerprint)
            if existing is not None:
                age = (now - existing.created_at).total_seconds() / 86_400
                counts["updated"] += 1
                if not dry_run:
                    SkillConflict.objects.filter(pk=existing.pk).update(
                        severity=detected.severity,
                        description=detected.description,
                        details=detected.details,
                        priority=priority(
                            severity=detected.severity, recent_uses=recent, age_days=age
                        ),
                        last_seen_at=now,
                        updated_at=now,
                    )
                continue
            if fingerprint in dismissed:
                continue
            counts["opened"] += 1
            if dry_run:
                continue
            conflict = SkillConflict.objects.create(
                account_id=account_id,
                conflict_type=detected.conflict_type,
                severity=detected.severity,
                skill_id=detected.skill_id,
                other_skill_id=detected.other_skill_id,
                fingerprint=fingerprint,
                description=detected.description,
                details=detected.details,
                priority=priority(severity=detected.severity, recent_uses=recent, age_days=0),
                last_seen_at=now,
                created_at=now,
            )
            audit_record(
                actor=system,
                action="skills.conflict.detect",
                account_id=account_id,
                target=conflict,
                changes={"type": conflict.conflict_type, "severity": conflict.severity},
            )
        for fingerprint, conflict in open_.items():
            if fingerprint in found:
                continue
            counts["resolved"] += 1
            if not dry_run:
                SkillConflict.objects.filter(pk=conflict.pk).update(
                    status=Status.RESOLVED,
                    resolved_at=now,
                    resolved_by="scan",
                    resolution="No longer detected.",
                    updated_at=now,
                )
                audit_record(
                    actor=system,
                    action="skills.conflict.resolve",
                    account_id=account_id,
                    target=conflict,
                    changes={"from": conflict.status, "to": Status.RESOLVED, "reason": "scan"},
                )
    return counts


def conflicts_auto_repair(*, account_id: int, dry_run: bool = False) -> dict[str, int]:
    """Repair the simple cases: a dependency on a skill that does not exist becomes a proposal
    (submitted, for reviewers), unless the skill or an open proposal of that name exists; the
    conflict is acknowledged and points to the proposal. The next scan resolves it once the
    skill is created."""
    from skills.services.proposals import dependency_proposal_open

    repaired = 0
    system = actor_for_account(account_id)
    for conflict in SkillConflict.objects.filter(
        account_id=account_id,
        status=Status.DETECTED,
        conflict_type=Type.DEPENDENCY,
        details__kind="missing",
    ).select_related("skill"):
        name = str(conflict.details.get("dependency", "")).strip()
        if not name:
            continue
        if dry_run:
            repaired += 1
            continue
        with transaction.atomic():
            proposal = dependency_proposal_open(
                actor=system,
                account_id=account_id,
                name=name,
                description=f"The skill {conflict.skill.name!r} depends on it (auto-repair of "
                f"conflict {conflict.pk}).",
            )
            updated = SkillConflict.objects.filter(pk=conflict.pk, status=Status.DETECTED).update(
                status=Status.ACKNOWLEDGED,
                acknowledged_at=timezone.now(),
                proposal=proposal,
                resolution="A proposal for the missing skill was opened."
                if proposal is not None
                else "A skill or an open proposal of that name exists.",
                updated_at=timezone.now(),
            )
            if updated:
                repaired += 1
                audit_record(
                    actor=system,
                    action="skills.conflict.repair",
                    account_id=account_id,
                    target=conflict,
                    changes={"proposal": proposal.pk if proposal is not None else None},
                )
    return {"repaired": repaired}


def conflict_transition(
    *, actor: Actor, conflict: SkillConflict, to: str, note: str = ""
) -> SkillConflict:
    """A person acknowledges, resolves or dismisses a conflict (``TRANSITIONS``; 409
    ``invalid_transition`` otherwise). A dismissed problem is never re-opened by the scan."""
    require_reviewer(actor, conflict.account_id)
    if to not in TRANSITIONS[conflict.status]:
        raise Conflict(
            f"A {conflict.status} conflict cannot become {to}.",
            code="invalid_transition",
            details={"from": conflict.status, "to": to},
        )
    now = timezone.now()
    fields: dict[str, Any] = {"status": to, "updated_at": now}
    if to == Status.ACKNOWLEDGED:
        fields["acknowledged_at"] = now
    else:
        fields.update(resolved_at=now, resolved_by=str(actor)[:300], resolution=note[:5000])
    with transaction.atomic():
        if not SkillConflict.objects.filter(pk=conflict.pk, status=conflict.status).update(
            **fields
        ):
            current = SkillConflict.objects.filter(pk=conflict.pk).values_list("status", flat=True)
            raise Conflict(
                "The conflict changed meanwhile: read it again.",
                code="invalid_transition",
                details={"from": current.first() or conflict.status, "to": to},
            )
        audit_record(
            actor=actor,
            action=f"skills.conflict.{to}",
            account_id=conflict.account_id,
            target=conflict,
            changes={"from": conflict.status, "to": to, "reason": note},
        )
    conflict.refresh_from_db()
    return conflict


def accounts_with_skills() -> Iterable[int]:
    return Skill.objects.values_list("account_id", flat=True).distinct().order_by("account_id")


def scan_all(*, dry_run: bool = False, accounts: Sequence[int] | None = None) -> dict[str, int]:
    """The daily job: scan and auto-repair every account with skills."""
    totals: dict[str, int] = defaultdict(int)
    for account_id in accounts if accounts is not None else list(accounts_with_skills()):
        for key, value in conflicts_scan(account_id=account_id, dry_run=dry_run).items():
            totals[key] += value
        for key, value in conflicts_auto_repair(account_id=account_id, dry_run=dry_run).items():
            totals[key] += value
        totals["accounts"] += 1
    return dict(totals)
