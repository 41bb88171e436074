"""Review before change (docs/memory/review.md).

A *change kind* is a name, an applier ``apply(*, account, actor, payload) -> dict`` and the JSON
payload the applier reads. Automatic upkeep proposes a change with ``change_submit``: under the
``auto`` policy of the context (or pool) it is applied at once; under ``review`` it is stored as
a ``PendingChange`` with what a person needs to decide (before, after, the cluster's members,
the reason) and nothing changes until an owner or operator approves it. Agents see the current
data meanwhile. A decision is a compare-and-set on the row's status (one decision wins, an
expired change is never applied), audited; the applier runs after the claim, outside the claim's
transaction (appliers may embed), and a change whose data moved meanwhile ends ``failed`` with
the applier's refusal, never half-applied.

Registering a kind is one line (``memory.maintenance.services.change_kinds``)::

    change_kind_register("cluster_rewrite", cluster_rewrite_apply)
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.actors import Actor
from core.audit import _jsonable, audit_record
from core.errors import Conflict, EngramError, PermissionDenied, ValidationFailed
from core.models import Account
from memory.models import ChangePolicy, MemoryContext, MemoryPool, PendingChange
from memory.roles import MANAGE_MEMORY

logger = logging.getLogger("engram.memory")

MAX_REASON_CHARS = 2000
MAX_BULK = 100
# The kinds docs/memory/review.md documents (the API filters by these; each is registered with its
# applier in ``memory.maintenance.services.change_kinds``).
KNOWN_KINDS = (
    "agent_write",
    "cluster_rewrite",
    "dedup_merge",
    "importance_decay",
    "promotion",
    "rot_archive",
)


class Applier(Protocol):
    def __call__(
        self, *, account: Account, actor: Actor, payload: dict[str, Any]
    ) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class ChangeKind:
    name: str
    apply: Callable[..., Mapping[str, Any]]
    title: str = ""


_KINDS: dict[str, ChangeKind] = {}


def change_kind_register(name: str, apply: Applier | Callable[..., Any], title: str = "") -> None:
    """Declare a kind of change: ``apply(*, account, actor, payload)`` makes it happen (raising
    an ``EngramError`` when the data no longer allows it) and returns what it did (JSON)."""
    _KINDS[name] = ChangeKind(name, apply, title or name.replace("_", " "))


def change_kinds() -> dict[str, ChangeKind]:
    """Every registered kind (the built-in ones are registered on first use)."""
    import memory.maintenance.services.change_kinds
    import memory.maintenance.services.cluster_rewrite  # noqa: F401  (registers cluster_rewrite)

    return _KINDS


def _kind(name: str) -> ChangeKind:
    kinds = change_kinds()
    if name not in kinds:
        raise ValidationFailed(
            "Unknown kind of change.",
            code="invalid_change_kind",
            details={"choices": sorted(kinds)},
        )
    return kinds[name]


# --- proposing -----------------------------------------------------------------------------


@dataclass
class Submitted:
    """What ``change_submit`` did: ``applied`` with the applier's ``result``, or ``change``
    (pending, or the earlier rejection of the same proposal, which is not proposed again)."""

    applied: bool
    result: dict[str, Any] = field(default_factory=dict)
    change: PendingChange | None = None


def fingerprint_of(kind: str, payload: Mapping[str, Any]) -> str:
    text = json.dumps([kind, _jsonable(dict(payload))], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def policy_of(context: MemoryContext | None = None, pool: MemoryPool | None = None) -> str:
    holder = context if context is not None else pool
    return str(holder.change_policy) if holder is not None else ChangePolicy.AUTO


def change_submit(
    *,
    actor: Actor,
    account_id: int,
    kind: str,
    payload: Mapping[str, Any],
    context: MemoryContext | None = None,
    pool: MemoryPool | None = None,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
    members: Sequence[Any] = (),
    reason: str = "",
    fingerprint: str = "",
    policy: str = "",
) -> Submitted:
    """Apply a change now (policy ``auto``) or hold it for review (``review``). The policy is
    the context's (or pool's) ``change_policy`` unless ``policy`` names another (the memory
    tools' writes follow ``agent_write_policy``). The same proposal (``fingerprint``, by default
    of kind and payload) pending already is that change; rejected before, it is not proposed
    again."""
    spec = _kind(kind)
    payload = _jsonable(dict(payload))
    policy = policy or policy_of(context, pool)
    if policy != ChangePolicy.REVIEW:
        account = Account.objects.get(pk=account_id)
        return Submitted(True, dict(spec.apply(account=account, actor=actor, payload=payload)))
    fingerprint = fingerprint or fingerprint_of(kind, payload)
    earlier = sorted(
        PendingChange.objects.filter(
            account_id=account_id,
            fingerprint=fingerprint,
            status__in=(PendingChange.Status.PENDING, PendingChange.Status.REJECTED),
        ),
        key=lambda c: (c.status != PendingChange.Status.PENDING, -c.pk),
    )[:1]
    if earlier:
        return Submitted(False, change=earlier[0])
    change = PendingChange(
        account_id=account_id,
        context=context,
        pool=pool,
        kind=kind,
        payload=payload,
        before=_jsonable(dict(before or {})),
        after=_jsonable(dict(after or {})),
        members=_jsonable(list(members)),
        reason=reason,
        fingerprint=fingerprint,
        proposed_by=str(actor)[:300],
        agent=actor.agent,
        expires_at=timezone.now() + timedelta(days=settings.MEMORY_PENDING_CHANGE_TTL_DAYS),
    )
    try:
        with transaction.atomic():
            change.save(force_insert=True)
            audit_record(
                actor=actor,
                action="memory.change.propose",
                account_id=account_id,
                target=change,
                changes={"kind": kind, "reason": reason},
            )
    except IntegrityError as exc:  # the same proposal, made concurrently: that one stands
        if "pending_change_one_open" not in str(exc):
            raise
        return Submitted(
            False,
            change=PendingChange.objects.get(
                account_id=account_id, fingerprint=fingerprint, status=PendingChange.Status.PENDING
            ),
        )
    return Submitted(False, change=change)


# --- deciding ------------------------------------------------------------------------------


def _require_reviewer(actor: Actor, account_id: int) -> None:
    """Owners and operators of the change's account decide; agents never do (they only read
    the queue), whatever their key's scopes."""
    if actor.agent is not None:
        raise PermissionDenied(
            "Pending changes are decided by people (owners or operators) in the admin.",
            code="role_required",
            details={"roles": sorted({"owner", *MANAGE_MEMORY})},
        )
    actor.require(account_id, MANAGE_MEMORY)


