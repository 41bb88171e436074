"""Skill writes: create, change, status transitions, dependencies, agent assignments. The search
index, the skill's node in the knowledge graph and its edges are ``skills.services.indexing``.

Every write keeps, in one transaction under the account's ``SkillScope`` row lock: the skill's
BM25 postings and the scope's statistics (the ``skills`` search space), its embedding, its graph
node (entity type ``skill``, named like the skill) and its ``depends_on`` edges. Embeddings (the
skill's and its node's) are computed before the transaction opens. A dependency that would close
a cycle is refused (400 ``dependency_cycle``), and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models.functions import Lower
from django.utils.text import slugify

from core.actors import Actor
from core.audit import audit_record
from core.errors import Conflict, NotFound, ValidationFailed
from core.models import Agent
from core.writes import row_delete, row_locked
from rag.graph import selectors as graph
from rag.graph import services as graph_services
from rag.graph.selectors import DEPENDS_ON
from skills.categories import CATEGORIES
from skills.models import AgentSkill, Skill, SkillVersion
from skills.roles import MANAGE_SKILLS, require_reviewer
from skills.semver import requirement_parse, version_parse
from skills.services import versions
from skills.services.indexing import (
    Embedded,
    _cycle,
    _Dependency,
    _name_taken,
    _node_follow,
    dependencies_set,
    embed_skill,
    index_skill,
    node_for,
    placeholder_node,
    reaches,
    scope_locked,
)

UPDATABLE_FIELDS = ("name", "description", "category", "status", "execution_context", "tags")
# Fields a skill is found by: changing one re-indexes and re-embeds it.
INDEXED_FIELDS = ("name", "description", "category", "tags", "procedure")
MAX_TAGS = 50
MAX_DEPENDENCIES = 50
INITIAL_VERSION = "1.0.0"

# Skill status transitions; entering ``active`` needs a reviewer (``require_reviewer``).
TRANSITIONS: dict[str, frozenset[str]] = {
    Skill.Status.DRAFT: frozenset({Skill.Status.ACTIVE, Skill.Status.ARCHIVED}),
    Skill.Status.ACTIVE: frozenset({Skill.Status.DEPRECATED, Skill.Status.ARCHIVED}),
    Skill.Status.DEPRECATED: frozenset({Skill.Status.ACTIVE, Skill.Status.ARCHIVED}),
    Skill.Status.ARCHIVED: frozenset({Skill.Status.DRAFT}),
}


@dataclass(frozen=True)
class DependencyInput:
    """A skill this one depends on, with an optional version requirement (``^1.2.0``)."""

    skill_id: int
    version: str = ""


def skill_not_found(ids: Sequence[int] = ()) -> NotFound:
    return NotFound(
        "No such skill.", code="skill_not_found", details={"ids": list(ids)} if ids else {}
    )


_CONFLICTS = {"skill_unique_name": _name_taken, "skill_unique_slug": _name_taken}


# --- validation ------------------------------------------------------------------------------


def name_check(value: str) -> tuple[str, str]:
    name = value.strip()
    slug = slugify(name)[:200]
    if not name or not slug:
        raise ValidationFailed(
            "A skill needs a name with at least one letter or digit.", code="invalid_name"
        )
    if len(name) > 200:
        raise ValidationFailed("A name has at most 200 characters.", code="invalid_name")
    return name, slug


def category_check(category: str) -> str:
    if category not in CATEGORIES:
        raise ValidationFailed(
            f"Unknown category {category[:50]!r}.",
            code="unknown_category",
            details={"categories": list(CATEGORIES)},
        )
    return category


def tags_clean(tags: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    kept: list[str] = []
    for tag in tags:
        tag = tag.strip()
        if tag and tag.lower() not in seen:
            seen.add(tag.lower())
            kept.append(tag[:100])
    if len(kept) > MAX_TAGS:
        raise ValidationFailed(f"At most {MAX_TAGS} tags.", code="too_many_tags")
    return kept


def _transition_check(actor: Actor, account_id: int, current: str, to: str) -> None:
    if to == current:
        return
    if to not in TRANSITIONS.get(current, frozenset()):
        raise Conflict(
            f"A {current} skill cannot become {to}.",
            code="invalid_transition",
            details={"from": current, "to": to},
        )
    if to == Skill.Status.ACTIVE:
        require_reviewer(actor, account_id)


def name_in_use(account_id: int, name: str, *, exclude_id: int | None = None) -> bool:
    _, slug = name_check(name)
    taken = Skill.objects.filter(account_id=account_id).annotate(lname=Lower("name"))
    if exclude_id is not None:
        taken = taken.exclude(pk=exclude_id)
    return taken.filter(lname=name.strip().lower()).exists() or taken.filter(slug=slug).exists()


def _dependencies(
    account_id: int, dependencies: Sequence[DependencyInput], *, own_id: int | None = None
) -> list[_Dependency]:
    """The skills named, all of the account (404 ``skill_not_found`` naming the others)."""
    if len(dependencies) > MAX_DEPENDENCIES:
        raise ValidationFailed(
            f"At most {MAX_DEPENDENCIES} dependencies.", code="too_many_dependencies"
        )
    ids = [d.skill_id for d in dependencies]
    if len(set(ids)) != len(ids):
        raise ValidationFailed("A dependency is named twice.", code="duplicate_dependency")
    if own_id is not None and own_id in ids:
        raise ValidationFailed("A skill cannot depend on itself.", code="dependency_cycle")
    for dependency in dependencies:
        if dependency.version:
            requirement_parse(dependency.version)
    found = Skill.objects.filter(account_id=account_id, pk__in=ids).in_bulk()
    if set(ids) - set(found):
        raise skill_not_found()
    return [_Dependency(found[d.skill_id], d.version.strip()) for d in dependencies]


def skill_create(
    *,
    actor: Actor,
    name: str,
    category: str,
    description: str = "",
    status: str = Skill.Status.DRAFT,
    execution_context: Mapping[str, Any] | None = None,
    procedure: str = "",
    tags: Sequence[str] = (),
    dependencies: Sequence[DependencyInput] = (),
    account_id: int | None = None,
    version: str = INITIAL_VERSION,
    graph_placeholders: Sequence[str] = (),
    audit_changes: Mapping[str, Any] | None = None,
    within: Callable[[Skill], None] | None = None,
) -> Skill:
    """A new skill with its initial version (active, all traffic), indexed, embedded, in the
    knowledge graph with its ``depends_on`` edges. Only people with the reviewer role create
    active skills (403 ``reviewer_required``); agents create drafts. ``graph_placeholders``:
    names of dependencies that are no skill yet (their placeholder nodes are depended on).
    ``within`` runs inside the transaction once the skill is written (a proposal's transition
    to created): what it raises undoes everything."""
    account_id = actor.account_id if account_id is None else account_id
    actor.require(account_id, MANAGE_SKILLS)
    if status not in (Skill.Status.DRAFT, Skill.Status.ACTIVE):
        raise ValidationFailed(
            "A new skill is a draft, or active when a reviewer creates it.",
            code="invalid_status",
        )
    if status == Skill.Status.ACTIVE:
        require_reviewer(actor, account_id)
    name, slug = name_check(name)
    parsed = version_parse(version)
    skill = Skill(
        account_id=account_id,
        name=name,
        slug=slug,
        description=description,
        category=category_check(category),
        status=status,
        execution_context=dict(execution_context or {}),
        procedure=procedure,
        tags=tags_clean(tags),
    )
    skill.full_clean(
        exclude=["account", "scope", "graph_node", "embedding"],
        validate_unique=False,
        validate_constraints=False,
    )
    resolved = _dependencies(account_id, dependencies)
    if name_in_use(account_id, name):
        raise _name_taken()
    embedded = embed_skill(skill)
    try:
        with transaction.atomic():
            scope = scope_locked(account_id)
            skill.scope = scope
            skill.save(force_insert=True)
            index_skill(scope, skill, embedded, new=True)
            node = node_for(actor, skill, embedded)
            dependencies_set(actor, skill, resolved)
            for placeholder in graph_placeholders:
                target = placeholder_node(actor, account_id, placeholder)
                if reaches(account_id, [target.pk], node.pk):
                    raise _cycle()
                if not graph.relation_edges(
                    relation_type=DEPENDS_ON, source_ids=[node.pk], target_ids=[target.pk]
                ).exists():
                    graph_services.edge_create(
                        actor=actor,
                        account_id=account_id,
                        source_id=node.pk,
                        target_id=target.pk,
                        relation_type=DEPENDS_ON,
                    )
            SkillVersion.objects.create(
                account_id=account_id,
                skill=skill,
                version=str(parsed),
                major=parsed.major,
                minor=parsed.minor,
                patch=parsed.patch,
                prerelease=parsed.prerelease,
                change_type=SkillVersion.ChangeType.MAJOR,
                content=procedure,
                execution_context=skill.execution_context,
                notes="Initial version.",
                is_active=True,
                traffic_share=1.0,
                created_by=str(actor)[:300],
                activated_at=skill.created_at,
            )
            audit_record(
                actor=actor,
                action="skills.skill.create",
                account_id=account_id,
                target=skill,
                changes={
                    "name": name,
                    "category": skill.category,
                    "status": status,
                    "dependencies": [d.skill.pk for d in resolved],
                    **(audit_changes or {}),
                },
            )
            if within is not None:
                within(skill)
    except IntegrityError as exc:
        text = str(exc)
        if "skill_unique_name" in text or "skill_unique_slug" in text:
            raise _name_taken() from exc
        raise
    except Conflict as exc:
        if exc.code == "node_exists":  # a node of that name was created meanwhile
            raise _name_taken() from exc
        raise
    skill.refresh_from_db()
    return skill


def skill_update(
    *,
    actor: Actor,
    skill: Skill,
    fields: Mapping[str, Any],
    dependencies: Sequence[DependencyInput] | None = None,
) -> Skill:
    """Change a skill's fields (``UPDATABLE_FIELDS``) and, when given, its dependencies. A new
    name, description, category or tags re-index and re-embed it; its graph node follows its
    name, description and status. Status changes follow ``TRANSITIONS`` (409
    ``invalid_transition``); becoming active needs a reviewer.

    A new ``execution_context`` is what running the skill needs, and it goes live as a new
    procedure does (``skills.services.versions``): on a reviewed skill (active or deprecated),
    asked for by anyone but a reviewer, it becomes a version waiting for review
    (``execution_context_propose``), returned as ``pending_version`` on the skill, and the
    skill keeps its context; otherwise (a draft, or a reviewer) it changes the skill and its
    live versions at once."""
    actor.require(skill.account_id, MANAGE_SKILLS)
    fields = dict(fields)
    unknown = set(fields) - set(UPDATABLE_FIELDS)
    if unknown:
        raise ValidationFailed(
            "Unknown fields.", code="unknown_field", details={"fields": sorted(unknown)}
        )
    if "name" in fields:
        fields["name"], fields["slug"] = name_check(fields["name"])
    if "category" in fields:
        category_check(fields["category"])
    if "tags" in fields:
        fields["tags"] = tags_clean(fields["tags"])
    if "execution_context" in fields:
        fields["execution_context"] = dict(fields["execution_context"] or {})
    changes = {name: value for name, value in fields.items() if getattr(skill, name) != value}
    if "name" not in changes:
        changes.pop("slug", None)
    if "status" in changes:
        _transition_check(actor, skill.account_id, skill.status, changes["status"])
    if "name" in changes and name_in_use(skill.account_id, changes["name"], exclude_id=skill.pk):
        raise _name_taken()
    resolved = (
        None
        if dependencies is None
        else _dependencies(skill.account_id, dependencies, own_id=skill.pk)
    )
    proposed = skill.pending_version = None
    if "execution_context" in changes and versions.needs_review(actor, skill):
        proposed = changes.pop("execution_context")
    if not changes and resolved is None:
        if proposed is not None:
            skill.pending_version = versions.execution_context_propose(
                actor=actor, skill=skill, execution_context=proposed
            )
        return skill
    reindex = any(name in changes for name in INDEXED_FIELDS)
    embedded = None
    if reindex:
        candidate = Skill(**{f: getattr(skill, f) for f in (*INDEXED_FIELDS, "account_id")})
        for name in INDEXED_FIELDS:
            if name in changes:
                setattr(candidate, name, changes[name])
        embedded = embed_skill(candidate)
    try:
        with transaction.atomic():
            scope = scope_locked(skill.account_id)
            current = row_locked(Skill.objects.all(), skill.pk, missing=skill_not_found)
            if "status" in changes and current.status != skill.status:
                raise Conflict(
                    "The skill's status changed meanwhile: read it again.",
                    code="concurrent_update",
                )
            if changes:
                Skill.objects.filter(pk=skill.pk).update(**changes)
                current.refresh_from_db()
            if "execution_context" in changes:  # the live versions run with it from now on
                SkillVersion.objects.filter(skill=skill, is_active=True).update(
                    execution_context=changes["execution_context"]
                )
            if proposed is not None:
                pending = versions.execution_context_propose(
                    actor=actor, skill=current, execution_context=proposed
                )
            if reindex:
                index_skill(scope, current, embedded, new=False)
            _node_follow(actor, current, changes, embedded)
            if resolved is not None:
                dependencies_set(actor, current, resolved)
            audit = {k: v for k, v in changes.items() if k != "slug"}
            if resolved is not None:
                audit["dependencies"] = [
                    {"skill_id": d.skill.pk, "version": d.requirement} for d in resolved
                ]
            audit_record(
                actor=actor,
                action="skills.skill.update",
                account_id=skill.account_id,
                target=skill,
                changes=audit,
            )
    except IntegrityError as exc:
        text = str(exc)
        if "skill_unique_name" in text or "skill_unique_slug" in text:
            raise _name_taken() from exc
        raise
    except Conflict as exc:
        if exc.code == "node_exists":
            raise _name_taken() from exc
        raise
    skill.refresh_from_db()
    if proposed is not None:
        skill.pending_version = pending
    return skill


def skill_reindex(*, actor: Actor, skill: Skill, embedded: Embedded | None = None) -> Skill:
    """Re-index and re-embed a skill as stored (a new procedure, a new model), and restore its
    graph node if it was deleted. No audit event: derived data only."""
    embedded = embedded or embed_skill(skill)
    with transaction.atomic():
        scope = scope_locked(skill.account_id)
        current = Skill.objects.filter(pk=skill.pk).first()
        if current is None:
            raise skill_not_found()
        index_skill(scope, current, embedded, new=False)
        if current.graph_node_id is None or not graph.node_exists(current.graph_node_id):
            node_for(actor, current, embedded)
    skill.refresh_from_db()
    return skill


# --- agent assignments -----------------------------------------------------------------------


def agent_skill_set(
    *,
    actor: Actor,
    skill: Skill,
    agent_id: int,
    proficiency: float | None = None,
    is_active: bool | None = None,
) -> AgentSkill:
    """Assign a skill to an agent of its account (or change the assignment)."""
    actor.require(skill.account_id, MANAGE_SKILLS)
    if not Agent.objects.filter(pk=agent_id, account_id=skill.account_id).exists():
        raise NotFound("No such agent.", code="agent_not_found")
    if proficiency is not None and not 0 <= proficiency <= 1:
        raise ValidationFailed("proficiency must be from 0 to 1.", code="invalid_proficiency")
    defaults: dict[str, Any] = {}
    if proficiency is not None:
        defaults["proficiency"] = proficiency
    if is_active is not None:
        defaults["is_active"] = is_active
    with transaction.atomic():
        assignment, created = AgentSkill.objects.update_or_create(
            agent_id=agent_id,
            skill=skill,
            defaults=defaults,
            create_defaults={"account_id": skill.account_id, **defaults},
        )
        audit_record(
            actor=actor,
            action="skills.agent_skill.create" if created else "skills.agent_skill.update",
            account_id=skill.account_id,
            target=assignment,
            changes={"agent": agent_id, "skill": skill.pk, **defaults},
        )
    return assignment


def agent_skill_remove(*, actor: Actor, assignment: AgentSkill) -> None:
    actor.require(assignment.account_id, MANAGE_SKILLS)
    row_delete(
        actor=actor,
        instance=assignment,
        action="skills.agent_skill.delete",
        account_id=assignment.account_id,
        changes={"agent": assignment.agent_id, "skill": assignment.skill_id},
    )
