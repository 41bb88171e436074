"""Reusable query filters. Tenancy is enforced here, inside the query, never after it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from django.db import models

if TYPE_CHECKING:
    from core.actors import Actor

M = TypeVar("M", bound=models.Model)


class AccountScopedQuerySet(models.QuerySet[M], Generic[M]):
    """For models with an ``account`` foreign key (directly or through ``account_lookup``)."""

    account_lookup = "account"

    def for_actor(self, actor: Actor) -> AccountScopedQuerySet[M]:
        return self.for_accounts(actor.account_ids)

    def for_accounts(self, account_ids: Any) -> AccountScopedQuerySet[M]:
        return self.filter(**{f"{self.account_lookup}_id__in": list(account_ids)})
