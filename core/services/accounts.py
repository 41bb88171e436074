"""Accounts, memberships and staff users.

Installation-level writes (accounts' creation, slugs and activity, staff users) belong to
superusers and to operators' command-line tools (an actor without a user or an agent); an
account's owners manage everything inside it: its name and memberships.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from typing import Any

from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.utils.text import slugify

from core.actors import MANAGE_ACCOUNT, Actor, actor_for_account
from core.audit import audit_record
from core.errors import Conflict, PermissionDenied, ValidationFailed
from core.jobs import app_modules
from core.key_cache import credentials_changed
from core.models import Account, Membership
from core.writes import changes_of, changes_validate, row_delete, row_update


def require_installation(actor: Actor) -> None:
    """Superusers and command-line tools only; never an agent or an account's member."""
    if actor.agent is not None or (actor.user is not None and not actor.is_superuser):
        raise PermissionDenied(
            "This is an installation-wide operation (superusers only).",
            code="superuser_required",
        )


@transaction.atomic
def account_create(
    *,
    name: str,
    slug: str | None = None,
    owner: User | None = None,
    actor: Actor | None = None,
) -> Account:
    """Installation-level (superusers, the bootstrap and the operator CLI; no actor: a tool)."""
    if actor is not None:
        require_installation(actor)
    account = Account(name=name, slug=slug or slugify(name)[:100])
    try:
        account.full_clean()
    except DjangoValidationError as exc:
        if "slug" in exc.message_dict and Account.objects.filter(slug=account.slug).exists():
            raise Conflict("An account with this slug exists.", code="slug_taken") from exc
        raise ValidationFailed("Invalid account.", details=exc.message_dict) from exc
    account.save()
    # The installation-level actor was built before the account existed: let it act there.
    actor = replace(actor, account_ids=actor.account_ids | {account.pk}) if actor else None
    audit_record(
        actor=actor or actor_for_account(account.pk),
        action="core.account.create",
        account_id=account.pk,
        target=account,
        changes={"name": account.name, "slug": account.slug},
    )
    if owner is not None:
        membership_grant(account=account, user=owner, role=Membership.Role.OWNER, actor=actor)
    account_setup(account_id=account.pk)
    return account


def account_setup(*, account_id: int) -> None:
    """What each app makes for a new account (memory: the ``default`` pool), through its
    optional ``<app>/account_setup.py`` hook ``account_setup(*, account_id)``, found by name
    (``core.jobs.app_modules``) so core imports no app. Idempotent: a hook may run again."""
    for _, module in app_modules("account_setup"):
        module.account_setup(account_id=account_id)


ACCOUNT_UPDATABLE_FIELDS = ("name", "slug", "is_active")
# Owners may rename their account; its slug (used by tools) and activity are installation-level.
_ACCOUNT_INSTALLATION_FIELDS = frozenset({"slug", "is_active"})


def account_update(*, actor: Actor, account: Account, **fields: Any) -> Account:
    actor.require(account.pk, MANAGE_ACCOUNT)
    changes = changes_of(account, fields, ACCOUNT_UPDATABLE_FIELDS)
    if not changes:
        return account
    if _ACCOUNT_INSTALLATION_FIELDS & set(changes):
        require_installation(actor)
    changes_validate(account, changes)
    with transaction.atomic():
        credentials_changed()  # API keys load the account's row: is_active decides
        return row_update(
            actor=actor,
            instance=account,
            changes=changes,
            action="core.account.update",
            account_id=account.pk,
            conflicts={
                "": lambda: Conflict("An account with this slug exists.", code="slug_taken")
            },
        )


def account_delete(*, actor: Actor, account: Account) -> None:
    """Installation-level: the account and everything in it (bulk rows cascade in the database).

    The audit event has no account: the account's own events go with it.
    """
    require_installation(actor)
    with transaction.atomic():
        credentials_changed()
        row_delete(
            actor=actor,
            instance=account,
            action="core.account.delete",
            account_id=None,
            changes={"name": account.name, "slug": account.slug},
        )


# --- memberships -------------------------------------------------------------------------------


def _check_role(role: str) -> None:
    if role not in Membership.Role.values:
        raise ValidationFailed(
            f"Unknown role {role!r}; one of {', '.join(Membership.Role.values)}.",
            code="invalid_role",
            details={"roles": list(Membership.Role.values)},
        )


