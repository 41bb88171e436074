"""Roles, account lookups and choice scoping shared by scoped admins and inlines."""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.contrib import admin
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from core.actors import READ, Actor, actor_for_user
from core.admin_base.lists import ScopedRawIdWidget
from core.models import Account

# A pseudo-role nobody holds through a membership: the operation is for superusers only.
SUPERUSERS_ONLY: frozenset[str] = frozenset({"__superusers__"})
Roles = frozenset[str] | None  # None: nobody, not even a superuser (no service does it)

_ACTOR_ATTR = "_engram_admin_actor"


def request_actor(request: HttpRequest) -> Actor:
    """The person behind an admin request, computed once per request."""
    cached = getattr(request, _ACTOR_ATTR, None)
    if cached is None or cached.user_id != getattr(request.user, "pk", None):
        cached = actor_for_user(request.user)
        setattr(request, _ACTOR_ATTR, cached)
    return cached


def forget_actor(request: HttpRequest) -> None:
    """Drop the cached actor (after creating an account, so it can act there)."""
    setattr(request, _ACTOR_ATTR, None)


def account_lookup_for(model: type[models.Model], admin_site: admin.AdminSite) -> str | None:
    """How ``model`` reaches its account: its scoped admin's ``account_lookup``, ``pk`` for
    accounts themselves, ``account`` for a model with such a field, else None (unscoped)."""
    if model is Account:
        return "pk"
    model_admin = admin_site._registry.get(model)
    if isinstance(model_admin, ScopedRules):
        return model_admin.account_lookup
    if any(f.name == "account" for f in model._meta.get_fields()):
        return "account"
    return None


class ScopedRules:
    """Roles, account lookups and choice scoping shared by scoped admins and inlines."""

    admin_site: admin.AdminSite
    model: type[models.Model]

    # Path from the model to its account, as in a queryset filter ("account",
    # "agent__account"); "pk" for the Account model itself.
    account_lookup: ClassVar[str] = "account"
    # Who may do what, per account. Owners always may (``Actor.has_role``) unless the value is
    # SUPERUSERS_ONLY; None means nobody, superusers included (no service does it here).
    view_roles: ClassVar[Roles] = READ
    add_roles: ClassVar[Roles] = None
    change_roles: ClassVar[Roles] = None
    delete_roles: ClassVar[Roles] = None
    # Form fields choosing among unscoped models (e.g. users) that the admin scopes itself;
    # any other choice field over an unscoped model offers nothing to non-superusers.
    unscoped_choice_fields: ClassVar[tuple[str, ...]] = ()

    def actor(self, request: HttpRequest) -> Actor:
        return request_actor(request)

    def is_superuser(self, request: HttpRequest) -> bool:
        return bool(self.actor(request).is_superuser and request.user.is_staff)

    def accounts_for(self, request: HttpRequest, roles: Roles) -> frozenset[int]:
        """The accounts where the user may do what ``roles`` guards (all, for superusers)."""
        actor = self.actor(request)
        if roles is None:
            return frozenset()
        if actor.is_superuser:
            return actor.account_ids
        if roles == SUPERUSERS_ONLY:
            return frozenset()
        return actor.accounts_with(roles)

    def may(self, request: HttpRequest, roles: Roles, account_id: Any = ...) -> bool:
        """May the user do what ``roles`` guards: in ``account_id``, or (not given) anywhere?"""
        if roles is None or not request.user.is_active or not request.user.is_staff:
            return False
        actor = self.actor(request)
        if actor.is_superuser:
            return True
        if roles == SUPERUSERS_ONLY:
            return False
        if account_id is ...:
            return bool(actor.accounts_with(roles))
        return actor.has_role(account_id, roles)

    def viewable(self, request: HttpRequest) -> frozenset[int] | None:
        """Accounts whose rows the user sees here (None: every row, for superusers)."""
        if self.is_superuser(request):
            return None
        return self.accounts_for(request, self.view_roles) | self.accounts_for(
            request, self.change_roles
        )

    def writable(self, request: HttpRequest) -> frozenset[int] | None:
        """Accounts a form here may refer to (None: any, for superusers adding)."""
        if self.is_superuser(request):
            return None
        return self.accounts_for(request, self.add_roles) | self.accounts_for(
            request, self.change_roles
        )

    def scope(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        ids = self.viewable(request)
        if ids is None:
            return queryset
        return queryset.filter(**{f"{self.account_lookup}__in": sorted(ids)})

    def account_id_of(self, obj: models.Model) -> int | None:
        """The account of ``obj`` along ``account_lookup`` (ids only where possible)."""
        parts = self.account_lookup.split("__")
        if parts == ["pk"]:
            return obj.pk
        target: Any = obj
        for part in parts[:-1]:
            target = getattr(target, part)
            if target is None:
                return None
        return getattr(target, f"{parts[-1]}_id")

    def related_choice_filter(
        self, request: HttpRequest, related: type[models.Model], ids: frozenset[int] | None
    ) -> dict[str, Any] | None:
        """A filter keeping ``related`` objects of accounts ``ids`` (None: no filter)."""
        if ids is None:
            return None
        lookup = account_lookup_for(related, self.admin_site)
        if lookup is None:
            return {"pk__in": []}
        return {f"{lookup}__in": sorted(ids)}

    def narrow_fields(
        self, request: HttpRequest, fields: dict[str, forms.Field], ids: frozenset[int] | None
    ) -> None:
        """Limit every choice field of a form to objects of accounts ``ids``."""
        for name, field in fields.items():
            if name in self.unscoped_choice_fields or not isinstance(field, forms.ModelChoiceField):
                continue
            queryset = field.queryset
            if queryset is None:
                continue
            limit = self.related_choice_filter(request, queryset.model, ids)
            if limit is None:
                continue
            field.queryset = queryset.filter(**limit)
            widget = getattr(field.widget, "widget", field.widget)
            if isinstance(widget, ScopedRawIdWidget):
                widget.queryset = field.queryset

    def _choices(
        self, db_field: models.Field[Any, Any], request: HttpRequest, kwargs: dict[str, Any]
    ) -> None:
        if db_field.name in self.unscoped_choice_fields or "queryset" in kwargs:
            return
        assert db_field.remote_field is not None
        related = db_field.remote_field.model
        limit = self.related_choice_filter(request, related, self.writable(request))
        queryset = self.get_field_queryset(kwargs.get("using"), db_field, request)  # type: ignore[attr-defined]
        if queryset is None:
            queryset = related._default_manager.using(kwargs.get("using"))
        kwargs["queryset"] = queryset if limit is None else queryset.filter(**limit)
        if "widget" not in kwargs and db_field.name in getattr(self, "raw_id_fields", ()):
            kwargs["widget"] = ScopedRawIdWidget(
                db_field.remote_field,
                self.admin_site,
                using=kwargs.get("using"),
                queryset=kwargs["queryset"],
            )

    def formfield_for_foreignkey(
        self, db_field: models.ForeignKey[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> forms.ModelChoiceField[Any] | None:
        self._choices(db_field, request, kwargs)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]

    def formfield_for_manytomany(
        self, db_field: models.ManyToManyField[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> forms.ModelMultipleChoiceField[Any] | None:
        self._choices(db_field, request, kwargs)
        return super().formfield_for_manytomany(db_field, request, **kwargs)  # type: ignore[misc]
