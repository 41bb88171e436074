"""Kinds of rows an account export holds, the references between them, and their registry.

A kind (``Kind``) is one file of the archive, ``<name>.jsonl``, one JSON object a line. Each row
has its source ``id`` and refers to other rows by natural reference, ``{"ref": "<kind>:<id>"}``
(``ref``), never by a bare foreign key: an import creates new rows with new ids and resolves
each reference through the ids it has made so far (``ImportScope.resolve``). So a kind's rows
may only refer to rows of kinds loaded before it, or to earlier rows of its own kind (an entry's
previous version).

Each app declares its kinds in ``<app>/services/portability.py`` or
``<app>/portability/services.py`` as ``KINDS`` (a sequence, in load order), found by name in
dependency order (``core.jobs.ENGRAM_APPS``): core imports no app.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.utils.dateparse import parse_datetime

from core.errors import ValidationFailed
from core.jobs import ENGRAM_APPS
from core.portability.idmaps import IdMap

if TYPE_CHECKING:
    from core.models import Account

Row = dict[str, Any]
REGISTRY_MODULES = ("services.portability", "portability.services")
_REFERENCE = re.compile(r"^(?P<many>\[)?ref:(?P<kind>[\w.]+)")


def when(value: Any) -> Any:
    """A timestamp read back from an archive (ISO 8601 text), or the value as it is."""
    return parse_datetime(value) if isinstance(value, str) else value


def ref(kind: str, pk: int | None) -> dict[str, str] | None:
    """The natural reference to row ``pk`` of ``kind`` (None stays None)."""
    return None if pk is None else {"ref": f"{kind}:{pk}"}


def ref_parts(value: Any) -> tuple[str, int] | None:
    """``(kind, id)`` of a reference, None for None; ValueError for anything else."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"ref"} or not isinstance(value["ref"], str):
        raise ValueError(f"not a reference: {value!r}")
    kind, _, pk = value["ref"].rpartition(":")
    if not kind or not pk.isdigit():
        raise ValueError(f"not a reference: {value!r}")
    return kind, int(pk)


@dataclass
class ExportScope:
    """What one export reads: the account, the agents whose share it holds (every agent of the
    account, or the one agent of ``--agent``), and whether vectors go along."""

    account: Account
    agent_ids: frozenset[int]
    single_agent: bool = False
    with_vectors: bool = False

    def agent_ref(self, pk: int | None) -> dict[str, str] | None:
        """A reference to an agent the export holds; an agent it leaves out becomes None."""
        return ref("core.agent", pk) if pk in self.agent_ids else None


@dataclass
class ImportScope:
    """One import under way: the target account, the ids made so far per kind, the embedding
    model the vectors must match to be kept, and what the kinds remember between calls."""

    account: Account
    embedding_model: str
    embedding_dimensions: int
    ids: dict[str, IdMap] = field(default_factory=dict)
    memo: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    after_commit: list[Callable[[], None]] = field(default_factory=list)

    def remember(self, kind: str, source_id: int, new_id: int) -> None:
        self.ids.setdefault(kind, IdMap())[source_id] = new_id

    def new_id(self, kind: str, source_id: int) -> int | None:
        """The new id of the source row ``source_id`` of ``kind``; None when none was made."""
        made = self.ids.get(kind)
        return None if made is None else made.get(source_id)

    def resolve(self, value: Any) -> int | None:
        """The new id of the row a reference names (validation made sure it exists)."""
        parts = ref_parts(value)
        if parts is None:
            return None
        return self.ids[parts[0]][parts[1]]

    def remember_created(
        self, kind: str, model: Any, rows: Sequence[Row], made: Sequence[Any], stamp: str
    ) -> None:
        """After a ``bulk_create`` of ``rows``: each new row's id remembered under ``kind``, and
        its ``stamp`` (``created_at`` or ``updated_at``, which Django sets to the import's time
        on a create) written back from the source, in one ``bulk_update``."""
        for row, obj in zip(rows, made, strict=True):
            self.remember(kind, row["id"], obj.pk)
            setattr(obj, stamp, when(row[stamp]))
        model.objects.bulk_update(made, [stamp])

    def required(self, value: Any) -> int:
        """``resolve`` for a reference that may not be null (validation checked its form)."""
        pk = self.resolve(value)
        if pk is None:
            raise ValueError("a required reference is null")
        return pk

    def vector_of(self, row: Mapping[str, Any], name: str = "embedding") -> list[float] | None:
        """The row's vector when it was made by the model this installation embeds with (same
        model id and dimensions); otherwise None, and the row is embedded again."""
        vector = row.get(name)
        if (
            vector is None
            or row.get("embedding_model") != self.embedding_model
            or len(vector) != self.embedding_dimensions
        ):
            return None
        return list(vector)


@dataclass(frozen=True)
class Kind:
    """One kind of row. ``schema``: each field of a row (besides ``id``) with its description
    (``ref:<kind>`` for references, ``[ref:<kind>]`` for lists of them); ``vector``: the field
    holding the row's vector, written only with ``--with-vectors`` (and the field
    ``embedding_model`` then says which model made it). ``rows`` reads the export's rows in
    id order; ``load`` recreates a batch of rows in the target account and ``remember``s each
    new id; ``finish`` runs once every row is loaded, inside the import's transaction (indexes
    rebuilt, work queued). ``late``: the kind loads after every kind that is not (still in app
    order among the late ones), so that its rows may refer to kinds of the apps above its own
    (the knowledge graph's nodes name memory contexts, and its edges join the nodes of pages,
    skills and knowledge items)."""

    name: str
    schema: Mapping[str, str]
    rows: Callable[[ExportScope], Iterable[Row]]
    load: Callable[[ImportScope, Sequence[Row]], None]
    vector: str | None = None
    finish: Callable[[ImportScope], None] | None = None
    late: bool = False

    @property
    def file(self) -> str:
        return f"{self.name}.jsonl"

    def references(self) -> dict[str, tuple[str, bool]]:
        """Field -> (kind referred to, whether a list), from the schema."""
        found: dict[str, tuple[str, bool]] = {}
        for name, description in self.schema.items():
            match = _REFERENCE.match(description)
            if match is not None:
                found[name] = (match["kind"], bool(match["many"]))
        return found


def kinds() -> list[Kind]:
    """Every kind the installed apps declare, in load order (apps in dependency order, each
    app's ``KINDS`` in its own order; the ``late`` kinds after all the others, in that same
    order). Names are unique."""
    declared: list[Kind] = []
    for _label, module in _registry_modules():
        declared.extend(getattr(module, "KINDS", ()))
    found = [kind for kind in declared if not kind.late] + [kind for kind in declared if kind.late]
    names = [kind.name for kind in found]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"portability kind names must be unique: {duplicates}")
    return found


def _registry_modules() -> list[tuple[str, Any]]:
    """Each installed app's registry modules, in dependency order (a module that exists but
    fails to import raises; a missing one, or its missing package, is skipped)."""
    found = []
    for label in ENGRAM_APPS:
        if not apps.is_installed(label):
            continue
        for module_name in REGISTRY_MODULES:
            name = f"{label}.{module_name}"
            try:
                module = importlib.import_module(name)
            except ModuleNotFoundError as exc:
                if exc.name is None or not name.startswith(exc.name):
                    raise
                continue
            found.append((label, module))
    return found


def kind_named(name: str) -> Kind:
    for kind in kinds():
        if kind.name == name:
            return kind
    raise ValidationFailed(f"Unknown kind {name!r}.", code="import_unknown_kind")
