"""API keys: created and revoked by an account's owners, or by agents holding an admin key."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.actors import MANAGE_ACCOUNT, Actor
from core.api_keys import generate_key
from core.audit import audit_record
from core.errors import ValidationFailed
from core.key_cache import credentials_changed
from core.models import Agent, ApiKey
from core.writes import row_delete, row_update


def _check_expiry(expires_at: datetime | None) -> None:
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationFailed(
            "expires_at must be in the future.",
            code="invalid_expiry",
            details={"field": "expires_at"},
        )


def api_key_create(
    *,
    actor: Actor,
    agent: Agent,
    scopes: Iterable[str] = ("read", "write"),
    name: str = "",
    expires_at: datetime | None = None,
) -> tuple[ApiKey, str]:
    """Create a key; returns the row and the full secret key, which is never retrievable again.

    Keys are credentials for the whole account's data: only the account's owners (and agents
    holding an ``admin`` key, checked by the API) create them.
    """
    actor.require(agent.account_id, MANAGE_ACCOUNT)
    scope_list = sorted(set(scopes))
    unknown = set(scope_list) - set(ApiKey.Scope.values)
    if unknown or not scope_list:
        raise ValidationFailed(
            "Scopes must be a non-empty subset of read, write, admin.",
            code="invalid_scopes",
            details={"unknown": sorted(unknown)},
        )
    _check_expiry(expires_at)
    generated = generate_key()
    key = ApiKey(
        agent=agent,
        name=name,
        prefix=generated.prefix,
        hashed_secret=generated.hashed_secret,
        scopes=scope_list,
        expires_at=expires_at,
        created_by_id=actor.user_id,
    )
    key.full_clean(exclude=["agent", "created_by"])
    with transaction.atomic():
        key.save()
        audit_record(
            actor=actor,
            action="core.api_key.create",
            account_id=agent.account_id,
            target=key,
            changes={"agent": agent.pk, "scopes": scope_list, "expires_at": expires_at},
        )
    return key, generated.full_key


def api_key_update(
    *, actor: Actor, key: ApiKey, name: str | None = None, expires_at: Any = ...
) -> ApiKey:
    """Rename a key or change its expiry (``expires_at=None`` removes it); nothing else."""
    actor.require(key.agent.account_id, MANAGE_ACCOUNT)
    changes: dict[str, Any] = {}
    if name is not None and name != key.name:
        changes["name"] = name[:200]
    if expires_at is not ... and expires_at != key.expires_at:
        _check_expiry(expires_at)
        changes["expires_at"] = expires_at
    if not changes:
        return key
    with transaction.atomic():
        credentials_changed()
        return row_update(
            actor=actor,
            instance=key,
            changes=changes,
            action="core.api_key.update",
            account_id=key.agent.account_id,
        )


def api_key_revoke(*, actor: Actor, key: ApiKey) -> ApiKey:
    """Idempotent: revoking a revoked key keeps its original revocation time."""
    actor.require(key.agent.account_id, MANAGE_ACCOUNT)
    with transaction.atomic():
        if ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        ):
            credentials_changed()
            audit_record(
                actor=actor,
                action="core.api_key.revoke",
                account_id=key.agent.account_id,
                target=key,
            )
    key.refresh_from_db(fields=["revoked_at"])
    return key


def api_key_delete(*, actor: Actor, key: ApiKey) -> None:
    """Remove a key for good (revoking keeps it visible; pruning deletes old ones anyway)."""
    actor.require(key.agent.account_id, MANAGE_ACCOUNT)
    with transaction.atomic():
        credentials_changed()
        row_delete(
            actor=actor,
            instance=key,
            action="core.api_key.delete",
            account_id=key.agent.account_id,
            changes={"prefix": key.prefix},
        )


def api_keys_prune(
    *, retention: timedelta, now: datetime | None = None, dry_run: bool = False
) -> int:
    """Delete keys revoked or expired longer ago than ``retention``; returns how many (with
    ``dry_run``, how many would go, deleting nothing).

    No ``credentials_changed``: a process that still caches one of these keys refuses it for its
    revocation or expiry, as the row it cached says."""
    cutoff = (now or timezone.now()) - retention
    old = ApiKey.objects.filter(Q(revoked_at__lt=cutoff) | Q(expires_at__lt=cutoff))
    if dry_run:
        return old.count()
    deleted, _ = old.delete()
    return deleted
