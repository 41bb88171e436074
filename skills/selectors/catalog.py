"""Skill reads: lists by category and status, one skill, discovery (hybrid search through the
one engine), dependencies and dependents through the knowledge graph, A/B routing between active
versions, and a skill's context (active version, dependencies, relevant documents and pages)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db.models import F, Q, QuerySet

from core.actors import Actor
from core.errors import NotFound, ValidationFailed
from core.search import TimedHits
from rag import selectors as rag_selectors
from rag.graph import selectors as graph
from rag.graph.selectors import DEPENDS_ON
from rag.search import (
    DEFAULT_FUSION,
    SearchFilters,
    SearchHit,
    chunk_search,
    search_options_validate,
    space_rank,
    stage_depth,
)
from skills.models import Skill, SkillScope, SkillVersion
from skills.selectors.traversal import ChainLink, dependency_chain
from skills.semver import Version, requirement_parse, version_parse
from skills.spaces import SKILLS
from skills.tuning import TUNING

if TYPE_CHECKING:
    from rag.graph.models import GraphNode

PAGE_ENTITY_TYPES = ("page", "article")
QUERY_CHARS = 1000


def skill_not_found() -> NotFound:
    return NotFound("No such skill.", code="skill_not_found")


def skill_list(
    *, actor: Actor, category: str | None = None, status: str | None = None
) -> QuerySet[Skill]:
    """The actor's skills (newest first), optionally of one category and one status."""
    skills = Skill.objects.for_actor(actor).defer("embedding")
    if category:
        skills = skills.filter(category=category)
    if status:
        skills = skills.filter(status=status)
    return skills


def skill_get(*, actor: Actor, skill_id: int) -> Skill:
    """A skill of the actor's accounts; 404 ``skill_not_found`` for a missing or foreign one."""
    skill = Skill.objects.for_actor(actor).defer("embedding").filter(pk=skill_id).first()
    if skill is None:
        raise skill_not_found()
    return skill


# --- discovery -------------------------------------------------------------------------------


@dataclass
class SkillHit:
    skill: Skill
    score: float
    retrieval: dict[str, Any] = field(default_factory=dict)


def skill_discover(
    *,
    actor: Actor,
    description: str,
    top_k: int = 10,
    mode: str = "hybrid",
    fusion: str = DEFAULT_FUSION,
    category: str | None = None,
    statuses: Sequence[str] = (Skill.Status.ACTIVE,),
    account_ids: Sequence[int] | None = None,
    exclude_ids: Sequence[int] = (),
    query_vector: np.ndarray | None = None,
) -> TimedHits[SkillHit]:
    """The skills that best match ``description`` (name, category, description, tags and the
    start of the procedure), best first, each with its rank and score in each stage
    (``query_vector``: the description's embedding, when the caller has it)."""
    search_options_validate(query=description, mode=mode, fusion=fusion, top_k=top_k)
    accounts = (
        set(actor.account_ids) if account_ids is None else set(actor.account_ids) & set(account_ids)
    )
    scope_ids = list(
        SkillScope.objects.filter(account_id__in=accounts).values_list("pk", flat=True)
    )
    if not scope_ids:
        return TimedHits()
    conditions: list[str] = []
    params: dict[str, Any] = {}
    if statuses:
        conditions.append("u.status = ANY(%(f_statuses)s)")
        params["f_statuses"] = list(statuses)
    if category:
        conditions.append("u.category = %(f_category)s")
        params["f_category"] = category
    if exclude_ids:
        conditions.append("NOT (u.id = ANY(%(f_exclude)s))")
        params["f_exclude"] = list(exclude_ids)
    ranking = space_rank(
        space=SKILLS,
        scope_ids=scope_ids,
        query=description,
        mode=mode,
        depth=stage_depth(top_k),
        fusion=fusion,
        filter_sql=" AND ".join(conditions),
        filter_params=params,
        query_vector=query_vector,
    )
    ranked = ranking.hits[:top_k]
    started = time.perf_counter()
    found = Skill.objects.defer("embedding").in_bulk([hit.unit_id for hit in ranked])
    hits = [
        SkillHit(
            skill=found[hit.unit_id],
            score=hit.score,
            retrieval=hit.stages(),
        )
        for hit in ranked
        if hit.unit_id in found
    ]
    timings = {**ranking.stage_ms, "hydrate": round((time.perf_counter() - started) * 1000, 3)}
    return TimedHits(hits, timings)


# --- dependencies ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Dependency:
    """A ``depends_on`` edge of a skill's node: the skill it names (None when no skill holds the
    target node yet: a missing dependency), the requirement on its version and whether its
    active versions meet it."""

    name: str
    node_id: int
    skill: Skill | None
    requirement: str
    satisfied: bool | None


def active_versions(skill_ids: Sequence[int]) -> dict[int, list[SkillVersion]]:
    found: dict[int, list[SkillVersion]] = {}
    for version in SkillVersion.objects.filter(
        skill_id__in=list(skill_ids), is_active=True
    ).order_by("skill_id", "id"):
        found.setdefault(version.skill_id, []).append(version)
    return found


def requirement_met(requirement: str, versions: Sequence[SkillVersion]) -> bool | None:
    """Whether every active version meets ``requirement`` (None: no requirement, or no active
    version to judge)."""
    if not requirement or not versions:
        return None
    try:
        wanted = requirement_parse(requirement)
        parsed: list[Version] = [version_parse(v.version) for v in versions]
    except ValidationFailed:
        return False
    return all(wanted.allows(v) for v in parsed)


