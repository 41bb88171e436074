"""The one admin base: every app's admin for account data uses it (docs/admin.md).

People get what their roles in each account allow (``core.actors``), not Django's model
permissions: a staff user sees and changes only the data of accounts where they hold a
membership, with what their role there permits; superusers see everything. Each ``ModelAdmin``
declares where its model's account is (``account_lookup``) and which roles may view, add, change
and delete; the base class then

- scopes the queryset inside the query, so a foreign id answers exactly like a missing one;
- answers the permission questions per account, and per object from the object's account;
- limits foreign-key and many-to-many choices (and list filters) to the accounts the user may
  write, and an existing object's choices to its own account;
- saves, deletes and runs actions through services with the acting person, turning a service's
  refusal into a form error or an error message instead of a claimed success.

Installation-wide admins (schedules, job runs) use ``InstallationAdminMixin``; people and groups
use ``SuperuserOnlyAdminMixin``. A test fails if any registered admin uses none of these.
"""

from core.admin_base.gates import (
    AdminSignInLockout,
    InstallationAdminMixin,
    SuperuserOnlyAdminMixin,
    reregister,
)
from core.admin_base.lists import (
    EstimatedCountPaginator,
    ScopedRawIdWidget,
    ScopedRelatedFieldListFilter,
    short_text,
    short_when,
)
from core.admin_base.options import (
    AccountScopedAdmin,
    AccountScopedInlineMixin,
    AccountScopedStackedInline,
    AccountScopedTabularInline,
    ServiceRefusalsMixin,
    scoped_delete_selected,
)
from core.admin_base.rules import (
    SUPERUSERS_ONLY,
    Roles,
    ScopedRules,
    account_lookup_for,
    forget_actor,
    request_actor,
)

__all__ = [
    "SUPERUSERS_ONLY",
    "AccountScopedAdmin",
    "AccountScopedInlineMixin",
    "AccountScopedStackedInline",
    "AccountScopedTabularInline",
    "AdminSignInLockout",
    "EstimatedCountPaginator",
    "InstallationAdminMixin",
    "Roles",
    "ScopedRawIdWidget",
    "ScopedRelatedFieldListFilter",
    "ScopedRules",
    "ServiceRefusalsMixin",
    "SuperuserOnlyAdminMixin",
    "account_lookup_for",
    "forget_actor",
    "request_actor",
    "reregister",
    "scoped_delete_selected",
    "short_text",
    "short_when",
]