def _decided(actor: Actor) -> dict[str, Any]:
    return {
        "decided_by": actor.user,
        "decided_by_label": str(actor)[:300],
        "decided_at": timezone.now(),
    }


def _not_open(change: PendingChange) -> Conflict:
    """Why a change cannot be decided: decided already, or expired (marked so now)."""
    fresh = PendingChange.objects.filter(pk=change.pk).values_list("status", "expires_at").first()
    status = fresh[0] if fresh else change.status
    if status == PendingChange.Status.PENDING:
        pending_changes_expire(ids=[change.pk])
        return Conflict(
            "This change expired before a decision; it will never be applied.",
            code="change_expired",
        )
    return Conflict(
        f"This change is {status} already.", code="change_not_pending", details={"status": status}
    )


def _claim(change: PendingChange, status: str, **fields: Any) -> bool:
    """Compare-and-set: pending and not expired -> ``status``. One decision wins."""
    return bool(
        PendingChange.objects.filter(
            pk=change.pk, status=PendingChange.Status.PENDING, expires_at__gt=timezone.now()
        ).update(status=status, **fields)
    )


def change_approve(*, actor: Actor, change: PendingChange) -> PendingChange:
    """Approve and apply one pending change (owner or operator of its account). 409
    ``change_not_pending`` / ``change_expired`` when it cannot be decided any more. If the data
    changed since it was proposed so the applier refuses, the change ends ``failed`` with the
    reason (nothing applied) and is returned."""
    _require_reviewer(actor, change.account_id)
    spec = _kind(change.kind)
    with transaction.atomic():
        claimed = _claim(change, PendingChange.Status.APPROVED, **_decided(actor))
        if claimed:
            audit_record(
                actor=actor,
                action="memory.change.approve",
                account_id=change.account_id,
                target=change,
                changes={"kind": change.kind},
            )
    if not claimed:
        raise _not_open(change)
    account = Account.objects.get(pk=change.account_id)
    try:
        result = dict(spec.apply(account=account, actor=actor, payload=change.payload))
    except EngramError as exc:
        if exc.status_code >= 500:  # a provider or store down: pending again, decide later
            PendingChange.objects.filter(pk=change.pk).update(
                status=PendingChange.Status.PENDING, decided_by=None, decided_at=None
            )
            raise
        _fail(actor, change, f"{exc.code}: {exc.message}")
    except Exception as exc:
        _fail(actor, change, f"{type(exc).__name__}: {exc}")
        raise
    else:
        PendingChange.objects.filter(pk=change.pk).update(result=_jsonable(result))
    return PendingChange.objects.get(pk=change.pk)


