"""Exporting an account to an archive and importing one (docs/portability.md).

``account_export`` streams every kind's rows of one account (or one agent's share) into the
archive. ``account_import`` reads the whole archive and checks it first (``archive_check``:
nothing is written when any file or line is wrong), then, in one transaction, creates the
account when it does not exist, refuses nothing it has seen before silently (an archive already
imported into the account is a no-op: its digest is recorded as the import's audit event), loads
every kind in order with remapped ids, and queues the derived work (indexes, embeddings) to run
after the commit, never calling an embedding provider inside the transaction."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from django.db import IntegrityError, connection, transaction

from core.actors import MANAGE_ACCOUNT, Actor, actor_for_account
from core.audit import audit_record
from core.embeddings import get_embedding_provider
from core.errors import Conflict, NotFound, ValidationFailed
from core.models import Account, AuditEvent
from core.portability.archive import ArchiveReader, Progress, archive_check, archive_write
from core.portability.kinds import ExportScope, ImportScope, Kind, Row, kinds

LOAD_BATCH = 500
IMPORT_ACTION = "core.account.import"
ARCHIVE_TARGET = "portability.archive"


def engram_version() -> str:
    try:
        return importlib.metadata.version("engram")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class ExportReport:
    path: Path
    digest: str
    counts: dict[str, int]


@dataclass(frozen=True)
class ImportReport:
    account: Account
    digest: str
    counts: dict[str, int] = field(default_factory=dict)
    already_imported: bool = False


def _check_actor(actor: Actor, account_id: int) -> None:
    actor.require(account_id, MANAGE_ACCOUNT)
    if actor.agent is not None:
        actor.require_scope("admin")


def account_export(
    *,
    actor: Actor,
    account: Account,
    out: Path,
    with_vectors: bool = False,
    agent_name: str | None = None,
    on_progress: Progress | None = None,
) -> ExportReport:
    """Write ``account``'s archive to ``out`` (owners, tools; an agent with an admin key, its
    own account). ``agent_name``: only that agent's share (itself, its teams, its own memory,
    its conversations and short-term memory), like an agent file."""
    _check_actor(actor, account.pk)
    from core.models import Agent

    agents = Agent.objects.filter(account=account)
    if agent_name is not None:
        agents = agents.filter(name=agent_name)
        if not agents.exists():
            raise NotFound(f"No agent named {agent_name!r} in the account.", code="agent_not_found")
    scope = ExportScope(
        account=account,
        agent_ids=frozenset(agents.values_list("pk", flat=True)),
        single_agent=agent_name is not None,
        with_vectors=with_vectors,
    )
    with _snapshot():
        written = archive_write(
            out,
            kinds=kinds(),
            scope=scope,
            engram_version=engram_version(),
            on_progress=on_progress,
        )
    counts = {entry["name"]: entry["count"] for entry in written.manifest["kinds"]}
    return ExportReport(path=out, digest=written.digest, counts=counts)


@contextmanager
def _snapshot() -> Iterator[None]:
    """One consistent view of the account for the whole export: a read-only REPEATABLE READ
    transaction (inside a caller's transaction, that transaction's view)."""
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def account_import(
    *,
    path: Path,
    account_slug: str,
    actor: Actor | None = None,
    account_name: str = "",
    on_progress: Progress | None = None,
) -> ImportReport:
    """Import the archive at ``path`` into the account ``account_slug``, created when it does
    not exist (then installation-level: superusers and tools). All or nothing; validated
    first; a second import of the same archive into the same account changes nothing.
    ``on_progress(done, total)``: steps are each kind checked, then each kind loaded (the
    load is one transaction: nothing of it is visible before the end)."""
    known = kinds()
    with ArchiveReader(path, known) as reader:
        steps = 2 * len(reader.entries(known))
        checked = None if on_progress is None else (lambda done, _: on_progress(done, steps))
        counts = archive_check(reader, known, on_progress=checked)
        provider = get_embedding_provider()
        return _load(
            reader,
            known,
            account_slug=account_slug,
            account_name=account_name,
            actor=actor,
            counts=counts,
            embedding_model=provider.model_id,
            embedding_dimensions=provider.dimensions,
            on_progress=on_progress,
        )


def _account(slug: str, name: str, actor: Actor | None) -> Account:
    from core.services.accounts import account_create

    account = Account.objects.select_for_update().filter(slug=slug).first()
    if account is None:
        account_create(name=name or slug, slug=slug, actor=actor)
        account = Account.objects.select_for_update().get(slug=slug)
    if actor is not None:
        _check_actor(actor, account.pk)
    return account


@transaction.atomic
def _load(
    reader: ArchiveReader,
    known: Sequence[Kind],
    *,
    account_slug: str,
    account_name: str,
    actor: Actor | None,
    counts: dict[str, int],
    embedding_model: str,
    embedding_dimensions: int,
    on_progress: Progress | None = None,
) -> ImportReport:
    account = _account(account_slug, account_name, actor)  # locked: imports run one at a time
    done = AuditEvent.objects.filter(
        account=account, action=IMPORT_ACTION, target_type=ARCHIVE_TARGET, target_id=reader.digest
    ).exists()
    if done:
        return ImportReport(account=account, digest=reader.digest, already_imported=True)
    scope = ImportScope(
        account=account,
        embedding_model=embedding_model,
        embedding_dimensions=embedding_dimensions,
    )
    entries = reader.entries(known)
    for position, (kind, entry) in enumerate(entries):
        if on_progress is not None:
            on_progress(len(entries) + position, 2 * len(entries))
        batch: list[Row] = []
        try:
            for _, row in reader.rows(kind, entry):
                batch.append(row)
                if len(batch) >= LOAD_BATCH:
                    kind.load(scope, batch)
                    batch = []
            if batch:
                kind.load(scope, batch)
            if kind.finish is not None:
                kind.finish(scope)
        except IntegrityError as exc:
            raise Conflict(
                f"{kind.file}: its rows clash with what the account holds already ({exc}).",
                code="import_conflict",
                details={"file": kind.file},
            ) from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise ValidationFailed(
                f"{kind.file}: a row could not be loaded ({exc!r}).",
                code="import_invalid",
                details={"file": kind.file},
            ) from exc
    audit_record(
        actor=actor or actor_for_account(account.pk),
        action=IMPORT_ACTION,
        account_id=account.pk,
        target_type=ARCHIVE_TARGET,
        target_id=reader.digest,
        changes={
            "counts": counts,
            "source": reader.manifest.get("account", {}),
            "format_version": reader.version,
        },
    )
    for callback in scope.after_commit:
        transaction.on_commit(callback)
    return ImportReport(account=account, digest=reader.digest, counts=counts)
