"""The scoped ModelAdmin and inlines: permissions from roles, writes through services."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.actions import delete_selected as django_delete_selected
from django.contrib.admin.utils import get_fields_from_path, model_ngettext
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from core.actors import Actor
from core.admin_base.gates import MissingObjectMixin
from core.admin_base.lists import EstimatedCountPaginator, ScopedRelatedFieldListFilter
from core.admin_base.rules import Roles, ScopedRules
from core.errors import EngramError, NotFound
from core.metadata import metadata_check

# Set on a request whose save a service refused: the form is shown again with the message.
_REJECTION_ATTR = "_engram_admin_rejection"


def _rejecting(form_class: Any, message: str) -> Any:
    """The same form, invalid with ``message``: how a service's refusal is shown on the form."""

    def clean(self: forms.BaseForm) -> Any:
        form_class.clean(self)
        raise ValidationError(message)

    return type(form_class.__name__, (form_class,), {"clean": clean})


def _metadata_bounded(form_class: Any) -> Any:
    """The same form, its ``metadata`` within ``core.metadata``'s bound when the person changed
    it (a row stored before the bound keeps saving while its metadata is left alone)."""

    def clean_metadata(self: forms.BaseForm) -> Any:
        value = self.cleaned_data.get("metadata")
        if "metadata" in self.changed_data:
            try:
                metadata_check(value)
            except EngramError as exc:
                raise ValidationError(exc.message, code=exc.code) from exc
        return value

    return type(form_class.__name__, (form_class,), {"clean_metadata": clean_metadata})


class ServiceRefusalsMixin:
    """A service's refusal (an ``EngramError``) shown to the person instead of a server error:
    a refused save shows the form again with their input and the service's message (the view
    is atomic, so nothing of it is saved); a refused delete redirects with the message. Every
    scoped admin has it; admins of installation-wide data that save through services add it."""

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)  # type: ignore[misc]
        rejection = getattr(request, _REJECTION_ATTR, None)
        if rejection is not None:
            form = _rejecting(form, rejection.message)
        return form

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        view = super().changeform_view  # type: ignore[misc]
        try:
            return view(request, object_id, form_url, extra_context)
        except EngramError as exc:
            if request.method != "POST" or getattr(request, _REJECTION_ATTR, None) is not None:
                raise
            setattr(request, _REJECTION_ATTR, exc)
            return view(request, object_id, form_url, extra_context)

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        try:
            return super().delete_view(request, object_id, extra_context)  # type: ignore[misc]
        except EngramError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(request.get_full_path())


