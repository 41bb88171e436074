"""A skill's derived data, kept inside the skill's own write transaction: its BM25 postings and
embedding in the ``skills`` search space (under the account's ``SkillScope`` row lock), its
node in the knowledge graph (entity type ``skill``, named like the skill) and its ``depends_on``
edges. A dependency that would close a cycle is refused (400 ``dependency_cycle``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from core.actors import Actor
from core.embeddings import generations, get_embedding_provider
from core.errors import Conflict, ValidationFailed
from rag import keyword
from rag.graph import selectors as graph
from rag.graph import services as graph_services
from rag.graph.selectors import DEPENDS_ON, NodeStatus, NodeType
from rag.spaces import graph_node_text
from skills.models import Skill, SkillScope
from skills.spaces import SKILLS, skill_text, text_checksum

if TYPE_CHECKING:
    from rag.graph.models import GraphNode

SKILL_ENTITY_TYPE = "skill"


def _name_taken() -> Conflict:
    return Conflict("A skill with this name exists in the account.", code="skill_name_taken")


@dataclass(frozen=True)
class _Dependency:
    skill: Skill
    requirement: str


# --- the search index ------------------------------------------------------------------------


def scope_locked(account_id: int) -> SkillScope:
    """The account's skill scope, created on first use, locked (inside a transaction)."""
    SkillScope.objects.get_or_create(account_id=account_id)
    return SkillScope.objects.select_for_update().get(account_id=account_id)


def skill_embedding_text(skill: Skill) -> str:
    """What a skill is embedded and keyword-indexed as."""
    return skill_text(
        name=skill.name,
        category=skill.category,
        description=skill.description,
        tags=skill.tags,
        procedure=skill.procedure,
    )


@dataclass(frozen=True)
class Embedded:
    """A skill's text and vector, and its graph node's vector, computed outside transactions."""

    text: str
    vector: np.ndarray
    node_vector: np.ndarray
    model: str


def embed_skill(skill: Skill) -> Embedded:
    """Embed the skill's text and its node's text in one provider call (never in a
    transaction)."""
    text = skill_embedding_text(skill)
    provider = get_embedding_provider()
    vectors = provider.embed_documents(
        [text, graph_node_text(name=skill.name, aliases=[], description=skill.description)]
    )
    return Embedded(
        text=text,
        vector=np.asarray(vectors[0]),
        node_vector=np.asarray(vectors[1]),
        model=provider.model_id,
    )


def index_skill(scope: SkillScope, skill: Skill, embedded: Embedded | None, *, new: bool) -> None:
    """Under the scope's lock: (re-)index ``skill`` as it is in ``skill`` (saved already)."""
    removed_units, removed_terms = (0, 0)
    if not new:
        removed_units, removed_terms = keyword.postings_forget(
            space=SKILLS, scope_id=scope.pk, unit_ids=[skill.pk], delete=True
        )
    text = embedded.text if embedded is not None else skill_embedding_text(skill)
    terms = keyword.chunk_terms(text)
    count = scope.skill_count - removed_units + 1
    total = scope.total_terms - removed_terms + terms.length
    keyword.postings_add(
        space=SKILLS,
        scope_id=scope.pk,
        units=[keyword.IndexedUnit(unit_id=skill.pk, terms=terms)],
        avg_length=total / count,
    )
    written: dict[str, Any] = {"keyword_length": terms.length}
    if embedded is not None:
        written.update(
            embedding=embedded.vector,
            embedding_model=embedded.model,
            embedding_checksum=text_checksum(text),
        )
    Skill.objects.filter(pk=skill.pk).update(**written)
    if embedded is not None:
        generations.written("skills", [skill.pk])
    SkillScope.objects.filter(pk=scope.pk).update(skill_count=count, total_terms=total)
    scope.skill_count, scope.total_terms = count, total


# --- the knowledge graph ---------------------------------------------------------------------