def _fail(actor: Actor, change: PendingChange, error: str) -> None:
    with transaction.atomic():
        PendingChange.objects.filter(pk=change.pk).update(
            status=PendingChange.Status.FAILED, error=error[:2000]
        )
        audit_record(
            actor=actor,
            action="memory.change.fail",
            account_id=change.account_id,
            target=change,
            changes={"kind": change.kind, "error": error[:2000]},
        )


def reason_check(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationFailed("A rejection needs a reason.", code="reason_required")
    if len(reason) > MAX_REASON_CHARS:
        raise ValidationFailed(
            f"The reason is limited to {MAX_REASON_CHARS} characters.",
            code="reason_too_long",
            details={"max_length": MAX_REASON_CHARS},
        )
    return reason


def change_reject(*, actor: Actor, change: PendingChange, reason: str) -> PendingChange:
    """Reject one pending change with a reason (owner or operator); nothing is applied, and the
    same proposal is not made again."""
    _require_reviewer(actor, change.account_id)
    reason = reason_check(reason)
    with transaction.atomic():
        claimed = _claim(
            change, PendingChange.Status.REJECTED, decision_reason=reason, **_decided(actor)
        )
        if claimed:
            audit_record(
                actor=actor,
                action="memory.change.reject",
                account_id=change.account_id,
                target=change,
                changes={"kind": change.kind, "reason": reason},
            )
    if not claimed:
        raise _not_open(change)
    return PendingChange.objects.get(pk=change.pk)


@dataclass
class Decision:
    change_id: int
    status: str
    error: str = ""
    code: str = ""


def _bulk(changes: Sequence[PendingChange]) -> Sequence[PendingChange]:
    if not 1 <= len(changes) <= MAX_BULK:
        raise ValidationFailed(
            f"Decide 1 to {MAX_BULK} changes at a time.",
            code="invalid_batch_size",
            details={"max": MAX_BULK},
        )
    return changes


def changes_decide(
    *, actor: Actor, changes: Sequence[PendingChange], approve: bool, reason: str = ""
) -> list[Decision]:
    """Approve (or reject, with one reason for all) many changes, each on its own: one that
    cannot be decided is reported with its error, the others go on."""
    if not approve:
        reason = reason_check(reason)
    decisions = []
    for change in _bulk(changes):
        try:
            done = (
                change_approve(actor=actor, change=change)
                if approve
                else change_reject(actor=actor, change=change, reason=reason)
            )
        except EngramError as exc:
            if exc.status_code >= 500:
                raise
            status = PendingChange.objects.filter(pk=change.pk).values_list("status", flat=True)
            decisions.append(Decision(change.pk, status.first() or "", exc.message, exc.code))
        else:
            decisions.append(Decision(done.pk, done.status, done.error))
    return decisions


# --- expiry --------------------------------------------------------------------------------


def pending_changes_expire(
    *, ids: Iterable[int] | None = None, dry_run: bool = False
) -> dict[str, int]:
    """Mark the pending changes whose time ran out ``expired`` (never applied), audited per
    account. The job ``memory.expire_pending_changes`` runs it; approving an expired change
    refuses whether or not the job ran."""
    now = timezone.now()
    due = PendingChange.objects.filter(status=PendingChange.Status.PENDING, expires_at__lte=now)
    if ids is not None:
        due = due.filter(pk__in=list(ids))
    rows = list(due.values_list("pk", "account_id"))
    if dry_run or not rows:
        return {"expired": len(rows)}
    expired = 0
    by_account: dict[int, list[int]] = {}
    with transaction.atomic():
        for pk, account_id in rows:
            if (
                PendingChange.objects.filter(
                    pk=pk, status=PendingChange.Status.PENDING, expires_at__lte=now
                ).update(status=PendingChange.Status.EXPIRED, decided_at=now)
                == 1
            ):
                expired += 1
                by_account.setdefault(account_id, []).append(pk)
        for account_id, changed in by_account.items():
            audit_record(
                actor=Actor(account_ids=frozenset({account_id})),
                action="memory.change.expire",
                account_id=account_id,
                target_type="memory.pendingchange",
                target_id=",".join(map(str, changed[:10])),
                changes={"changes": changed},
            )
    return {"expired": expired}


def pending_ids(*, account_id: int, kind: str, context_id: int | None = None) -> list[Any]:
    """The payloads of the open and rejected changes of one kind (what upkeep should not
    propose again)."""
    found = PendingChange.objects.filter(
        account_id=account_id,
        kind=kind,
        status__in=(PendingChange.Status.PENDING, PendingChange.Status.REJECTED),
    )
    if context_id is not None:
        found = found.filter(context_id=context_id)
    return list(found.values_list("payload", flat=True))
