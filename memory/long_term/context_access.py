"""Who may read and write a long-term memory context, within one account (and so who may see
what was derived from it: knowledge items extracted from a conversation, the graph's nodes,
mentions and edges made from its entries; ``derived_visible``, ``readable_scopes``):

- its owner (the agent that created it) always;
- an agent with a grant: ``read``, or ``write`` (which reads too);
- by scope: every agent of the account reads an ``account`` context; every agent of its team
  reads a ``team`` context; every agent of the account reads and writes a ``global`` one.

Nothing crosses accounts: every query is also filtered by the agent's account. People act
through their roles (memory managers, in the admin); a command-line tool acting on an account may
do everything there.
"""

from __future__ import annotations

from typing import Any

from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q, QuerySet, Value

from core.actors import Actor
from core.db_router import read_connection
from core.errors import NotFound, PermissionDenied
from core.models import Agent
from memory.models import MemoryContext, MemoryContextGrant
from memory.roles import MANAGE_MEMORY
from rag.visibility import Readable


def _granted(agent_id: int, levels: tuple[str, ...]) -> Exists:
    return Exists(
        MemoryContextGrant.objects.filter(
            context=OuterRef("pk"), agent_id=agent_id, level__in=levels
        )
    )


def readable_by(agent_id: int) -> Q:
    Scope = MemoryContext.Scope
    return (
        Q(owner_id=agent_id)
        | Q(scope__in=(Scope.ACCOUNT, Scope.GLOBAL))
        | Q(scope=Scope.TEAM, team__agents=agent_id)
        | Q(_granted(agent_id, (MemoryContextGrant.Level.READ, MemoryContextGrant.Level.WRITE)))
    )


def writable_by(agent_id: int) -> Q:
    return (
        Q(owner_id=agent_id)
        | Q(scope=MemoryContext.Scope.GLOBAL)
        | Q(_granted(agent_id, (MemoryContextGrant.Level.WRITE,)))
    )


def readable_contexts(actor: Actor) -> QuerySet[MemoryContext]:
    """The contexts ``actor`` may read, without annotations: for id lookups on hot paths (a
    context may appear once per team it is shared through: take distinct ids)."""
    agent = actor.agent
    if agent is None:
        return MemoryContext.objects.filter(account_id__in=list(actor.account_ids))
    return MemoryContext.objects.filter(account_id=agent.account_id).filter(readable_by(agent.pk))


def readable_context_ids(agent: Agent) -> tuple[int, ...]:
    """The ids of the contexts ``agent`` may read (``readable_by``), sorted: one statement
    written out, for the searches that ask on every call (the ORM's compilation of the same
    query was a tenth of a graph-mode memory search; ``tests/memory/test_context_access.py``
    holds the two to the same answer)."""
    team_members = Agent.teams.through._meta.db_table
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""
            SELECT c.id FROM {MemoryContext._meta.db_table} c
            WHERE c.account_id = %(account)s AND (
                c.owner_id = %(agent)s
                OR c.scope = ANY(%(open)s)
                OR (c.scope = %(team)s AND EXISTS (
                    SELECT 1 FROM {team_members} t
                    WHERE t.team_id = c.team_id AND t.agent_id = %(agent)s))
                OR EXISTS (
                    SELECT 1 FROM {MemoryContextGrant._meta.db_table} g
                    WHERE g.context_id = c.id AND g.agent_id = %(agent)s
                      AND g.level = ANY(%(levels)s))
            )
            ORDER BY c.id
            """,  # noqa: S608 - table names are code, values parameters
            {
                "account": agent.account_id,
                "agent": agent.pk,
                "open": [MemoryContext.Scope.ACCOUNT, MemoryContext.Scope.GLOBAL],
                "team": MemoryContext.Scope.TEAM,
                "levels": [MemoryContextGrant.Level.READ, MemoryContextGrant.Level.WRITE],
            },
        )
        return tuple(row[0] for row in cursor.fetchall())


def readable_scopes(actor: Actor) -> Readable:
    """The long-term contexts ``actor`` may read, as rag's visibility rule for what the graph
    derives from memory entries (``rag.visibility``; registered by ``memory.apps``): an agent's
    readable contexts; a person's every context of the accounts where they manage memory; a
    tool's every context of its accounts."""
    if actor.agent is not None:
        return Readable(scope_ids=readable_context_ids(actor.agent))
    if actor.user is not None:
        return Readable(account_ids=tuple(sorted(actor.accounts_with(MANAGE_MEMORY))))
    return Readable(account_ids=tuple(sorted(actor.account_ids)))