def node_for(actor: Actor, skill: Skill, embedded: Embedded) -> GraphNode:
    """Create the skill's graph node, or take over a node of that name (case-insensitive) no
    skill holds (a placeholder a missing dependency left), and link the skill to it."""

    def adoptable(found: GraphNode) -> bool:
        if Skill.objects.filter(graph_node_id=found.pk).exclude(pk=skill.pk).exists():
            raise _name_taken()
        return True

    node = graph_services.node_ensure(
        actor=actor,
        account_id=skill.account_id,
        name=skill.name,
        entity_type=SKILL_ENTITY_TYPE,
        fields={
            "name": skill.name,
            "description": skill.description,
            "node_type": NodeType.SKILL,
            "status": NodeStatus.ACTIVE,
            "metadata": {"skill_id": skill.pk, "category": skill.category},
        },
        embedding=embedded.node_vector,
        adoptable=adoptable,
    ).node
    Skill.objects.filter(pk=skill.pk).update(graph_node=node)
    skill.graph_node = node
    return node


def placeholder_node(actor: Actor, account_id: int, name: str) -> GraphNode:
    """The graph node a dependency on a skill that does not exist yet points to (found by
    conflict detection as a missing dependency; the skill takes it over when created)."""
    return graph_services.node_ensure(
        actor=actor,
        account_id=account_id,
        name=name,
        entity_type=SKILL_ENTITY_TYPE,
        initial={
            "node_type": NodeType.SKILL,
            "description": "A skill other skills depend on that does not exist yet.",
            "metadata": {"placeholder": True},
        },
    ).node


def reaches(account_id: int, sources: Sequence[int], target: int) -> bool:
    """Does a ``depends_on`` walk from any of ``sources`` reach ``target`` (node ids)?"""
    return graph.reaches(
        account_id=account_id,
        sources=sources,
        target=target,
        relation_types=[DEPENDS_ON],
        direction=graph.OUT,
    )


def _cycle() -> ValidationFailed:
    return ValidationFailed(
        "This dependency would make the skill depend on itself (a cycle).",
        code="dependency_cycle",
    )


def dependencies_set(actor: Actor, skill: Skill, dependencies: Sequence[_Dependency]) -> None:
    """Make the skill's ``depends_on`` edges exactly ``dependencies`` (inside a transaction)."""
    node = graph.node_by_id(skill.graph_node_id)
    if node is None:
        raise Conflict(
            f"The skill {skill.name!r} has no graph node; the weekly upkeep restores it.",
            code="skill_not_in_graph",
        )
    targets: dict[int, _Dependency] = {}
    for dependency in dependencies:
        target = dependency.skill.graph_node_id
        if target is None:
            raise Conflict(
                f"The skill {dependency.skill.name!r} has no graph node; the weekly upkeep "
                "restores it.",
                code="skill_not_in_graph",
            )
        targets[target] = dependency
    if reaches(skill.account_id, list(targets), node.pk):
        raise _cycle()
    existing = {
        edge.target_id: edge
        for edge in graph.relation_edges(relation_type=DEPENDS_ON, source_ids=[node.pk])
    }
    for target, edge in existing.items():
        wanted = targets.get(target)
        if wanted is None or edge.metadata.get("version", "") != wanted.requirement:
            graph_services.edge_delete(actor=actor, edge=edge)
    for target, dependency in targets.items():
        kept = existing.get(target)
        if kept is not None and kept.metadata.get("version", "") == dependency.requirement:
            continue
        graph_services.edge_create(
            actor=actor,
            account_id=skill.account_id,
            source_id=node.pk,
            target_id=target,
            relation_type=DEPENDS_ON,
            metadata={"version": dependency.requirement} if dependency.requirement else {},
        )


# --- skills ----------------------------------------------------------------------------------


def _node_follow(
    actor: Actor, skill: Skill, changes: Mapping[str, Any], embedded: Embedded | None
) -> None:
    """The skill's graph node follows its name, description and status (archived skills'
    nodes are archived); a skill whose node was deleted gets a new one when re-embedded."""
    node = graph.node_by_id(skill.graph_node_id)
    if node is None:
        if embedded is not None:
            node_for(actor, skill, embedded)
        return
    fields: dict[str, Any] = {}
    if "name" in changes:
        fields["name"] = skill.name
    if "description" in changes:
        fields["description"] = skill.description
    if "status" in changes:
        archived = skill.status == Skill.Status.ARCHIVED
        fields["status"] = NodeStatus.ARCHIVED if archived else NodeStatus.ACTIVE
    if "category" in changes:
        fields["metadata"] = {**node.metadata, "category": skill.category}
    if fields:
        graph_services.node_update(
            actor=actor,
            node=node,
            fields=fields,
            embedding=embedded.node_vector if embedded is not None else None,
        )
