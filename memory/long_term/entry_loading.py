"""Memory entries loaded by id for a search's hits, with only the fields a caller reads.

The hot path of context assembly loads a hundred entries per call; an ORM ``in_bulk`` of them
spent four times its statement's time compiling the query, binding one parameter per id and
converting each row (bench/memory/context_assembly.py, docs/benchmarks-log.md). Here the statement
is one array parameter, and the rows become model instances through ``Model.from_db`` with each
field's own database converter, as the ORM would make them."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection
from pgvector.django import VectorField

from core.db_router import read_connection
from memory.models import MemoryEntry


def entries_by_id(entry_ids: Sequence[int], fields: Sequence[str] = ()) -> dict[int, MemoryEntry]:
    """The entries of ``entry_ids`` that exist, by id: every field but the vectors (the
    current generation's and the other's, ``core.embeddings.generations``) when ``fields`` is
    empty, else only those (the others deferred, as ``only()`` leaves them)."""
    if not entry_ids:
        return {}
    meta = MemoryEntry._meta
    if not fields:
        fields = [f.attname for f in meta.concrete_fields if not isinstance(f, VectorField)]
    wanted = {meta.pk.attname, *fields}
    for name in fields:
        meta.get_field(name)  # an unknown name raises FieldDoesNotExist, as ``only()`` would
    # In the model's field order: ``from_db`` takes the values of a partial row in that order.
    loaded = [f for f in meta.concrete_fields if f.attname in wanted or f.name in wanted]
    columns = ", ".join(connection.ops.quote_name(f.column or f.attname) for f in loaded)
    converters = [
        (index, field) for index, field in enumerate(loaded) if hasattr(field, "from_db_value")
    ]
    names = [field.attname for field in loaded]
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT {columns} FROM {meta.db_table} WHERE id = ANY(%s)",  # noqa: S608 - names are code
            [list(entry_ids)],
        )
        rows = cursor.fetchall()
    found: dict[int, MemoryEntry] = {}
    for row in rows:
        values = list(row)
        for index, field in converters:
            values[index] = field.from_db_value(values[index], None, connection)
        entry = MemoryEntry.from_db(connection.alias, names, values)
        found[entry.pk] = entry
    return found
