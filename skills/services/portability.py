"""skills' kinds of an account export (``core.portability``): skills, every version of their
procedures, and the agents' assignments. Skills are account-wide: an agent's share holds none.

On import the skills' BM25 index is rebuilt inside the import's transaction; after the commit
each skill is re-indexed as stored (``skill_reindex``: its embedding, outside any transaction,
and its knowledge-graph node). Dependencies (``depends_on`` edges of the graph), proposals,
conflicts, usage records and learning profiles are not carried yet (docs/portability.md)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from core.portability.kinds import ExportScope, ImportScope, Kind, Row, ref, when
from skills.models import AgentSkill, Skill, SkillScope, SkillVersion

AGENT = "core.agent"
SKILL = "skills.skill"
VERSION = "skills.version"
ASSIGNMENT = "skills.agent_skill"


def _skills(scope: ExportScope) -> Any:
    skills = Skill.objects.filter(account=scope.account)
    return skills.none() if scope.single_agent else skills


_SKILL_FIELDS = (
    "name",
    "slug",
    "description",
    "category",
    "status",
    "execution_context",
    "procedure",
    "tags",
    "effectiveness_score",
    "health_score",
    "usage_count",
    "success_count",
)


def _skill_rows(scope: ExportScope) -> Iterator[Row]:
    skills = _skills(scope)
    if not scope.with_vectors:
        skills = skills.defer("embedding")
    for skill in skills.order_by("pk").iterator(chunk_size=1000):
        row: Row = {
            "id": skill.pk,
            "last_used_at": skill.last_used_at,
            "created_at": skill.created_at,
            "updated_at": skill.updated_at,
            "embedding_model": skill.embedding_model if scope.with_vectors else "",
            **{name: getattr(skill, name) for name in _SKILL_FIELDS},
        }
        if scope.with_vectors:
            row["embedding"] = (
                None if skill.embedding is None else [float(x) for x in skill.embedding]
            )
        yield row


def _skill_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    skill_scope, _ = SkillScope.objects.get_or_create(account=scope.account)
    made = []
    for row in rows:
        vector = scope.vector_of(row)
        made.append(
            Skill(
                account=scope.account,
                scope=skill_scope,
                last_used_at=when(row["last_used_at"]),
                created_at=when(row["created_at"]),
                embedding=vector,
                embedding_model=scope.embedding_model if vector is not None else "",
                **{name: row[name] for name in _SKILL_FIELDS},
            )
        )
    Skill.objects.bulk_create(made)
    skills: list[int] = scope.memo.setdefault("skills.skills", [])
    for row, skill in zip(rows, made, strict=True):
        scope.remember(SKILL, row["id"], skill.pk)
        skill.updated_at = when(row["updated_at"])
        skills.append(skill.pk)
    Skill.objects.bulk_update(made, ["updated_at"])
    scope.memo["skills.scope"] = skill_scope.pk


def _skills_finish(scope: ImportScope) -> None:
    from rag import keyword
    from skills.spaces import SKILLS

    skills = list(scope.memo.get("skills.skills", []))
    if not skills:
        return
    keyword.index_rebuild(space=SKILLS, scope_id=scope.memo["skills.scope"])
    account_id = scope.account.pk
    scope.after_commit.append(lambda: _reindex(account_id, skills))


def _reindex(account_id: int, skills: Sequence[int]) -> None:
    """Each skill's embedding and graph node, after the import commits."""
    from core.actors import actor_for_account
    from skills.services.catalog import skill_reindex

    actor = actor_for_account(account_id)
    for skill in Skill.objects.filter(pk__in=skills).order_by("pk"):
        skill_reindex(actor=actor, skill=skill)


_VERSION_FIELDS = (
    "version",
    "major",
    "minor",
    "patch",
    "prerelease",
    "change_type",
    "content",
    "execution_context",
    "notes",
    "is_active",
    "traffic_share",
    "success_count",
    "failure_count",
    "total_duration_ms",
    "created_by",
)


