"""Conflict detection, per account and per type (docs/skills.md, "Conflicts"): overlap and
contradiction between similar active skills, dependency problems (missing, archived, cycles,
version mismatches) and near-duplicate names. Reads only; ``skills.services.conflicts`` records
what it finds."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction

from core.embeddings import get_embedding_provider
from rag.graph import selectors as graph
from rag.graph.selectors import DEPENDS_ON
from rag.keyword import analyze
from skills.models import Skill, SkillConflict
from skills.selectors.catalog import active_versions, requirement_met
from skills.selectors.traversal import dependency_cycles
from skills.similarity import (
    name_key,
    name_similarity,
    overlap_severity,
)
from skills.tuning import TUNING

Type = SkillConflict.ConflictType
_NEGATIVE = re.compile(
    r"\b(?:never|avoid|do not|don't|must not|mustn't|should not|shouldn't|no longer)\s+(\w+)"
)
_POSITIVE = re.compile(r"\b(?:always|must|should)\s+(?!not\b)(\w+)")


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
    ``minimum``, each skill compared with its ``TUNING.conflicts.neighbours`` nearest active
    skills."""
    model = get_embedding_provider().model_id
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.ef_search', %s, true)",
            [str(max(40, TUNING.conflicts.neighbours))],
        )
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
            {"account": account_id, "model": model, "k": TUNING.conflicts.neighbours},
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
    pairs = _neighbours(
        account_id,
        min(TUNING.conflicts.overlap_similarity, TUNING.conflicts.contradiction_similarity),
    )
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
        if similarity >= TUNING.conflicts.overlap_similarity:
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
    names = graph.node_names(t for _, t, _ in edges)
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
                if similarity >= TUNING.conflicts.name_similarity:
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
