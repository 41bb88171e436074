"""The schema every embedded table shares for index generations (``core.embeddings.generations``):
what the apps' migrations apply to their tables, and the DDL a generation runs on them.

An embedded table has ``embedding`` and ``embedding_model`` (the current generation's vector and
model id) and ``embedding_next`` and ``embedding_next_model`` (the other generation's). Django's
model state declares the vector columns without dimensions; in the database each is typed
``vector(n)`` by the generation it holds, so that each has an HNSW index of its own
(``<table>_vec_g<generation id>``). Table names are code, never input.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models
from pgvector.django import VectorField

#: HNSW build settings of every generation's index (as the first generation's).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
#: ``maintenance_work_mem`` while a generation's index is built: 100,000 vectors of 1,536
#: dimensions make about 700 MB of graph; beyond the limit the build goes on, on disk, slower.
INDEX_BUILD_MEMORY = "1GB"


def index_name(table: str, generation_id: int) -> str:
    return f"{table}_vec_g{generation_id}"


def generation_columns(
    *, model_name: str, table: str, old_index: str, nullable: bool = True
) -> list[Any]:
    """The migration operations that turn an embedded table's single vector column into the
    current generation's, beside an empty column for the other generation.

    In Django's state: ``embedding`` loses its dimensions and its ``HnswIndex`` (generations own
    their indexes now). In the database: the column keeps its type and data, its index is
    renamed after the first generation, and a NOT NULL vector column (chunks) accepts NULL, since
    after a cut-over it holds the other generation, which a new row may not have yet."""
    database: list[Any] = []
    if old_index:
        database.append(
            migrations.RunSQL(
                f"ALTER INDEX IF EXISTS {old_index} RENAME TO {index_name(table, 1)}",
                f"ALTER INDEX IF EXISTS {index_name(table, 1)} RENAME TO {old_index}",
            )
        )
    state: list[Any] = []
    if old_index:
        state.append(migrations.RemoveIndex(model_name=model_name, name=old_index))
    database.append(migrations.RunPython(_typed_as_configured(table), migrations.RunPython.noop))
    if not nullable:
        database.append(
            migrations.RunSQL(
                f"ALTER TABLE {table} ALTER COLUMN embedding DROP NOT NULL",
                migrations.RunSQL.noop,
            )
        )
    return [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                *state,
                migrations.AlterField(
                    model_name=model_name,
                    name="embedding",
                    field=VectorField(blank=True, null=True),
                ),
            ],
            database_operations=database,
        ),
        migrations.AddField(
            model_name=model_name,
            name="embedding_next",
            field=VectorField(blank=True, null=True, editable=False),
        ),
        migrations.AddField(
            model_name=model_name,
            name="embedding_next_model",
            field=models.CharField(
                blank=True, db_default="", default="", editable=False, max_length=200
            ),
        ),
    ]


def _typed_as_configured(table: str) -> Any:
    """A fresh installation configured for another width than the first migrations' 384: its
    still empty column takes the configured type (a table holding vectors keeps its own)."""

    def retype(apps: Any, schema_editor: Any) -> None:
        from django.conf import settings

        dimensions = int(settings.EMBEDDING_DIMENSIONS)
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                f"SELECT format_type(atttypid, atttypmod) FROM pg_attribute "  # noqa: S608
                f"WHERE attrelid = '{table}'::regclass AND attname = 'embedding'"
            )
            (current,) = cursor.fetchone()
            if current == f"vector({dimensions})":
                return
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {table} WHERE embedding IS NOT NULL)")  # noqa: S608
            if cursor.fetchone()[0]:
                return
            cursor.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({dimensions})")

    return retype
