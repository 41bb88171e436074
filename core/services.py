"""Every write to core data goes through here (keyword-only, typed, explicit actor, atomic)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from core.api_keys import generate_key
from core.errors import ValidationFailed
from core.models import Account, Agent, ApiKey, Membership, Team


@transaction.atomic
def account_create(*, name: str, slug: str | None = None, owner: User | None = None) -> Account:
    account = Account(name=name, slug=slug or slugify(name)[:100])
    account.full_clean()
    account.save()
    if owner is not None:
        membership_grant(account=account, user=owner, role=Membership.Role.OWNER)
    return account


def membership_grant(*, account: Account, user: User, role: str) -> Membership:
    membership, _ = Membership.objects.get_or_create(account=account, user=user, role=role)
    return membership


@transaction.atomic
def agent_create(
    *,
    account: Account,
    name: str,
    description: str = "",
    metadata: dict[str, Any] | None = None,
    teams: Iterable[Team] = (),
) -> Agent:
    agent = Agent(account=account, name=name, description=description, metadata=metadata or {})
    agent.full_clean()
    agent.save()
    team_list = list(teams)
    if any(team.account_id != account.id for team in team_list):
        raise ValidationFailed(
            "Teams must belong to the agent's account.", code="team_account_mismatch"
        )
    agent.teams.set(team_list)
    return agent


def api_key_create(
    *,
    agent: Agent,
    scopes: Iterable[str] = ("read", "write"),
    name: str = "",
    expires_at: datetime | None = None,
    created_by: User | None = None,
) -> tuple[ApiKey, str]:
    """Create a key; returns the row and the full secret key, which is never retrievable again."""
    scope_list = sorted(set(scopes))
    unknown = set(scope_list) - set(ApiKey.Scope.values)
    if unknown or not scope_list:
        raise ValidationFailed(
            "Scopes must be a non-empty subset of read, write, admin.",
            code="invalid_scopes",
            details={"unknown": sorted(unknown)},
        )
    generated = generate_key()
    key = ApiKey(
        agent=agent,
        name=name,
        prefix=generated.prefix,
        hashed_secret=generated.hashed_secret,
        scopes=scope_list,
        expires_at=expires_at,
        created_by=created_by if created_by is not None and created_by.pk else None,
    )
    key.full_clean()
    key.save()
    return key, generated.full_key


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    """Idempotent: revoking a revoked key keeps its original revocation time."""
    ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    key.refresh_from_db(fields=["revoked_at"])
    return key


def api_keys_prune(*, retention: timedelta, now: datetime | None = None) -> int:
    """Delete keys revoked or expired longer ago than ``retention``; returns how many."""
    cutoff = (now or timezone.now()) - retention
    deleted, _ = ApiKey.objects.filter(revoked_at__lt=cutoff).delete()
    expired, _ = ApiKey.objects.filter(expires_at__lt=cutoff).delete()
    return deleted + expired
