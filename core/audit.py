"""Recording who did which write. Services call ``audit_record`` inside their transaction."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from django.db import models

from core.actors import Actor
from core.models import AuditEvent


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, models.Model):
        return value.pk
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    return value


def audit_record(
    *,
    actor: Actor,
    action: str,
    account_id: int | None,
    target: models.Model | None = None,
    target_type: str = "",
    target_id: Any = "",
    changes: dict[str, Any] | None = None,
) -> AuditEvent:
    """Record one write: who (agent, person or tool), what, on which object, with which values."""
    if target is not None:
        target_type = target._meta.label_lower
        target_id = target.pk
    return AuditEvent.objects.create(
        account_id=account_id,
        agent_id=actor.agent_id,
        user_id=actor.user_id,
        actor_label=str(actor)[:300],
        action=action,
        target_type=target_type,
        target_id=str(target_id)[:100],
        changes=_jsonable(changes or {}),
    )


def audit_record_many(
    *,
    actor: Actor,
    action: str,
    account_id: int | None,
    events: list[tuple[models.Model, dict[str, Any]]],
) -> list[AuditEvent]:
    """``audit_record`` for many targets of one action at once (one INSERT): a batch write records
    an event per object, as the same writes one by one would."""
    label = str(actor)[:300]
    return AuditEvent.objects.bulk_create(
        [
            AuditEvent(
                account_id=account_id,
                agent_id=actor.agent_id,
                user_id=actor.user_id,
                actor_label=label,
                action=action,
                target_type=target._meta.label_lower,
                target_id=str(target.pk)[:100],
                changes=_jsonable(changes),
            )
            for target, changes in events
        ]
    )