def skill_dependencies(skill: Skill) -> list[Dependency]:
    """The skills ``skill`` depends on directly, by name."""
    if skill.graph_node_id is None:
        return []
    edges = list(
        graph.relation_edges(relation_type=DEPENDS_ON, source_ids=[skill.graph_node_id])
        .select_related("target")
        .order_by("target__name", "id")
    )
    by_node = {
        s.graph_node_id: s
        for s in Skill.objects.defer("embedding").filter(
            graph_node_id__in=[e.target_id for e in edges]
        )
    }
    versions = active_versions([s.pk for s in by_node.values()])
    found = []
    for edge in edges:
        target = by_node.get(edge.target_id)
        requirement = (
            str(edge.metadata.get("version", "")) if isinstance(edge.metadata, dict) else ""
        )
        found.append(
            Dependency(
                name=edge.target.name,
                node_id=edge.target_id,
                skill=target,
                requirement=requirement,
                satisfied=requirement_met(requirement, versions.get(target.pk, []))
                if target is not None
                else None,
            )
        )
    return found


def skill_dependents(skill: Skill) -> list[Skill]:
    """The skills that depend on ``skill`` directly."""
    if skill.graph_node_id is None:
        return []
    sources = graph.relation_edges(
        relation_type=DEPENDS_ON, target_ids=[skill.graph_node_id]
    ).values("source_id")
    return list(
        Skill.objects.defer("embedding").filter(graph_node_id__in=sources).order_by("name", "id")
    )


# --- A/B routing -----------------------------------------------------------------------------


def route_point(skill_id: int, key: str) -> float:
    """A point in [0, 1) fixed by the skill and the routing key (a uniform hash)."""
    digest = hashlib.sha256(f"{skill_id}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def version_route(skill_id: int, versions: Sequence[SkillVersion], key: str) -> SkillVersion | None:
    """The active version a routing key is sent to: the active versions in id order cover
    [0, 1) in proportion to their traffic shares, and the key's ``route_point`` falls in one.
    The same key always gets the same variant while the shares stay the same."""
    active = sorted((v for v in versions if v.is_active), key=lambda v: v.pk)
    if not active:
        return None
    point = route_point(skill_id, key)
    total = sum(v.traffic_share for v in active) or 1.0
    reached = 0.0
    for version in active:
        reached += version.traffic_share / total
        if point < reached:
            return version
    return active[-1]


def routing_key(actor: Actor, key: str | None = None) -> str:
    """Sticky per agent unless the caller names a key (a task id, a session)."""
    if key:
        return f"key:{key}"
    return f"agent:{actor.agent_id}" if actor.agent_id is not None else "anonymous"


# --- context ---------------------------------------------------------------------------------


@dataclass
class SkillContext:
    skill: Skill
    version: SkillVersion | None
    variants: list[SkillVersion]
    dependencies: list[Dependency]
    chain: list[ChainLink]
    dependents: list[Skill]
    documents: list[SearchHit]
    pages: list[graph.NodeHit]


def skill_context(*, actor: Actor, skill: Skill, key: str | None = None) -> SkillContext:
    """What an agent needs to run ``skill``: the version routed to it, the skills it depends on
    (and that depend on it), and the account's documents and pages most relevant to it."""
    variants = list(SkillVersion.objects.filter(skill=skill, is_active=True).order_by("id"))
    version = version_route(skill.pk, variants, routing_key(actor, key))
    query = f"{skill.name}\n{skill.description}"[:QUERY_CHARS]
    kb_ids = rag_selectors.knowledge_base_ids_unarchived(account_id=skill.account_id)
    documents: list[SearchHit] = []
    if kb_ids:
        documents = chunk_search(
            actor=actor,
            query=query,
            top_k=TUNING.context.context_documents,
            filters=SearchFilters(knowledge_base_ids=tuple(kb_ids)),
        ).hits
    pages = graph.node_search(
        actor=actor,
        query=query,
        top_k=TUNING.context.context_pages,
        entity_types=PAGE_ENTITY_TYPES,
        account_ids=[skill.account_id],
    )
    return SkillContext(
        skill=skill,
        version=version,
        variants=variants,
        dependencies=skill_dependencies(skill),
        chain=dependency_chain(skill),
        dependents=skill_dependents(skill),
        documents=documents,
        pages=pages,
    )


def nodes_of(skills: Sequence[Skill]) -> dict[int, GraphNode]:
    return graph.nodes_by_id(s.graph_node_id for s in skills)


def skills_unused(*, account_id: int, before: Any, limit: int) -> tuple[list[Skill], int]:
    """The account's draft and active skills nobody used since ``before`` (never used, or last
    used earlier) that existed then, least recently used first, at most ``limit``, and how many
    there are (rot: docs/memory/rot.md)."""
    unused = (
        Skill.objects.filter(
            account_id=account_id,
            created_at__lt=before,
            status__in=(Skill.Status.DRAFT, Skill.Status.ACTIVE),
        )
        .filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=before))
        .only("id", "name", "status", "last_used_at", "usage_count", "created_at", "account_id")
    )
    ordered = unused.order_by(F("last_used_at").asc(nulls_first=True), "pk")
    return list(ordered[:limit]), unused.count()