def derived_visible(actor: Actor, prefix: str = "") -> Q:
    """Rows derived from a context (``<prefix>source_context``: the context they came from,
    NULL for an account-wide row) that ``actor`` may see: account-wide ones, and those of a
    context it may read (a person: of the accounts where they manage memory; a tool: all).
    Derived data keeps the visibility of its source (docs/architecture.md, rule 11)."""
    public = Q(**{f"{prefix}source_context__isnull": True})
    if actor.agent is not None:
        readable = readable_contexts(actor).values("pk")
        return public | Q(**{f"{prefix}source_context__in": readable})
    if actor.user is not None:
        return public | Q(**{f"{prefix}account_id__in": list(actor.accounts_with(MANAGE_MEMORY))})
    return Q()


def derived_visible_sql(actor: Actor, alias: str, params: dict[str, Any]) -> str:
    """``derived_visible`` as SQL over the row ``alias`` (a raw query's, named parameters
    added to ``params``); ``TRUE`` for a tool."""
    if actor.agent is not None:
        params["dv_contexts"] = list(readable_scopes(actor).scope_ids)
        return (
            f"({alias}.source_context_id IS NULL"
            f" OR {alias}.source_context_id = ANY(%(dv_contexts)s::bigint[]))"
        )
    if actor.user is not None:
        params["dv_accounts"] = sorted(actor.accounts_with(MANAGE_MEMORY))
        return (
            f"({alias}.source_context_id IS NULL"
            f" OR {alias}.account_id = ANY(%(dv_accounts)s::bigint[]))"
        )
    return "TRUE"


def visible_contexts(
    actor: Actor, queryset: QuerySet[MemoryContext] | None = None, *, writable_only: bool = False
) -> QuerySet[MemoryContext]:
    """The contexts ``actor`` may read (``writable_only``: write), annotated with ``can_write``."""
    contexts = MemoryContext.objects.all() if queryset is None else queryset
    agent = actor.agent
    if agent is None:
        accounts = actor.accounts_with(MANAGE_MEMORY) if writable_only else actor.account_ids
        return contexts.filter(account_id__in=list(accounts)).annotate(
            can_write=ExpressionWrapper(
                Q(account_id__in=list(actor.accounts_with(MANAGE_MEMORY))),
                output_field=BooleanField(),
            )
            if actor.user is not None
            else Value(True, output_field=BooleanField())
        )
    contexts = contexts.filter(account_id=agent.account_id)
    if writable_only:
        contexts = contexts.filter(writable_by(agent.pk))
    # By id: the team join of the read rule may repeat a row.
    return contexts.filter(pk__in=readable_contexts(actor).values("pk")).annotate(
        can_write=ExpressionWrapper(writable_by(agent.pk), output_field=BooleanField())
    )


def context_not_found() -> NotFound:
    return NotFound("No such memory context.", code="context_not_found")


def require_readable(actor: Actor, context_id: int) -> bool:
    """Raise 404 ``context_not_found`` unless ``actor`` may read the context (another
    account's and a missing one alike); return whether it may also write."""
    found = visible_contexts(actor).filter(pk=context_id).only("pk").first()
    if found is None:
        raise context_not_found()
    return bool(getattr(found, "can_write", False))


def require_writable(actor: Actor, context_id: int) -> None:
    """Raise unless ``actor`` may write the context: 404 ``context_not_found`` when it may not
    even read it, 403 ``context_read_only`` when it may only read. Every long-term write
    service calls this on the context it writes, whoever called the service."""
    if not require_readable(actor, context_id):
        raise PermissionDenied("This context is read-only for you.", code="context_read_only")