def _version_rows(scope: ExportScope) -> Iterator[Row]:
    versions = SkillVersion.objects.filter(account=scope.account, skill__in=_skills(scope))
    for version in versions.order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": version.pk,
            "skill": ref(SKILL, version.skill_id),
            "activated_at": version.activated_at,
            "created_at": version.created_at,
            **{name: getattr(version, name) for name in _VERSION_FIELDS},
        }


def _version_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = SkillVersion.objects.bulk_create(
        [
            SkillVersion(
                account=scope.account,
                skill_id=scope.required(row["skill"]),
                activated_at=when(row["activated_at"]),
                **{name: row[name] for name in _VERSION_FIELDS},
            )
            for row in rows
        ]
    )
    scope.remember_created(VERSION, SkillVersion, rows, made, "created_at")


_ASSIGNMENT_FIELDS = ("proficiency", "is_active", "usage_count", "success_count")


def _assignment_rows(scope: ExportScope) -> Iterator[Row]:
    assignments = AgentSkill.objects.filter(
        account=scope.account, skill__in=_skills(scope), agent__in=scope.agent_ids
    )
    for assignment in assignments.order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": assignment.pk,
            "agent": ref(AGENT, assignment.agent_id),
            "skill": ref(SKILL, assignment.skill_id),
            "last_used_at": assignment.last_used_at,
            "created_at": assignment.created_at,
            "updated_at": assignment.updated_at,
            **{name: getattr(assignment, name) for name in _ASSIGNMENT_FIELDS},
        }


def _assignment_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = AgentSkill.objects.bulk_create(
        [
            AgentSkill(
                account=scope.account,
                agent_id=scope.required(row["agent"]),
                skill_id=scope.required(row["skill"]),
                last_used_at=when(row["last_used_at"]),
                created_at=when(row["created_at"]),
                **{name: row[name] for name in _ASSIGNMENT_FIELDS},
            )
            for row in rows
        ]
    )
    scope.remember_created(ASSIGNMENT, AgentSkill, rows, made, "updated_at")


_DATETIME = "datetime (ISO 8601) or null"

KINDS = (
    Kind(
        name=SKILL,
        schema={
            "name": "str: unique in the account (case-insensitive)",
            "slug": "str: unique in the account",
            "description": "str",
            "category": "str",
            "status": "str: draft | active | deprecated | archived",
            "execution_context": "object",
            "procedure": "str: the active version's content",
            "tags": "[str]",
            "effectiveness_score": "float 0..1",
            "health_score": "float 0..1",
            "usage_count": "int",
            "success_count": "int",
            "last_used_at": _DATETIME,
            "created_at": "datetime",
            "updated_at": "datetime",
            "embedding_model": "str: the model of embedding (blank without vectors)",
        },
        rows=_skill_rows,
        load=_skill_load,
        vector="embedding",
        finish=_skills_finish,
    ),
    Kind(
        name=VERSION,
        schema={
            "skill": f"ref:{SKILL}",
            "version": "str: semantic version, unique per skill",
            "major": "int",
            "minor": "int",
            "patch": "int",
            "prerelease": "str",
            "change_type": "str",
            "content": "str: this version's procedure",
            "execution_context": "object",
            "notes": "str",
            "is_active": "bool",
            "traffic_share": "float 0..1",
            "success_count": "int",
            "failure_count": "int",
            "total_duration_ms": "int",
            "created_by": "str: who made it, as recorded",
            "activated_at": _DATETIME,
            "created_at": "datetime",
        },
        rows=_version_rows,
        load=_version_load,
    ),
    Kind(
        name=ASSIGNMENT,
        schema={
            "agent": f"ref:{AGENT}",
            "skill": f"ref:{SKILL}",
            "proficiency": "float 0..1",
            "is_active": "bool",
            "usage_count": "int",
            "success_count": "int",
            "last_used_at": _DATETIME,
            "created_at": "datetime",
            "updated_at": "datetime",
        },
        rows=_assignment_rows,
        load=_assignment_load,
    ),
)
