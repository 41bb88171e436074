"""Admins outside accounts: installation-wide pages, superuser-only pages, admin sign-in."""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from core.actors import is_installation_operator

_OPERATOR_ATTR = "_engram_admin_installation_operator"


class MissingObjectMixin:
    """An object URL (change, delete, history, ...) naming an id that is not there answers what
    the same URL answers for an id that is: 403 to someone who may not use this admin at all,
    else a plain 404 page. Django redirects a missing id to the index with a message naming it,
    after checking permissions on the object for an existing one (the history view answered
    403 for an existing user and 302 for a missing one: an oracle of which ids exist)."""

    admin_site: admin.AdminSite

    def _get_obj_does_not_exist_redirect(
        self, request: HttpRequest, opts: Any, object_id: str
    ) -> HttpResponse:
        if not self.has_view_or_change_permission(request):  # type: ignore[attr-defined]
            raise PermissionDenied
        context = {**self.admin_site.each_context(request), "title": "Page not found"}
        return TemplateResponse(request, "admin/404.html", context, status=404)


class _GatedAdminMixin(MissingObjectMixin):
    """Permissions from ``_allowed`` (not Django's model permissions), still honouring what the
    wrapped admin itself forbids (e.g. a read-only third-party admin)."""

    def _allowed(self, request: HttpRequest) -> bool:
        raise NotImplementedError

    def _also(self, name: str, request: HttpRequest, *args: Any) -> bool:
        method = getattr(super(), name)
        if getattr(method, "__func__", None) in _MODEL_PERMISSION_CHECKS:
            return True  # Django's default: model permissions, which roles replace here
        return bool(method(request, *args))

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self._allowed(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._allowed(request) and self._also("has_view_permission", request, obj)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return self._allowed(request) and self._also("has_add_permission", request, *args)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._allowed(request) and self._also("has_change_permission", request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._allowed(request) and self._also("has_delete_permission", request, obj)


_MODEL_PERMISSION_CHECKS = {
    getattr(base, name)
    for base in (admin.options.BaseModelAdmin, admin.ModelAdmin)
    for name in (
        "has_view_permission",
        "has_add_permission",
        "has_change_permission",
        "has_delete_permission",
    )
}


class InstallationAdminMixin(_GatedAdminMixin):
    """Installation-wide things (schedules, job runs): superusers and the installation
    operators group, whatever their memberships."""

    def _allowed(self, request: HttpRequest) -> bool:
        # Asked for every schedule model on every page's sidebar: once per request.
        cached = getattr(request, _OPERATOR_ATTR, None)
        if cached is None:
            cached = bool(request.user.is_staff) and is_installation_operator(request.user)
            setattr(request, _OPERATOR_ATTR, cached)
        return bool(cached)


class SuperuserOnlyAdminMixin(_GatedAdminMixin):
    """People, groups and login records: superusers only (a staff user who could edit users
    could make themselves a superuser)."""

    def _allowed(self, request: HttpRequest) -> bool:
        user = request.user
        return bool(user.is_active and user.is_staff and getattr(user, "is_superuser", False))


class AdminSignInLockout(AxesStandaloneBackend):
    """django-axes' lockout check for admin sign-ins (the first authentication backend).

    Axes refuses any ``authenticate()`` without a request; a call without one is no web
    sign-in (Django's test client ``login()``, a shell), so there is nothing to count or lock
    and the next backend decides. Every sign-in over HTTP carries its request.
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is not None:
            # Raises when the username is locked; otherwise the next backend decides.
            super().authenticate(request, username=username, password=password, **kwargs)
        return None


def reregister(model: type[models.Model], mixin: type, site: admin.AdminSite = admin.site) -> None:
    """Replace a third-party admin by a subclass with ``mixin``'s permissions."""
    current = type(site._registry[model])
    site.unregister(model)
    site.register(model, type(current.__name__, (mixin, current), {}))
