"""The vector stage of the engine: a space's nearest units through its HNSW index, and the
similarity of given units to a query (the BM25 stage is ``rag.keyword``; ``rag.search`` ranks
with both)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from django.db import transaction

from core.db_router import read_connection
from core.embeddings import generations, get_embedding_provider
from core.embeddings.base import vector_literal
from rag.spaces import SearchSpace
from rag.tuning import TUNING

# Which scopes are searched exactly, by comparing the query with each of their units, instead of
# through the HNSW index the whole space shares. The index walks a graph of every scope's units
# and keeps those of the searched scopes: a small share of the space costs it many steps, while
# comparing each unit costs about 2 ms per 1,000 (rag.tuning's ``vector`` group says how the
# limits were chosen).


#: The current embedding generation's model id, read in the statement that uses it.
CURRENT_MODEL = "(SELECT model_id FROM core_embeddinggeneration WHERE role = 'current')"


def exact_scan_wanted(units: int, space_units: float) -> bool:
    """Whether scopes holding ``units`` units, of a space of about ``space_units`` (the
    planner's estimate; below 0 when the table was never analysed), are compared exactly:
    always up to ``exact_scan_always`` units, never above ``exact_scan_units``, and between
    the two while they hold at most ``exact_scan_share`` of the space."""
    limits = TUNING.vector
    if units <= limits.exact_scan_always:
        return True
    if units > limits.exact_scan_units:
        return False
    return space_units > 0 and units <= limits.exact_scan_share * space_units


def vector_search(
    *,
    space: SearchSpace,
    scope_ids: Sequence[int],
    query_vector: np.ndarray,
    limit: int,
    filter_sql: str = "",
    filter_params: Mapping[str, Any] | None = None,
    raise_moved: bool = False,
) -> list[tuple[int, float]]:
    """(unit id, cosine similarity) of a space's nearest units, through its HNSW index.

    Small scopes, and scopes that are a small share of the space, are searched exactly
    (``exact_scan_wanted``). Only units embedded by
    the current model are compared: after a model change, vectors of the
    old model are meaningless to the new one until they are re-embedded. ``filter_sql`` is a
    condition over the space's ``unit_filter_join`` with named placeholders.

    A query embedded by the model that was current before a cut-over that came meanwhile finds
    nothing (the stage is empty for this one query), or raises ``GenerationMoved`` when
    ``raise_moved``: the caller embeds the query again and retries (``rag.search.space_rank``).
    """
    if not scope_ids:
        return []
    model_id = get_embedding_provider().model_id
    conditions = [c for c in (space.vector_condition, filter_sql) if c]
    join = space.unit_filter_join if filter_sql else ""
    where = "".join(f" AND {condition}" for condition in conditions)
    params = {
        **(filter_params or {}),
        "scopes": list(scope_ids),
        "q": vector_literal(query_vector),
        "limit": limit,
        "model": model_id,
        # While a next model is configured, a cut-over may rename the columns under a query.
        "migrating": generations.cutover_possible(),
    }
    nearest = f"""
        SELECT u.id, u.{space.embedding_column} <=> %(q)s::vector AS distance
        FROM {space.unit_table} u {join}
        WHERE u.{space.scope_column} = ANY(%(scopes)s)
          AND u.{space.model_column} = %(model)s {where}
          AND (NOT %(migrating)s OR {CURRENT_MODEL} = %(model)s)
    """  # noqa: S608 - names are code; filter_sql is built from validated filters
    db = read_connection()
    with transaction.atomic(using=db.alias), db.cursor() as cursor:
        # Enough candidates for the limit, iterative scans so filters cannot starve results, how
        # many units the scopes hold, and about how many the space holds. Also the current
        # embedding generation's model, with the unit table locked (shared) until the
        # transaction ends: a cut-over, which renames its vector columns, waits for this search
        # or happened before it; a query embedded by the model that was current before
        # (``GenerationMoved``) is embedded again by the caller.
        cursor.execute(
            f"""
            SELECT set_config('hnsw.ef_search', %s, true),
                   set_config('hnsw.iterative_scan', 'relaxed_order', true),
                   (SELECT coalesce(sum({space.scope_count_column}), 0) FROM {space.scope_table}
                    WHERE {space.scope_key_column} = ANY(%s)),
                   (SELECT reltuples FROM pg_class WHERE oid = %s::regclass),
                   {CURRENT_MODEL},
                   (SELECT 1 FROM {space.unit_table} WHERE false)
            """,  # noqa: S608 - names are code
            [str(max(40, limit)), params["scopes"], space.unit_table],
        )
        _, _, units, space_units, current_model, _ = cursor.fetchone()
        try:
            generations.check_query_model(current_model, model_id)
        except generations.GenerationMoved:
            if raise_moved:
                raise
            return []
        if exact_scan_wanted(units, space_units):
            # Every unit compared (the subquery keeps the HNSW index out): exact, and faster
            # than walking a graph of every scope's units for the few of these scopes.
            cursor.execute(
                f"SELECT id, distance FROM ({nearest} OFFSET 0) exact "  # noqa: S608 - as above
                "ORDER BY distance, id LIMIT %(limit)s",
                params,
            )
        else:
            cursor.execute(f"{nearest} ORDER BY distance LIMIT %(limit)s", params)
        rows = cursor.fetchall()
    rows.sort(key=lambda row: (row[1], row[0]))  # relaxed_order may return near-sorted rows
    return [(int(unit_id), 1.0 - float(distance)) for unit_id, distance in rows]


def unit_similarities(
    *, space: SearchSpace, unit_ids: Sequence[int], query_vector: np.ndarray
) -> dict[int, float]:
    """Cosine similarity between the query and each given unit embedded by the current model."""
    if not unit_ids:
        return {}
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT id, 1 - ({space.embedding_column} <=> %s::vector) "  # noqa: S608
            f"FROM {space.unit_table} WHERE id = ANY(%s) AND {space.model_column} = %s",
            [vector_literal(query_vector), list(unit_ids), get_embedding_provider().model_id],
        )
        return {int(unit_id): float(similarity) for unit_id, similarity in cursor.fetchall()}