def _keep_an_owner(membership: Membership) -> None:
    """Refuse to remove an account's last owner (locks the owners' rows: concurrent removals
    of two owners cannot both pass)."""
    if membership.role != Membership.Role.OWNER:
        return
    others = list(
        Membership.objects.select_for_update()
        .filter(account_id=membership.account_id, role=Membership.Role.OWNER)
        .exclude(pk=membership.pk)
        .values_list("pk", flat=True)
    )
    if not others:
        raise Conflict("An account keeps at least one owner.", code="last_owner")


@transaction.atomic
def membership_grant(
    *, account: Account, user: User, role: str, actor: Actor | None = None
) -> Membership:
    """Give ``user`` ``role`` in ``account`` (idempotent). Owners grant roles in their accounts;
    no actor means an installation tool (the bootstrap, ``create_member``)."""
    actor = actor or actor_for_account(account.pk)
    actor.require(account.pk, MANAGE_ACCOUNT)
    _check_role(role)
    membership, created = Membership.objects.get_or_create(account=account, user=user, role=role)
    if created:
        audit_record(
            actor=actor,
            action="core.membership.grant",
            account_id=account.pk,
            target=membership,
            changes={"user": user.pk, "username": user.get_username(), "role": role},
        )
    return membership


@transaction.atomic
def membership_update(*, actor: Actor, membership: Membership, role: str) -> Membership:
    actor.require(membership.account_id, MANAGE_ACCOUNT)
    _check_role(role)
    if role == membership.role:
        return membership
    _keep_an_owner(membership)
    return row_update(
        actor=actor,
        instance=membership,
        changes={"role": role},
        action="core.membership.update",
        account_id=membership.account_id,
        audit_changes={"user": membership.user_id, "from": membership.role, "to": role},
        conflicts={"": lambda: Conflict("The person already has this role.", code="role_held")},
    )


@transaction.atomic
def membership_revoke(*, actor: Actor, membership: Membership) -> None:
    actor.require(membership.account_id, MANAGE_ACCOUNT)
    _keep_an_owner(membership)
    row_delete(
        actor=actor,
        instance=membership,
        action="core.membership.revoke",
        account_id=membership.account_id,
        changes={"user": membership.user_id, "role": membership.role},
    )


# --- staff users -------------------------------------------------------------------------------


def staff_user_ensure(
    *, actor: Actor, username: str, password: str | None = None
) -> tuple[User, str | None]:
    """Create or update a staff user who signs in to the admin (installation-level).

    With ``password`` it is validated and set. Without it an existing user keeps theirs and a
    new user gets a generated one, returned once (like an API key's secret): the only way for a
    new person to sign in without a superuser. Returns the user and the generated password.
    """
    require_installation(actor)
    generated: str | None = None
    with transaction.atomic():
        user = User.objects.select_for_update().filter(username=username).first()
        created = user is None
        if user is None:
            user = User(username=username, is_staff=True, is_active=True)
            try:
                user.full_clean(exclude=["password"])
            except DjangoValidationError as exc:
                raise ValidationFailed("Invalid username.", details=exc.message_dict) from exc
            if password is None:
                generated = password = secrets.token_urlsafe(12)
        changes: dict[str, Any] = {}
        if not user.is_staff or not user.is_active:
            user.is_staff = user.is_active = True
            changes.update(is_staff=True, is_active=True)
        if password is not None:
            if generated is None:
                try:
                    validate_password(password, user)
                except DjangoValidationError as exc:
                    raise ValidationFailed(
                        " ".join(exc.messages), code="weak_password", details={}
                    ) from exc
            user.set_password(password)
            changes["password"] = "changed"  # noqa: S105 (a marker, never the value)
        if created:
            user.save()
        elif changes:
            fields = [f for f in ("is_staff", "is_active") if f in changes]
            user.save(update_fields=[*fields, *(["password"] if password is not None else [])])
        if created or changes:
            audit_record(
                actor=actor,
                action="core.user.create" if created else "core.user.update",
                account_id=None,
                target=user,
                changes={"username": username, **changes},
            )
    return user, generated
