"""Long-term memory contexts: create, change, archive, delete, grants, and each agent's own
memory.

Every service here checks its actor itself (``memory.long_term.context_access``): a context the
actor may not read is 404 ``context_not_found`` (another account's and a missing one alike), one it
may only read is 403 ``context_read_only``. People need the memory managers' role
(``MANAGE_MEMORY``) in the context's account to write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.actors import Actor
from core.audit import audit_record
from core.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from core.models import Agent, Team
from core.writes import changes_of, changes_validate, row_delete, row_update
from memory import names
from memory.long_term.context_access import require_writable
from memory.long_term.services.graph_links import contexts_unlink_soon
from memory.models import ChangePolicy, MemoryContext, MemoryContextGrant
from memory.roles import MANAGE_MEMORY

CONTEXT_UPDATABLE = (
    "name",
    "context_type",
    "description",
    "metadata",
    "change_policy",
    "agent_write_policy",
)


def _name_taken() -> Conflict:
    return Conflict("A context with this name exists in the account.", code="context_name_taken")


_CONFLICTS = {"ltm_context_unique_name": _name_taken}


# Context types Engram gives, never chosen by hand: an agent's own memory (made on its first
# write without a context) and a conversation's context (made with the conversation).
RESERVED_TYPES: dict[str, str] = {
    MemoryContext.ContextType.AGENT_MEMORY: "an agent's own memory, made by Engram on its first "
    "write without a context",
    MemoryContext.ContextType.CONVERSATION: "made by creating a conversation",
}
# What a context made by hand is unless its creator says otherwise.
DEFAULT_CONTEXT_TYPE = MemoryContext.ContextType.PROJECT_CONTEXT


def _check_context_type(context_type: str) -> None:
    """Agent-memory and conversation contexts are made by Engram, never by hand (400
    ``context_type_reserved``)."""
    if context_type in RESERVED_TYPES:
        raise ValidationFailed(
            f"Contexts of type {context_type} are {RESERVED_TYPES[context_type]}.",
            code="context_type_reserved",
            details={"context_type": context_type},
        )


def _owner_and_account(actor: Actor, account_id: int | None) -> tuple[Agent | None, int]:
    if actor.agent is not None:
        return actor.agent, actor.agent.account_id
    account_id = actor.account_id if account_id is None else account_id
    actor.require(account_id, MANAGE_MEMORY)
    return None, account_id


def _team(account_id: int, scope: str, team_id: int | None) -> int | None:
    if scope != MemoryContext.Scope.TEAM:
        if team_id is not None:
            raise ValidationFailed(
                "team_id is only for contexts of scope team.", code="team_not_allowed"
            )
        return None
    if team_id is None:
        raise ValidationFailed("A team context needs team_id.", code="team_required")
    if not Team.objects.filter(account_id=account_id, pk=team_id).exists():
        raise NotFound("No such team.", code="team_not_found")
    return team_id


def context_create(
    *,
    actor: Actor,
    name: str,
    context_type: str = DEFAULT_CONTEXT_TYPE,
    scope: str = MemoryContext.Scope.AGENT,
    team_id: int | None = None,
    description: str = "",
    metadata: Mapping[str, Any] | None = None,
    account_id: int | None = None,
    change_policy: str = ChangePolicy.AUTO,
    agent_write_policy: str = ChangePolicy.AUTO,
) -> MemoryContext:
    """A new context owned by the calling agent, in its account (people and tools: owned by
    nobody, in ``account_id``, which a person with several accounts must name). The name is
    stored normalised (``names.context_name_normalise``); names that look like ``agent:`` or
    ``conversation:`` ones are reserved (400 ``context_name_reserved``), and so are the types
    ``agent_memory`` and ``conversation`` (400 ``context_type_reserved``). ``change_policy``
    (and ``agent_write_policy``) ``review`` holds automatic changes (agents' memory-tool writes)
    for review (``memory.maintenance.services.changes``)."""
    name = names.check_context_name(name)
    _check_context_type(context_type)
    return _context_insert(
        actor=actor,
        name=name,
        context_type=context_type,
        scope=scope,
        team_id=team_id,
        description=description,
        metadata=metadata,
        account_id=account_id,
        policies={"change_policy": change_policy, "agent_write_policy": agent_write_policy},
    )


def _context_insert(
    *,
    actor: Actor,
    name: str,
    context_type: str,
    scope: str,
    team_id: int | None,
    description: str,
    metadata: Mapping[str, Any] | None,
    account_id: int | None,
    is_agent_memory: bool = False,
    policies: Mapping[str, str] | None = None,
) -> MemoryContext:
    owner, account_id = _owner_and_account(actor, account_id)
    policies = dict(policies or {})
    context = MemoryContext(
        account_id=account_id,
        name=name,
        context_type=context_type,
        scope=scope,
        team_id=_team(account_id, scope, team_id),
        owner=owner,
        description=description,
        metadata=dict(metadata or {}),
        is_agent_memory=is_agent_memory,
        **policies,
    )
    changes_validate(
        context, {"name": name, "context_type": context_type, "scope": scope, **policies}
    )
    try:
        with transaction.atomic():
            context.save(force_insert=True)
            audit_record(
                actor=actor,
                action="memory.context.create",
                account_id=account_id,
                target=context,
                changes={
                    "name": name,
                    "scope": scope,
                    "context_type": context_type,
                    **policies,
                },
            )
    except IntegrityError as exc:
        if "ltm_context_unique_name" in str(exc):
            raise _name_taken() from exc
        raise
    context.can_write = True  # type: ignore[attr-defined]  # its creator writes it
    return context


def agent_memory_context(*, actor: Actor) -> MemoryContext:
    """The calling agent's own long-term memory (``is_agent_memory``: scope agent, type
    agent_memory, named ``agent:<id>``), created on first use: where an entry goes when its
    writer names no context, and where promotions from short-term memory go. Nobody else can
    take its name (``agent:`` is reserved) or its place (one own memory per agent)."""
    if actor.agent is None:
        raise ValidationFailed(
            "Name a context: only an agent has a memory of its own.", code="context_required"
        )
    agent = actor.agent
    context = MemoryContext.objects.filter(owner=agent, is_agent_memory=True).first()
    if context is not None:
        return context
    try:
        return _context_insert(
            actor=actor,
            name=names.agent_memory_name(agent.pk),
            context_type=MemoryContext.ContextType.AGENT_MEMORY,
            scope=MemoryContext.Scope.AGENT,
            team_id=None,
            description=f"The long-term memory of agent {agent.name}.",
            metadata=None,
            account_id=None,
            is_agent_memory=True,
        )
    except Conflict:  # created by a concurrent first write
        return MemoryContext.objects.get(owner=agent, is_agent_memory=True)


def conversation_context_create(*, actor: Actor, title: str) -> MemoryContext:
    """A conversation's own context (type ``conversation``, scope agent, owned by the calling
    agent, named ``conversation:<random>``: the ``conversation:`` names are reserved like
    ``agent:`` ones). Only ``memory.conversations.services`` makes them."""
    if actor.agent is None:
        raise PermissionDenied(
            "Conversations belong to agents: call with an agent's API key.",
            code="agent_required",
        )
    return _context_insert(
        actor=actor,
        name=names.conversation_context_name(),
        context_type=MemoryContext.ContextType.CONVERSATION,
        scope=MemoryContext.Scope.AGENT,
        team_id=None,
        description=f"Conversation: {title}"[:500] if title else "A conversation.",
        metadata=None,
        account_id=None,
    )


def context_update(
    *, actor: Actor, context: MemoryContext, fields: Mapping[str, Any]
) -> MemoryContext:
    """Change a context's name, type, description, metadata or review policies (write access).
    An agent's own memory keeps its name (409 ``agent_memory_protected``)."""
    require_writable(actor, context.pk)
    changes = changes_of(context, fields, CONTEXT_UPDATABLE)
    if "name" in changes:
        if context.is_agent_memory:
            raise Conflict("An agent's own memory keeps its name.", code="agent_memory_protected")
        changes["name"] = names.check_context_name(changes["name"])
        if changes["name"] == context.name:
            del changes["name"]
    if "context_type" in changes or context.context_type == MemoryContext.ContextType.CONVERSATION:
        if context.context_type == MemoryContext.ContextType.CONVERSATION and changes:
            raise Conflict(
                "A conversation's context changes with its conversation.",
                code="conversation_context_protected",
            )
        _check_context_type(changes.get("context_type", ""))
    changes_validate(context, changes)
    updated = row_update(
        actor=actor,
        instance=context,
        changes=changes,
        action="memory.context.update",
        account_id=context.account_id,
        conflicts=_CONFLICTS,
    )
    updated.can_write = True  # type: ignore[attr-defined]
    return updated


