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


class NextGenerationDeferred(models.Manager[M]):
    """The default manager of a table with embeddings (``core.embeddings.generations``): the
    other generation's vector and its model are never loaded. No code reads them through the
    ORM (the migration writes and reads them in SQL), so loading them only cost a parsed
    vector per row while a generation is built or kept; and an instance saved after the build
    wrote them would have written back what it had read (Django saves only the loaded fields of
    an instance with deferred ones)."""

    def get_queryset(self) -> models.QuerySet[M]:
        return super().get_queryset().defer("embedding_next", "embedding_next_model")


class EmbeddedManager(
    NextGenerationDeferred[M],
    models.Manager.from_queryset(AccountScopedQuerySet),  # type: ignore[misc]
):
    """``NextGenerationDeferred`` for an account's units (``AccountScopedQuerySet``)."""
