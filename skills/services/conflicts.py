"""Conflict detection, the daily scan, auto-repair and people's decisions on conflicts.

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
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from core.actors import Actor, actor_for_account
from core.audit import audit_record
from core.embeddings import get_embedding_provider
from core.errors import Conflict
from rag import graph
from rag.graph import DEPENDS_ON
from rag.keyword import analyze
from rag.models import GraphNode
from skills.models import Skill, SkillConflict, SkillUsage
from skills.roles import require_reviewer
from skills.selectors.catalog import active_versions, requirement_met
from skills.selectors.traversal import dependency_cycles
from skills.similarity import (
    NAME_SIMILARITY,
    OVERLAP_SIMILARITY,
    name_key,
    name_similarity,
    overlap_severity,
)

Type = SkillConflict.ConflictType
Status = SkillConflict.Status
NEIGHBOURS = 10
CONTRADICTION_SIMILARITY = 0.60
PRIORITY_USAGE_DAYS = 30
PRIORITY_AGE_DAYS = 30
_NEGATIVE = re.compile(
    r"\b(?:never|avoid|do not|don't|must not|mustn't|should not|shouldn't|no longer)\s+(\w+)"
)
_POSITIVE = re.compile(r"\b(?:always|must|should)\s+(?!not\b)(\w+)")

# What a person may do with an open conflict.
TRANSITIONS: dict[str, frozenset[str]] = {
    Status.DETECTED: frozenset({Status.ACKNOWLEDGED, Status.RESOLVED, Status.DISMISSED}),
    Status.ACKNOWLEDGED: frozenset({Status.RESOLVED, Status.DISMISSED}),
    Status.RESOLVED: frozenset(),
    Status.DISMISSED: frozenset(),
}


@dataclass
class Detected:
    conflict_type: str
    severity: str
    skill_id: int
    other_skill_id: int | None
    fingerprint: str
    description: str
    details: dict[str, Any] = field(default_factory=dict)


def _pair(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


# --- detection -------------------------------------------------------------------------------


def _neighbours(account_id: int, minimum: float) -> dict[tuple[int, int], float]:
    """Pairs of active skills (lower id first) whose cosine similarity is at least
    ``minimum``, each skill compared with its ``NEIGHBOURS`` nearest active skills."""
    model = get_embedding_provider().model_id
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(max(40, NEIGHBOURS))])
        cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        cursor.execute(
            """
            SELECT s.id, n.id, 1 - n.distance
            FROM skills_skill s
            CROSS JOIN LATERAL (
                SELECT t.id, t.embedding <=> s.embedding AS distance FROM skills_skill t
                WHERE t.account_id = s.account_id AND t.status = 'active' AND t.id <> s.id
                  AND t.embedding_model = %(model)s
                ORDER BY t.embedding <=> s.embedding
                LIMIT %(k)s
            ) n
            WHERE s.account_id = %(account)s AND s.status = 'active'
              AND s.embedding_model = %(model)s AND s.embedding IS NOT NULL
            """,
            {"account": account_id, "model": model, "k": NEIGHBOURS},
        )
        rows = cursor.fetchall()
    pairs: dict[tuple[int, int], float] = {}
    for a, b, similarity in rows:
        if similarity >= minimum:
            pairs[_pair(a, b)] = max(float(similarity), pairs.get(_pair(a, b), -1.0))
    return pairs


def directives(text: str) -> tuple[set[str], set[str]]:
    """(what the text says always / must do, what it says never / do not do), as analysed
    terms."""
    lowered = text.lower()
    positive = {t for word in _POSITIVE.findall(lowered) for t in analyze(word)}
    negative = {t for word in _NEGATIVE.findall(lowered) for t in analyze(word)}
    return positive, negative


def detect_overlap_and_contradiction(account_id: int) -> list[Detected]:
    pairs = _neighbours(account_id, min(OVERLAP_SIMILARITY, CONTRADICTION_SIMILARITY))
    if not pairs:
        return []
    ids = {i for pair in pairs for i in pair}
    skills = (
        Skill.objects.filter(pk__in=ids).only("pk", "name", "procedure", "description").in_bulk()
    )
    said = {pk: directives(f"{s.description}\n{s.procedure}") for pk, s in skills.items()}
    found = []
    for (a, b), similarity in sorted(pairs.items()):
        if a not in skills or b not in skills:
            continue
        if similarity >= OVERLAP_SIMILARITY:
            found.append(
                Detected(
                    Type.OVERLAP,
                    overlap_severity(similarity),
                    a,
                    b,
                    f"overlap:{a}:{b}",
                    f"{skills[a].name!r} and {skills[b].name!r} overlap "
                    f"(similarity {similarity:.2f}).",
                    {"similarity": round(similarity, 4)},
                )
            )
        (pos_a, neg_a), (pos_b, neg_b) = said[a], said[b]
        clash = sorted((pos_a & neg_b) | (pos_b & neg_a))
        if clash:
            found.append(
                Detected(
                    Type.CONTRADICTION,
                    SkillConflict.Severity.HIGH,
                    a,
                    b,
                    f"contradiction:{a}:{b}",
                    f"{skills[a].name!r} and {skills[b].name!r} contradict each other about "
                    f"{', '.join(clash)}.",
                    {"terms": clash, "similarity": round(similarity, 4)},
                )
            )
    return found


def detect_dependencies(account_id: int) -> list[Detected]:
    """Missing dependencies (a node no skill holds, or an archived skill), version mismatches
    and cycles."""
    edges = list(
        graph.relation_edges(relation_type=DEPENDS_ON, account_id=account_id).values_list(
            "source_id", "target_id", "metadata"
        )
    )
    nodes = {
        s.graph_node_id: s for s in Skill.objects.filter(account_id=account_id).defer("embedding")
    }
    names = dict(
        GraphNode.objects.filter(pk__in={t for _, t, _ in edges}).values_list("pk", "name")
    )
    versions = active_versions([s.pk for s in nodes.values()])
    found = []
    for source, target, metadata in edges:
        skill = nodes.get(source)
        if skill is None or skill.status == Skill.Status.ARCHIVED:
            continue  # only live skills' dependencies matter
        dependency = nodes.get(target)
        name = names.get(target, "")
        if dependency is None or dependency.status == Skill.Status.ARCHIVED:
            state = "archived" if dependency is not None else "missing"
            found.append(
                Detected(
                    Type.DEPENDENCY,
                    SkillConflict.Severity.HIGH,
                    skill.pk,
                    dependency.pk if dependency is not None else None,
                    f"dependency:missing:{skill.pk}:{target}",
                    f"{skill.name!r} depends on {name!r}, which is {state}.",
                    {"kind": state, "dependency": name, "node_id": target},
                )
            )
            continue
        requirement = str(metadata.get("version", "")) if isinstance(metadata, dict) else ""
        if requirement_met(requirement, versions.get(dependency.pk, [])) is False:
            found.append(
                Detected(
                    Type.VERSION_MISMATCH,
                    SkillConflict.Severity.MEDIUM,
                    skill.pk,
                    dependency.pk,
                    f"version_mismatch:{skill.pk}:{dependency.pk}:{requirement}",
                    f"{skill.name!r} needs {dependency.name!r} {requirement}; its active "
                    "versions do not meet it.",
                    {
                        "requirement": requirement,
                        "active_versions": [v.version for v in versions.get(dependency.pk, [])],
                    },
                )
            )
    for cycle in dependency_cycles(account_id):
        members = [nodes[n] for n in cycle if n in nodes]
        if not members:
            continue
        found.append(
            Detected(
                Type.DEPENDENCY,
                SkillConflict.Severity.CRITICAL,
                members[0].pk,
                members[1].pk if len(members) > 1 else None,
                "dependency:cycle:" + ":".join(str(n) for n in sorted(cycle))[:250],
                "A dependency cycle: "
                + " -> ".join(names.get(n, str(n)) for n in [*cycle, cycle[0]])
                + ".",
                {"kind": "cycle", "node_ids": cycle, "skill_ids": [m.pk for m in members]},
            )
        )
    return found


def _block(name: str) -> str:
    letters = re.sub(r"[^a-z0-9]", "", name.lower())
    return letters[:3]


def detect_naming(account_id: int) -> list[Detected]:
    """Near-duplicate names among skills that are not archived: compared within blocks of the
    same first three letters and digits, and by their analysed terms."""
    skills = list(
        Skill.objects.filter(account_id=account_id)
        .exclude(status=Skill.Status.ARCHIVED)
        .values_list("pk", "name")
    )
    pairs: dict[tuple[int, int], float] = {}
    by_key: dict[str, list[int]] = defaultdict(list)
    by_block: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for pk, name in skills:
        by_key[name_key(name)].append(pk)
        by_block[_block(name)].append((pk, name))
    for members in by_key.values():
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                pairs[_pair(a, b)] = 1.0
    for block in by_block.values():
        for i, (a, name_a) in enumerate(block):
            for b, name_b in block[i + 1 :]:
                if _pair(a, b) in pairs:
                    continue
                similarity = name_similarity(name_a, name_b)
                if similarity >= NAME_SIMILARITY:
                    pairs[_pair(a, b)] = similarity
    names = dict(skills)
    return [
        Detected(
            Type.NAMING,
            SkillConflict.Severity.MEDIUM if similarity == 1.0 else SkillConflict.Severity.LOW,
            a,
            b,
            f"naming:{a}:{b}",
            f"{names[a]!r} and {names[b]!r} are near-duplicate names.",
            {"similarity": round(similarity, 4)},
        )
        for (a, b), similarity in sorted(pairs.items())
    ]


def detect_all(account_id: int) -> list[Detected]:
    return [
        *detect_overlap_and_contradiction(account_id),
        *detect_dependencies(account_id),
        *detect_naming(account_id),
    ]


# --- priority --------------------------------------------------------------------------------


def priority(*, severity: str, recent_uses: int, age_days: float) -> float:
    """weight x (1 + log10(1 + recent uses)) x (1 + min(age, 30) / 30)."""
    weight = SkillConflict.SEVERITY_WEIGHTS[severity]
    age = min(max(age_days, 0.0), PRIORITY_AGE_DAYS)
    return round(weight * (1 + math.log10(1 + recent_uses)) * (1 + age / PRIORITY_AGE_DAYS), 6)


def _recent_uses(account_id: int, now: datetime) -> dict[int, int]:
    return dict(
        SkillUsage.objects.filter(
            account_id=account_id,
            skill__isnull=False,
            occurred_at__gte=now - timedelta(days=PRIORITY_USAGE_DAYS),
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
