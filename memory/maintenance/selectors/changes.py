"""Reads of the review queue (docs/memory/review.md): pending changes scoped by
the actor inside the query, and the before/after diff a reviewer reads."""

from __future__ import annotations

import difflib
import json
from typing import Any

from django.db.models import Q, QuerySet

from core.actors import Actor
from core.errors import NotFound
from memory.long_term import context_access
from memory.models import PendingChange
from memory.pools import access as pool_access
from memory.roles import MANAGE_MEMORY


def pending_changes_for(
    actor: Actor,
    *,
    status: str = "",
    kind: str = "",
    context_id: int | None = None,
) -> QuerySet[PendingChange]:
    """The changes the actor may see, newest first: an agent those of its account about a
    context (or pool) it may read; a person those of the accounts where they manage memory
    (owners and operators)."""
    changes = PendingChange.objects.all()
    agent = actor.agent
    if agent is None:
        accounts = actor.accounts_with(MANAGE_MEMORY) if actor.user is not None else None
        changes = changes.filter(account_id__in=list(accounts or actor.account_ids))
        if accounts is not None and not accounts:
            changes = changes.none()
    else:
        changes = changes.filter(account_id=agent.account_id).filter(
            Q(context__isnull=True, pool__isnull=True)
            | Q(context__in=context_access.readable_contexts(actor).values("pk"))
            | Q(pool__in=pool_access.visible_pools(actor).values("pk"))
        )
    if status:
        changes = changes.filter(status=status)
    if kind:
        changes = changes.filter(kind=kind)
    if context_id is not None:
        changes = changes.filter(context_id=context_id)
    return changes.select_related("context", "pool").order_by("-created_at", "-id")


def pending_change_get(actor: Actor, change_id: int) -> PendingChange:
    """One change the actor may see (404 ``pending_change_not_found`` otherwise: another
    account's and a missing one alike)."""
    change = pending_changes_for(actor).filter(pk=change_id).first()
    if change is None:
        raise NotFound("No such pending change.", code="pending_change_not_found")
    return change


def _lines(value: Any) -> list[str]:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def change_diff(change: PendingChange) -> str:
    """A unified diff of the change's ``before`` and ``after`` (as indented JSON): what a
    reviewer approves."""
    return "\n".join(
        difflib.unified_diff(
            _lines(change.before), _lines(change.after), "before", "after", lineterm="", n=3
        )
    )
