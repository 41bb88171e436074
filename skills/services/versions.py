"""Skill versions and A/B traffic: create a version, route traffic between active variants,
activate one.

Review: agents may add versions to any skill they may write, but on a reviewed skill (active or
deprecated: a reviewer let it go live) a version goes live only when a person with the reviewer
role (or an owner) puts it there. An agent or a command-line tool that would route any traffic
to a version of such a skill that is not live already (``activate``, ``traffic``, the activate
and traffic operations) is refused with 403 ``reviewer_required`` and nothing is written; it may
still move traffic between the versions that are live (end an A/B test a reviewer started).
Drafts are their writers' own until a reviewer activates the skill, with its versions as they
are then.

The active versions of a skill are the variants usage is routed between
(``skills.selectors.catalog.version_route``); their traffic shares sum to 1 (within 1e-6), or
the change is refused with 400 ``traffic_not_one`` and nothing is written. The skill's
``procedure`` and ``execution_context`` are its *primary* variant's content and execution
context (the largest share; the newest of equals), so a change of primary re-indexes and
re-embeds the skill (before the transaction).

A change of a reviewed skill's execution context asked for by anyone but a reviewer becomes a
version waiting for review, as a change of procedure does (``execution_context_propose``):
the live versions' procedure with the new context, inactive until a reviewer activates it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from core.actors import Actor
from core.audit import audit_record
from core.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from core.writes import row_locked
from skills.models import Skill, SkillVersion
from skills.roles import MANAGE_SKILLS, require_reviewer
from skills.selectors.catalog import skill_not_found
from skills.semver import version_parse
from skills.services.indexing import Embedded, embed_skill, index_skill, scope_locked

SHARE_TOLERANCE = 1e-6
MAX_VARIANTS = 10


def version_not_found() -> NotFound:
    return NotFound("No such version of this skill.", code="version_not_found")


def _writable(skill: Skill) -> None:
    if skill.status == Skill.Status.ARCHIVED:
        raise Conflict("The skill is archived: unarchive it first.", code="skill_archived")


# A skill in these statuses went live through a reviewer: its versions go live through one too.
REVIEWED_STATUSES = frozenset({Skill.Status.ACTIVE, Skill.Status.DEPRECATED})


def going_live_check(
    *, actor: Actor, skill: Skill, shares: Mapping[str, float] | None, live: set[str]
) -> None:
    """403 ``reviewer_required`` (``details.versions``: the versions it would put live) when
    ``shares`` route traffic to a version of a reviewed skill that is not live (``live``: the
    skill's active versions now) and no person with the reviewer role acts."""
    if shares is None or skill.status not in REVIEWED_STATUSES:
        return
    going_live = sorted(set(shares) - live)
    if not going_live:
        return
    try:
        require_reviewer(actor, skill.account_id)
    except PermissionDenied as exc:
        raise PermissionDenied(
            f"The skill is {skill.status}: a version of it goes live only when a person with "
            "the reviewer or owner role activates it (agents add versions inactive).",
            code=exc.code,
            details={**exc.details, "versions": [v[:50] for v in going_live]},
        ) from exc


def _live(versions: Mapping[str, SkillVersion]) -> set[str]:
    return {name for name, version in versions.items() if version.is_active}


def traffic_check(traffic: Mapping[str, float], known: set[str]) -> dict[str, float]:
    """Shares by version string: known versions, each above 0 and at most 1, summing to 1."""
    if not traffic:
        raise ValidationFailed("Name at least one version.", code="invalid_traffic")
    if len(traffic) > MAX_VARIANTS:
        raise ValidationFailed(f"At most {MAX_VARIANTS} active variants.", code="invalid_traffic")
    unknown = sorted(set(traffic) - known)
    if unknown:
        raise ValidationFailed(
            "The traffic names versions the skill does not have.",
            code="unknown_version",
            details={"versions": [v[:50] for v in unknown]},
        )
    shares: dict[str, float] = {}
    for name, share in traffic.items():
        share = float(share)
        if not math.isfinite(share) or not 0 < share <= 1:
            raise ValidationFailed(
                "Each share is above 0 and at most 1.",
                code="invalid_traffic",
                details={"version": name[:50]},
            )
        shares[name] = share
    total = sum(shares.values())
    if abs(total - 1.0) > SHARE_TOLERANCE:
        raise ValidationFailed(
            "The traffic shares of the active versions must sum to 1.",
            code="traffic_not_one",
            details={"sum": round(total, 9)},
        )
    return shares


def _primary(shares: Mapping[str, float], ids: Mapping[str, int]) -> str:
    """The variant whose content is the skill's procedure: the largest share, newest of equals."""
    return max(shares, key=lambda name: (shares[name], ids[name]))


def _apply(
    actor: Actor,
    skill: Skill,
    shares: Mapping[str, float],
    contents: Mapping[str, str],
    ids: Mapping[str, int],
    embedded: Embedded | None,
    contexts: Mapping[str, dict[str, Any]],
) -> None:
    """Inside a transaction holding the scope lock: make ``shares`` the skill's active
    variants (every other version inactive), its primary's content the procedure and its
    primary's execution context the skill's."""
    names = list(shares)
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE skills_skillversion v
            SET is_active = (t.share IS NOT NULL),
                traffic_share = coalesce(t.share, 0),
                activated_at = CASE WHEN t.share IS NOT NULL AND NOT v.is_active
                                    THEN %(now)s ELSE v.activated_at END
            FROM skills_skillversion w
            LEFT JOIN unnest(%(names)s::text[], %(shares)s::float8[]) AS t(version, share)
                ON t.version = w.version
            WHERE v.id = w.id AND v.skill_id = %(skill)s
            """,
            {
                "names": names,
                "shares": [shares[n] for n in names],
                "skill": skill.pk,
                "now": now,
            },
        )
    primary = _primary(shares, ids)
    if contexts[primary] != skill.execution_context:
        Skill.objects.filter(pk=skill.pk).update(
            execution_context=contexts[primary], updated_at=now
        )
        skill.execution_context = contexts[primary]
    procedure = contents[primary]
    if procedure != skill.procedure:
        Skill.objects.filter(pk=skill.pk).update(procedure=procedure, updated_at=now)
        skill.procedure = procedure
        index_skill(scope_locked(skill.account_id), skill, embedded, new=False)


def _embedded_for(skill: Skill, procedure: str) -> Embedded | None:
    if procedure == skill.procedure:
        return None
    candidate = Skill(
        account_id=skill.account_id,
        name=skill.name,
        category=skill.category,
        description=skill.description,
        tags=skill.tags,
        procedure=procedure,
    )
    return embed_skill(candidate)


def _versions(skill: Skill) -> dict[str, SkillVersion]:
    return {v.version: v for v in SkillVersion.objects.filter(skill=skill)}


def version_create(
    *,
    actor: Actor,
    skill: Skill,
    version: str,
    change_type: str,
    content: str = "",
    notes: str = "",
    activate: bool = False,
    traffic: Mapping[str, float] | None = None,
    execution_context: Mapping[str, Any] | None = None,
) -> SkillVersion:
    """A new version of ``skill`` with its procedure (``content``) and its execution context
    (default: the skill's). Inactive unless ``activate`` (it becomes the only active version)
    or ``traffic`` names it (the active variants after this write, with their shares): on a
    reviewed skill, only a reviewer does either (``going_live_check``). 409 ``version_exists``
    for a version string the skill has."""
    actor.require(skill.account_id, MANAGE_SKILLS)
    _writable(skill)
    parsed = version_parse(version)
    if change_type not in SkillVersion.ChangeType.values:
        raise ValidationFailed("Unknown change type.", code="invalid_change_type")
    if activate and traffic:
        raise ValidationFailed("Give activate or traffic, not both.", code="invalid_traffic")
    existing = _versions(skill)
    name = str(parsed)
    if name in existing:
        raise Conflict("The skill has this version already.", code="version_exists")
    shares: dict[str, float] | None = None
    if activate:
        shares = {name: 1.0}
    elif traffic:
        shares = traffic_check(traffic, {*existing, name})
    going_live_check(actor=actor, skill=skill, shares=shares, live=_live(existing))
    context = dict(skill.execution_context if execution_context is None else execution_context)
    contents = {**{v: e.content for v, e in existing.items()}, name: content}
    contexts = {**{v: e.execution_context for v, e in existing.items()}, name: context}
    ids = {**{v: e.pk for v, e in existing.items()}, name: 2**62}  # the new one is newest
    embedded = _embedded_for(skill, contents[_primary(shares, ids)]) if shares is not None else None
    try:
        with transaction.atomic():
            scope_locked(skill.account_id)
            current = row_locked(Skill.objects.all(), skill.pk, missing=skill_not_found)
            _writable(current)
            # Again under the lock: the skill may have gone live, or versions changed, meanwhile.
            going_live_check(
                actor=actor, skill=current, shares=shares, live=_live(_versions(current))
            )
            created = SkillVersion.objects.create(
                account_id=skill.account_id,
                skill=current,
                version=name,
                major=parsed.major,
                minor=parsed.minor,
                patch=parsed.patch,
                prerelease=parsed.prerelease,
                change_type=change_type,
                content=content,
                execution_context=context,
                notes=notes,
                created_by=str(actor)[:300],
            )
            if shares is not None:
                ids[name] = created.pk
                _apply(actor, current, shares, contents, ids, embedded, contexts)
            audit_record(
                actor=actor,
                action="skills.version.create",
                account_id=skill.account_id,
                target=created,
                changes={
                    "skill": skill.pk,
                    "version": name,
                    "change_type": change_type,
                    "traffic": shares or {},
                },
            )
    except IntegrityError as exc:
        if "skill_version_unique" in str(exc):
            raise Conflict("The skill has this version already.", code="version_exists") from exc
        raise
    created.refresh_from_db()
    skill.refresh_from_db()
    return created


def traffic_set(*, actor: Actor, skill: Skill, traffic: Mapping[str, float]) -> list[SkillVersion]:
    """Route usage between the named versions by their shares (every other version becomes
    inactive): an A/B test, or one version at 1.0. On a reviewed skill, only a reviewer routes
    traffic to a version that is not live (``going_live_check``)."""
    actor.require(skill.account_id, MANAGE_SKILLS)
    _writable(skill)
    existing = _versions(skill)
    shares = traffic_check(traffic, set(existing))
    going_live_check(actor=actor, skill=skill, shares=shares, live=_live(existing))
    contents = {v: e.content for v, e in existing.items()}
    contexts = {v: e.execution_context for v, e in existing.items()}
    ids = {v: e.pk for v, e in existing.items()}
    embedded = _embedded_for(skill, contents[_primary(shares, ids)])
    with transaction.atomic():
        scope_locked(skill.account_id)
        current = row_locked(Skill.objects.all(), skill.pk, missing=skill_not_found)
        _writable(current)
        versions_now = _versions(current)
        if set(versions_now) != set(existing):
            raise Conflict(
                "The skill's versions changed meanwhile: read them again.",
                code="concurrent_update",
            )
        going_live_check(actor=actor, skill=current, shares=shares, live=_live(versions_now))
        _apply(actor, current, shares, contents, ids, embedded, contexts)
        audit_record(
            actor=actor,
            action="skills.version.traffic",
            account_id=skill.account_id,
            target=current,
            changes={"traffic": shares},
        )
    skill.refresh_from_db()
    return list(SkillVersion.objects.filter(skill=skill, is_active=True).order_by("id"))


def version_activate(*, actor: Actor, skill: Skill, version: SkillVersion) -> SkillVersion:
    """Make ``version`` the skill's only active version (all traffic): the end of an A/B test."""
    if version.skill_id != skill.pk:
        raise version_not_found()
    traffic_set(actor=actor, skill=skill, traffic={version.version: 1.0})
    version.refresh_from_db()
    return version


def is_reviewer(actor: Actor, account_id: int) -> bool:
    try:
        require_reviewer(actor, account_id)
    except PermissionDenied:
        return False
    return True


def needs_review(actor: Actor, skill: Skill) -> bool:
    """Whether a change of ``skill``'s procedure or execution context by ``actor`` goes live
    only through a reviewer: the skill is reviewed and the actor is not a reviewer."""
    return skill.status in REVIEWED_STATUSES and not is_reviewer(actor, skill.account_id)


def _next_patch(skill: Skill) -> str:
    highest = (
        SkillVersion.objects.filter(skill=skill).order_by("-major", "-minor", "-patch").first()
    )
    if highest is None:
        return "1.0.0"
    return f"{highest.major}.{highest.minor}.{highest.patch + 1}"


def execution_context_propose(
    *, actor: Actor, skill: Skill, execution_context: Mapping[str, Any]
) -> SkillVersion:
    """A change of a reviewed skill's execution context, as a version waiting for review: the
    next patch version, with the procedure the skill runs now (its primary variant's) and the
    new execution context, inactive. A reviewer activates it (the admin's "Activate", or the
    activate and traffic operations); until then every agent gets the reviewed context."""
    return version_create(
        actor=actor,
        skill=skill,
        version=_next_patch(skill),
        change_type=SkillVersion.ChangeType.PATCH,
        content=skill.procedure,
        execution_context=execution_context,
        notes=f"Execution context changed by {actor}; waits for a reviewer to activate it.",
    )