def context_archive(*, actor: Actor, context: MemoryContext, archived: bool) -> MemoryContext:
    """Archive (or bring back) a context: an archived one keeps its entries, readable, but is
    left out of searches and refuses new entries (write access)."""
    require_writable(actor, context.pk)
    context.can_write = True  # type: ignore[attr-defined]
    if archived == context.is_archived:
        return context
    updated = row_update(
        actor=actor,
        instance=context,
        changes={"archived_at": timezone.now() if archived else None},
        action="memory.context.archive" if archived else "memory.context.unarchive",
        account_id=context.account_id,
        audit_changes={"archived": archived},
    )
    updated.can_write = True  # type: ignore[attr-defined]
    return updated


def context_delete(*, actor: Actor, context: MemoryContext) -> None:
    """Delete a context with its entries, their history, grants, snapshots and access log
    (write access); their links to the knowledge graph are dropped once it commits."""
    require_writable(actor, context.pk)
    with transaction.atomic():
        contexts_unlink_soon([context.pk])
        row_delete(
            actor=actor,
            instance=context,
            action="memory.context.delete",
            account_id=context.account_id,
            changes={"name": context.name},
        )


def context_grant(
    *, actor: Actor, context: MemoryContext, agent_id: int, level: str
) -> MemoryContextGrant:
    """Let another agent of the account read (or write) the context (write access)."""
    require_writable(actor, context.pk)
    if level not in MemoryContextGrant.Level.values:
        raise ValidationFailed(
            "level must be read or write.",
            code="invalid_level",
            details={"choices": list(MemoryContextGrant.Level.values)},
        )
    if not Agent.objects.filter(account_id=context.account_id, pk=agent_id).exists():
        raise NotFound("No such agent.", code="agent_not_found")
    with transaction.atomic():
        grant, _ = MemoryContextGrant.objects.update_or_create(
            context=context, agent_id=agent_id, defaults={"level": level}
        )
        audit_record(
            actor=actor,
            action="memory.context.grant",
            account_id=context.account_id,
            target=context,
            changes={"agent_id": agent_id, "level": level},
        )
    return grant


def context_revoke(*, actor: Actor, context: MemoryContext, agent_id: int) -> None:
    """Take an agent's grant back (write access; 404 ``grant_not_found`` when it has none)."""
    require_writable(actor, context.pk)
    with transaction.atomic():
        deleted, _ = MemoryContextGrant.objects.filter(context=context, agent_id=agent_id).delete()
        if not deleted:
            raise NotFound("This agent has no grant on the context.", code="grant_not_found")
        audit_record(
            actor=actor,
            action="memory.context.revoke",
            account_id=context.account_id,
            target=context,
            changes={"agent_id": agent_id},
        )
