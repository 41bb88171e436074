"""skills' kinds of an account export (``core.portability``): skills, every version of their
procedures, the agents' assignments, proposals with their review, task assignments, usage
records, learning profiles and agents' trust. Skills are account-wide: an agent's share holds
none of these.

On import the skills' BM25 index is rebuilt inside the import's transaction; after the commit
each skill is re-indexed as stored (``skill_reindex``: its embedding, outside any transaction,
and its knowledge-graph node, which adopts the node the graph's kinds imported). Dependencies
are ``depends_on`` edges of the graph, carried by rag's ``rag.graph_edge``. Learning profiles
are carried as they are (their window too), not recomputed from the usage records. Conflicts
are not carried: the weekly conflict detection finds them again. A proposal's reviewer and a
person who proposed are people, who stay behind (``proposed_by`` keeps the name)."""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from typing import Any

from core.portability.kinds import ExportScope, ImportScope, Kind, Row, ref, when
from skills.models import (
    AgentSkill,
    AgentTrust,
    LearningProfile,
    Skill,
    SkillProposal,
    SkillScope,
    SkillUsage,
    SkillVersion,
    TaskAssignment,
)

AGENT = "core.agent"
SKILL = "skills.skill"
VERSION = "skills.version"
ASSIGNMENT = "skills.agent_skill"
PROPOSAL = "skills.proposal"
TASK = "skills.task_assignment"
USAGE = "skills.usage"
PROFILE = "skills.learning_profile"
TRUST = "skills.agent_trust"


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


def _of_account(model: Any, scope: ExportScope) -> Any:
    rows = model.objects.filter(account=scope.account)
    return rows.none() if scope.single_agent else rows


# --- proposals --------------------------------------------------------------------------------

_PROPOSAL_FIELDS = (
    "name",
    "description",
    "category",
    "confidence",
    "procedure",
    "tags",
    "execution_context",
    "dependencies",
    "research",
    "drafted_by",
    "status",
    "proposed_by",
    "decision_reason",
)
_PROPOSAL_TIMES = ("reviewed_at", "submitted_at", "expires_at", "created_at")


def _proposal_rows(scope: ExportScope) -> Iterator[Row]:
    for proposal in _of_account(SkillProposal, scope).order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": proposal.pk,
            "proposed_by_agent": scope.agent_ref(proposal.proposed_by_agent_id),
            "parent": ref(PROPOSAL, proposal.parent_id),
            "skill": ref(SKILL, proposal.skill_id),
            "updated_at": proposal.updated_at,
            **{name: getattr(proposal, name) for name in _PROPOSAL_FIELDS + _PROPOSAL_TIMES},
        }


def _proposal_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    """Created, then each parent (an earlier proposal) and the source's times written back."""
    made = SkillProposal.objects.bulk_create(
        [
            SkillProposal(
                account=scope.account,
                proposed_by_agent_id=scope.resolve(row["proposed_by_agent"]),
                skill_id=scope.resolve(row["skill"]),
                **{name: row[name] for name in _PROPOSAL_FIELDS},
                **{name: when(row[name]) for name in _PROPOSAL_TIMES},
            )
            for row in rows
        ]
    )
    for row, proposal in zip(rows, made, strict=True):
        scope.remember(PROPOSAL, row["id"], proposal.pk)
    for row, proposal in zip(rows, made, strict=True):
        proposal.parent_id = scope.resolve(row["parent"])
        proposal.created_at = when(row["created_at"])
        proposal.updated_at = when(row["updated_at"])
    SkillProposal.objects.bulk_update(made, ["parent", "created_at", "updated_at"])


# --- task assignments and usage records -------------------------------------------------------

_TASK_FIELDS = (
    "title",
    "description",
    "task_type",
    "status",
    "method",
    "score",
    "expertise",
    "confidence",
    "base",
)


def _task_rows(scope: ExportScope) -> Iterator[Row]:
    for task in _of_account(TaskAssignment, scope).order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": task.pk,
            "agent": ref(AGENT, task.agent_id),
            "requested_by": scope.agent_ref(task.requested_by_id),
            "completed_at": task.completed_at,
            "created_at": task.created_at,
            "updated_at": task.updated_at,
            **{name: getattr(task, name) for name in _TASK_FIELDS},
        }


def _task_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = TaskAssignment.objects.bulk_create(
        [
            TaskAssignment(
                account=scope.account,
                agent_id=scope.required(row["agent"]),
                requested_by_id=scope.resolve(row["requested_by"]),
                completed_at=when(row["completed_at"]),
                created_at=when(row["created_at"]),
                **{name: row[name] for name in _TASK_FIELDS},
            )
            for row in rows
        ]
    )
    scope.remember_created(TASK, TaskAssignment, rows, made, "updated_at")


_USAGE_FIELDS = ("task_type", "success", "duration_ms")


def _usage_rows(scope: ExportScope) -> Iterator[Row]:
    for usage in _of_account(SkillUsage, scope).order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": usage.pk,
            "agent": ref(AGENT, usage.agent_id),
            "skill": ref(SKILL, usage.skill_id),
            "version": ref(VERSION, usage.version_id),
            "assignment": ref(TASK, usage.assignment_id),
            "recorded_by": scope.agent_ref(usage.recorded_by_id),
            "occurred_at": usage.occurred_at,
            "created_at": usage.created_at,
            **{name: getattr(usage, name) for name in _USAGE_FIELDS},
        }