class AccountScopedAdmin(MissingObjectMixin, ServiceRefusalsMixin, ScopedRules, admin.ModelAdmin):
    """Base of every admin for account data. A missing id, a foreign one and one the role may
    not see all answer alike (``MissingObjectMixin``). Subclasses declare ``account_lookup`` and the
    ``*_roles``, and implement the service calls their roles allow:

    - ``service_create(request, actor, form)`` returns the created object;
    - ``service_update(request, actor, original, form)`` gets a fresh, scoped copy of the row;
    - ``service_delete(request, actor, obj)``.

    Large tables set ``large_table = True``: no row counts, no facets.
    """

    large_table: ClassVar[bool] = False
    # Show deletions as one line per object instead of collecting every related row.
    summarize_deletions: ClassVar[bool] = False
    list_defer: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.large_table:
            cls.show_full_result_count = False
            cls.show_facets = admin.ShowFacets.NEVER
            cls.paginator = EstimatedCountPaginator

    # --- reads -----------------------------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        if self.list_defer:
            queryset = queryset.defer(*self.list_defer)
        return self.scope(request, queryset)

    def get_list_filter(self, request: HttpRequest) -> Any:
        scoped: list[Any] = []
        for entry in super().get_list_filter(request):
            if isinstance(entry, str):
                field = get_fields_from_path(self.model, entry)[-1]
                if field.is_relation:
                    entry = (entry, ScopedRelatedFieldListFilter)
            scoped.append(entry)
        return scoped

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """An object never moves to another account."""
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and self.account_lookup == "account" and "account" not in fields:
            fields.append("account")
        return fields

    # --- permissions -----------------------------------------------------------------------

    def _may_obj(self, request: HttpRequest, roles: Roles, obj: Any) -> bool:
        if obj is None:
            return self.may(request, roles)
        return self.may(request, roles, self.account_id_of(obj))

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._may_obj(request, self.view_roles, obj) or self.has_change_permission(
            request, obj
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.may(request, self.add_roles)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._may_obj(request, self.change_roles, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._may_obj(request, self.delete_roles, obj)

    # --- forms -----------------------------------------------------------------------------

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        if "metadata" in form.base_fields:
            # Before narrowing: a subclass gets its fields anew from the model.
            form = _metadata_bounded(form)
        ids = self.writable(request) if obj is None else frozenset({self.account_id_of(obj)})
        self.narrow_fields(request, form.base_fields, ids)  # type: ignore[arg-type]
        return form

    # --- writes through services ------------------------------------------------------------

    def service_create(self, request: HttpRequest, actor: Actor, form: Any) -> models.Model:
        raise NotImplementedError(f"{type(self).__name__} adds nothing")

    def service_update(self, request: HttpRequest, actor: Actor, original: Any, form: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} changes nothing")

    def service_delete(self, request: HttpRequest, actor: Actor, obj: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} deletes nothing")

    def fresh(self, request: HttpRequest, obj: models.Model) -> Any:
        """The stored row (the form's instance carries the submitted values already)."""
        original = self.get_queryset(request).filter(pk=obj.pk).first()
        if original is None:
            raise NotFound(f"This {self.opts.verbose_name} no longer exists.")
        return original

    @staticmethod
    def changed(form: Any, allowed: Iterable[str]) -> dict[str, Any]:
        """The submitted values of the fields the user changed, among ``allowed``."""
        return {name: form.cleaned_data[name] for name in form.changed_data if name in allowed}

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        actor = self.actor(request)
        if change:
            self.service_update(request, actor, self.fresh(request, obj), form)
            return
        created = self.service_create(request, actor, form)
        obj.pk = created.pk
        obj._state.adding = False

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        # Many-to-many fields are the services' business (they read them from the form).
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        inline = getattr(formset, "engram_inline", None)
        if not isinstance(inline, AccountScopedInlineMixin):
            raise TypeError("inlines of a scoped admin must be scoped inlines")
        inline.save_through_services(request, form.instance, formset)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.service_delete(request, self.actor(request), obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        actor = self.actor(request)
        self.each(
            request, queryset, lambda obj: self.service_delete(request, actor, obj), "Deleted"
        )

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        if not self.summarize_deletions:
            return super().get_deleted_objects(objs, request)
        objs = list(objs)
        lacking = {
            str(self.opts.verbose_name)
            for obj in objs
            if not self.has_delete_permission(request, obj)
        }
        summary = [self.deletion_summary(obj) for obj in objs]
        return summary, {self.opts.verbose_name_plural: len(objs)}, lacking, []

    def deletion_summary(self, obj: Any) -> str:
        return f"{self.opts.verbose_name}: {obj}"

    # --- actions -----------------------------------------------------------------------------

    def each(
        self,
        request: HttpRequest,
        queryset: Iterable[Any],
        operation: Callable[[Any], Any],
        done: str,
    ) -> int:
        """Run ``operation`` per object; report each refusal, then how many succeeded."""
        succeeded = 0
        for obj in queryset:
            try:
                operation(obj)
            except EngramError as exc:
                messages.error(request, f"{obj}: {exc.message}")
            else:
                succeeded += 1
        if succeeded:
            messages.success(request, f"{done} {succeeded} {model_ngettext(self.opts, succeeded)}.")
        return succeeded

    def get_actions(self, request: HttpRequest) -> Any:
        actions: dict[str, Any] = super().get_actions(request)
        if actions.get("delete_selected") is not None:
            _, name, description = actions["delete_selected"]
            actions["delete_selected"] = (scoped_delete_selected, name, description)
        return actions


def scoped_delete_selected(
    modeladmin: AccountScopedAdmin, request: HttpRequest, queryset: QuerySet[Any]
) -> HttpResponse | None:
    """Django's confirmation page, then deletion one object at a time through the service,
    reporting what was refused instead of "Successfully deleted" for all."""
    if request.POST.get("post"):
        _, _, lacking, protected = modeladmin.get_deleted_objects(queryset, request)
        if not lacking and not protected:
            modeladmin.log_deletions(request, queryset)
            modeladmin.delete_queryset(request, queryset)  # the rows log_deletions read
            return None
    return django_delete_selected(modeladmin, request, queryset)


class AccountScopedInlineMixin(ScopedRules):
    """Inlines of scoped admins: permissions follow the parent object's account; rows are
    saved through the hooks below, never with ``formset.save()``."""

    parent_model: type[models.Model]

    def _parent_account(self, obj: Any) -> Any:
        parent_admin = self.admin_site._registry.get(self.parent_model)
        if obj is None:
            return ...
        if isinstance(parent_admin, ScopedRules):
            return parent_admin.account_id_of(obj)
        return None

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may(request, self.view_roles, self._parent_account(obj)) or (
            self.has_change_permission(request, obj)
        )

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may(request, self.add_roles, self._parent_account(obj))

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may(request, self.change_roles, self._parent_account(obj))

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may(request, self.delete_roles, self._parent_account(obj))

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return self.scope(request, super().get_queryset(request))  # type: ignore[misc]

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        formset = super().get_formset(request, obj, **kwargs)  # type: ignore[misc]
        formset.engram_inline = self
        account = self._parent_account(obj)
        ids = self.writable(request) if account is ... else frozenset({account})
        self.narrow_fields(request, formset.form.base_fields, ids)
        return formset

    def save_through_services(self, request: HttpRequest, parent: Any, formset: Any) -> None:
        actor = self.actor(request)
        # What formset.save() would record, for the admin's change message.
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        for form in formset.initial_forms:
            if formset.can_delete and form.cleaned_data.get("DELETE"):
                self.service_delete(request, actor, form.instance)
                formset.deleted_objects.append(form.instance)
            elif form.has_changed():
                original = self.get_queryset(request).filter(pk=form.instance.pk).first()
                if original is None:
                    raise NotFound(f"This {self.model._meta.verbose_name} no longer exists.")
                self.service_update(request, actor, original, form)
                formset.changed_objects.append((form.instance, form.changed_data))
        for form in formset.extra_forms:
            if form.has_changed() and not form.cleaned_data.get("DELETE"):
                self.service_create(request, actor, parent, form)
                formset.new_objects.append(form.instance)

    def service_create(self, request: HttpRequest, actor: Actor, parent: Any, form: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} adds nothing")

    def service_update(self, request: HttpRequest, actor: Actor, original: Any, form: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} changes nothing")

    def service_delete(self, request: HttpRequest, actor: Actor, obj: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} deletes nothing")


class AccountScopedTabularInline(AccountScopedInlineMixin, admin.TabularInline):
    extra = 0


class AccountScopedStackedInline(AccountScopedInlineMixin, admin.StackedInline):
    extra = 0
