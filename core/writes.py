"""How services change and delete stored rows: every app's services use these.

A change never saves an instance read earlier (which would write back every field as it was
then, undoing concurrent work such as ingestion's statistics or a status change). Instead:
``changes_of`` keeps the fields whose value differs and refuses unknown ones, ``changes_validate``
checks those values on a copy, and ``row_update`` writes exactly them in one UPDATE, inside a
transaction that also records the audit event, then reloads the instance (its loaded fields: a
deferred one such as a document's original stays deferred) so the caller sees the row as it is
now, concurrent changes included. Database
constraints stay the final judge: their violations become the caller's named 4xx errors.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from core.actors import Actor
from core.audit import audit_record
from core.errors import EngramError, NotFound, ValidationFailed

M = TypeVar("M", bound=models.Model)

# Constraint name -> the error its violation means to the caller ("" matches any constraint).
Conflicts = Mapping[str, Callable[[], EngramError]]


def row_locked(
    rows: models.QuerySet[M],
    pk: int,
    *,
    missing: Callable[[], EngramError],
    no_key: bool = False,
) -> M:
    """The row ``pk`` of ``rows``, locked until the caller's transaction ends. A row deleted
    since the caller read it (a request racing its deletion) raises ``missing()``, the same 404
    as a row that never was. ``no_key``: ``FOR NO KEY UPDATE``, for a lock that serialises the
    row's writers without blocking rows that reference it (their foreign key checks take a key
    share lock, which only ``FOR UPDATE`` blocks)."""
    locked = rows.select_for_update(no_key=no_key).filter(pk=pk).first()
    if locked is None:
        raise missing()
    return locked


def changes_of(instance: models.Model, fields: Mapping[str, Any], allowed: Iterable[str]) -> dict:
    """The given fields whose values differ from ``instance``; 400 ``unknown_field`` for a field
    the operation does not change."""
    unknown = set(fields) - set(allowed)
    if unknown:
        raise ValidationFailed(
            "Unknown fields.", code="unknown_field", details={"fields": sorted(unknown)}
        )
    return {name: value for name, value in fields.items() if getattr(instance, name) != value}


def changes_validate(instance: models.Model, changes: Mapping[str, Any]) -> None:
    """Run the model's field validation on the changed values (the others were valid already),
    on a copy: the instance itself is left as read."""
    candidate = copy.copy(instance)
    for name, value in changes.items():
        setattr(candidate, name, value)
    try:
        candidate.full_clean(
            exclude=[f.name for f in type(instance)._meta.fields if f.name not in changes],
            validate_unique=False,
            validate_constraints=False,
        )
    except DjangoValidationError as exc:
        raise ValidationFailed("Invalid input.", details=exc.message_dict) from exc


def constraint_name(exc: IntegrityError) -> str:
    """The name of the constraint an IntegrityError violated (psycopg reports it)."""
    diag = getattr(exc.__cause__, "diag", None)
    return str(getattr(diag, "constraint_name", None) or "")


def _conflict(exc: IntegrityError, conflicts: Conflicts) -> EngramError | None:
    name = constraint_name(exc)
    factory = conflicts.get(name) or conflicts.get("")
    return factory() if factory else None


def row_update(
    *,
    actor: Actor,
    instance: M,
    changes: Mapping[str, Any],
    action: str,
    account_id: int | None,
    also: Mapping[str, Any] | None = None,
    audit_changes: Mapping[str, Any] | None = None,
    conflicts: Conflicts | None = None,
    missing: Callable[[], EngramError] | None = None,
    then: Callable[[], None] | None = None,
) -> M:
    """Write ``changes`` (and the derived columns ``also``) to the row in one UPDATE, record
    ``action`` in the audit log with ``audit_changes`` (default: ``changes``), run ``then`` in the
    same transaction, and reload ``instance``.

    A row deleted meanwhile raises ``missing()`` (default 404); a violated constraint raises
    its ``conflicts`` entry, and anything else propagates.
    """
    model = type(instance)
    written = {**changes, **(also or {})}
    if any(f.name == "updated_at" for f in model._meta.fields):
        written["updated_at"] = timezone.now()
    try:
        with transaction.atomic():
            if written and not model._default_manager.filter(pk=instance.pk).update(**written):
                raise (missing or _not_found(model))()
            audit_record(
                actor=actor,
                action=action,
                account_id=account_id,
                target=instance,
                changes=dict(changes if audit_changes is None else audit_changes),
            )
            if then is not None:
                then()
    except IntegrityError as exc:
        error = _conflict(exc, conflicts or {})
        if error is None:
            raise
        raise error from exc
    instance.refresh_from_db()
    return instance


def row_delete(
    *,
    actor: Actor,
    instance: models.Model,
    action: str,
    account_id: int | None,
    changes: Mapping[str, Any] | None = None,
) -> None:
    """Delete the row (its dependants as their foreign keys say) and record who did it."""
    with transaction.atomic():
        audit_record(
            actor=actor,
            action=action,
            account_id=account_id,
            target=instance,
            changes=dict(changes or {}),
        )
        type(instance)._default_manager.filter(pk=instance.pk).delete()


def _not_found(model: type[models.Model]) -> Callable[[], EngramError]:
    label = model._meta.verbose_name
    return lambda: NotFound(f"No such {label}.", code=f"{model._meta.model_name}_not_found")