def _usage_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = SkillUsage.objects.bulk_create(
        [
            SkillUsage(
                account=scope.account,
                agent_id=scope.required(row["agent"]),
                skill_id=scope.resolve(row["skill"]),
                version_id=scope.resolve(row["version"]),
                assignment_id=scope.resolve(row["assignment"]),
                recorded_by_id=scope.resolve(row["recorded_by"]),
                occurred_at=when(row["occurred_at"]),
                **{name: row[name] for name in _USAGE_FIELDS},
            )
            for row in rows
        ]
    )
    scope.remember_created(USAGE, SkillUsage, rows, made, "created_at")


# --- learning profiles and trust --------------------------------------------------------------

_PROFILE_FIELDS = (
    "task_type",
    "executions",
    "successes",
    "total_executions",
    "success_rate",
    "confidence",
)


def _profile_rows(scope: ExportScope) -> Iterator[Row]:
    for profile in _of_account(LearningProfile, scope).order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": profile.pk,
            "agent": ref(AGENT, profile.agent_id),
            "window": base64.b64encode(bytes(profile.window)).decode("ascii"),
            "last_execution_at": profile.last_execution_at,
            "updated_at": profile.updated_at,
            **{name: getattr(profile, name) for name in _PROFILE_FIELDS},
        }


def _profile_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = LearningProfile.objects.bulk_create(
        [
            LearningProfile(
                account=scope.account,
                agent_id=scope.required(row["agent"]),
                window=base64.b64decode(row["window"], validate=True),
                last_execution_at=when(row["last_execution_at"]),
                **{name: row[name] for name in _PROFILE_FIELDS},
            )
            for row in rows
        ]
    )
    scope.remember_created(PROFILE, LearningProfile, rows, made, "updated_at")


def _trust_rows(scope: ExportScope) -> Iterator[Row]:
    for trust in _of_account(AgentTrust, scope).order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": trust.pk,
            "agent": ref(AGENT, trust.agent_id),
            "trust_score": trust.trust_score,
            "last_active_at": trust.last_active_at,
            "decayed_at": trust.decayed_at,
            "updated_at": trust.updated_at,
        }


def _trust_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = AgentTrust.objects.bulk_create(
        [
            AgentTrust(
                account=scope.account,
                agent_id=scope.required(row["agent"]),
                trust_score=row["trust_score"],
                last_active_at=when(row["last_active_at"]),
                decayed_at=when(row["decayed_at"]),
            )
            for row in rows
        ]
    )
    scope.remember_created(TRUST, AgentTrust, rows, made, "updated_at")


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
    Kind(
        name=PROPOSAL,
        schema={
            "name": "str: one open proposal per name in the account",
            "description": "str",
            "category": "str",
            "confidence": "float 0..1",
            "procedure": "str: the drafted procedure",
            "tags": "[str]",
            "execution_context": "object",
            "dependencies": "[str]: names of the skills it depends on",
            "research": "object: what search found (copied as it is)",
            "drafted_by": "str: LLM model id, or offline",
            "status": "str: draft | submitted | under_review | approved | rejected | expired "
            "| created",
            "proposed_by_agent": f"ref:{AGENT} or null",
            "proposed_by": "str: who proposed it, as recorded (a person's name is kept here)",
            "decision_reason": "str: the review's reason",
            "reviewed_at": _DATETIME,
            "submitted_at": _DATETIME,
            "expires_at": _DATETIME,
            "parent": f"ref:{PROPOSAL} or null: the proposal it is a sub-proposal of",
            "skill": f"ref:{SKILL} or null: the skill it created",
            "created_at": "datetime",
            "updated_at": "datetime",
        },
        rows=_proposal_rows,
        load=_proposal_load,
    ),
    Kind(
        name=TASK,
        schema={
            "agent": f"ref:{AGENT}",
            "requested_by": f"ref:{AGENT} or null",
            "title": "str",
            "description": "str",
            "task_type": "str",
            "status": "str: assigned | succeeded | failed",
            "method": "str: learned | least_loaded",
            "score": "float",
            "expertise": "float",
            "confidence": "float",
            "base": "float",
            "completed_at": _DATETIME,
            "created_at": "datetime",
            "updated_at": "datetime",
        },
        rows=_task_rows,
        load=_task_load,
    ),
    Kind(
        name=USAGE,
        schema={
            "agent": f"ref:{AGENT}",
            "skill": f"ref:{SKILL} or null",
            "version": f"ref:{VERSION} or null",
            "assignment": f"ref:{TASK} or null",
            "recorded_by": f"ref:{AGENT} or null",
            "task_type": "str",
            "success": "bool",
            "duration_ms": "int",
            "occurred_at": "datetime",
            "created_at": "datetime",
        },
        rows=_usage_rows,
        load=_usage_load,
    ),
    Kind(
        name=PROFILE,
        schema={
            "agent": f"ref:{AGENT}",
            "task_type": "str: one profile per agent and task type",
            "executions": "int: in the window",
            "successes": "int: in the window",
            "total_executions": "int: all time",
            "success_rate": "float",
            "confidence": "float",
            "last_execution_at": _DATETIME,
            "window": "str: the packed window (skills.learning.window_pack), base64",
            "updated_at": "datetime",
        },
        rows=_profile_rows,
        load=_profile_load,
    ),
    Kind(
        name=TRUST,
        schema={
            "agent": f"ref:{AGENT}: one row per agent",
            "trust_score": "float 0..1",
            "last_active_at": _DATETIME,
            "decayed_at": _DATETIME,
            "updated_at": "datetime",
        },
        rows=_trust_rows,
        load=_trust_load,
    ),
)
