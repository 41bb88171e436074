"""The vector stage of the engine: a space's nearest units through its HNSW index, and the
similarity of given units to a query (the BM25 stage is ``rag.keyword``; ``rag.search`` ranks
with both)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from django.db import connection, transaction

from core.embeddings import get_embedding_provider
from rag.spaces import SearchSpace


def vector_literal(vector: np.ndarray) -> str:
    """A vector as a pgvector literal, for raw SQL (cast it: ``%s::vector``)."""
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


def vector_search(
    *,
    space: SearchSpace,
    scope_ids: Sequence[int],
    query_vector: np.ndarray,
    limit: int,
    filter_sql: str = "",
    filter_params: Mapping[str, Any] | None = None,
) -> list[tuple[int, float]]:
    """(unit id, cosine similarity) of a space's nearest units, through its HNSW index.

    Only units embedded by the current model are compared: after a model change, vectors of the
    old model are meaningless to the new one until they are re-embedded. ``filter_sql`` is a
    condition over the space's ``unit_filter_join`` with named placeholders.
    """
    if not scope_ids:
        return []
    conditions = [c for c in (space.vector_condition, filter_sql) if c]
    join = space.unit_filter_join if filter_sql else ""
    where = "".join(f" AND {condition}" for condition in conditions)
    params = {
        **(filter_params or {}),
        "scopes": list(scope_ids),
        "q": vector_literal(query_vector),
        "limit": limit,
        "model": get_embedding_provider().model_id,
    }
    with transaction.atomic(), connection.cursor() as cursor:
        # Enough candidates for the limit, and iterative scans so filters cannot starve results.
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(max(40, limit))])
        cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        cursor.execute(
            f"""
            SELECT u.id, u.{space.embedding_column} <=> %(q)s::vector AS distance
            FROM {space.unit_table} u {join}
            WHERE u.{space.scope_column} = ANY(%(scopes)s)
              AND u.{space.model_column} = %(model)s {where}
            ORDER BY distance
            LIMIT %(limit)s
            """,  # noqa: S608 - names are code; filter_sql is built from validated filters
            params,
        )
        rows = cursor.fetchall()
    rows.sort(key=lambda row: (row[1], row[0]))  # relaxed_order may return near-sorted rows
    return [(int(unit_id), 1.0 - float(distance)) for unit_id, distance in rows]


def unit_similarities(
    *, space: SearchSpace, unit_ids: Sequence[int], query_vector: np.ndarray
) -> dict[int, float]:
    """Cosine similarity between the query and each given unit embedded by the current model."""
    if not unit_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, 1 - ({space.embedding_column} <=> %s::vector) "  # noqa: S608
            f"FROM {space.unit_table} WHERE id = ANY(%s) AND {space.model_column} = %s",
            [vector_literal(query_vector), list(unit_ids), get_embedding_provider().model_id],
        )
        return {int(unit_id): float(similarity) for unit_id, similarity in cursor.fetchall()}
