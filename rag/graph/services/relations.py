"""The edges of the relations an extractor names (the offline one's,
``rag.graph.relation_patterns``, or the LLM's), for ``rag.graph.services.index``: each relation
becomes an edge of its type, once per pair, type and source, with the units stating it
(``GraphRelationMention``). An extracted edge weighs the number of units stating it; indexing a
unit again, or deleting it, takes back what it stated (an extracted edge no unit states any
more is deleted; edges written through the graph API are never touched).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rag.graph.names import name_key
from rag.graph.relations import COOCCURS
from rag.spaces import SearchSpace
from rag.visibility import source_of

if TYPE_CHECKING:
    from rag.graph.services.index import UnitEntities


def orphans_forget(
    cursor: Any, table: str, named: str, space: SearchSpace, scope_ids: Sequence[int]
) -> set[int]:
    """Delete the rows of a mention ``table`` (``rag_graphmention``, ``rag_graphrelationmention``)
    whose units are gone from these scopes; the ids (column ``named``) they named."""
    cursor.execute(
        f"""
        DELETE FROM {table} m
        WHERE m.space = %s AND m.scope_id = ANY(%s)
          AND NOT EXISTS (SELECT FROM {space.unit_table} u WHERE u.id = m.unit_id)
        RETURNING m.{named}
        """,  # noqa: S608 - the table and column names are code
        [space.name, list(scope_ids)],
    )
    return {row[0] for row in cursor.fetchall()}


def relations_prune(cursor: Any, space: SearchSpace, scope_ids: Sequence[int]) -> set[int]:
    """Forget the relation mentions of units gone from these scopes; the edges they named."""
    return orphans_forget(cursor, "rag_graphrelationmention", "edge_id", space, scope_ids)


def relations_write(
    cursor: Any,
    account_id: int,
    space: SearchSpace,
    units: Sequence[UnitEntities],
    resolved: dict[str, int],
    origin: str,
) -> tuple[int, set[int]]:
    """The relations the extractor named, as edges of their type (one per pair, type and
    source), each with the units stating it (``GraphRelationMention``): (edges made, the ids
    of the edges stated). A relation's end may be named by an entity's alias."""
    stated: dict[tuple[int, int, str, str, int | None], set[tuple[int, int]]] = {}
    for unit in units:
        where = source_of(space.name, unit.scope_id)
        by_alias = {
            name_key(alias): name_key(entity.name)
            for entity in unit.entities
            for alias in entity.aliases
        }
        for relation in unit.relations:
            ends = []
            for name in (relation.source, relation.target):
                key = name_key(name)
                ends.append(resolved.get(key) or resolved.get(by_alias.get(key, "")))
            source, target = ends
            kind = relation.relation_type.strip()[:100]
            if source and target and source != target and kind and kind != COOCCURS:
                stated.setdefault((source, target, kind, where.space, where.scope_id), set()).add(
                    (unit.scope_id, unit.unit_id)
                )
    if not stated:
        return 0, set()
    keys = list(stated)
    cursor.execute(
        """
        INSERT INTO rag_graphedge (account_id, source_id, target_id, relation_type, weight,
            confidence, bidirectional, metadata, created_at, updated_at, derived_space,
            derived_scope_id)
        SELECT %s, t.s, t.t, t.r, 0.0, 0.5, false, %s::jsonb, now(), now(), t.space, t.scope
        FROM unnest(%s::bigint[], %s::bigint[], %s::varchar[], %s::varchar[], %s::bigint[])
            AS t(s, t, r, space, scope)
        ON CONFLICT ON CONSTRAINT graph_edge_unique
        DO UPDATE SET relation_type = EXCLUDED.relation_type
        RETURNING id, (xmax = 0), source_id, target_id, relation_type, derived_space,
            derived_scope_id
        """,
        [
            account_id,
            json.dumps({"extracted_from": origin or "text"}),
            [k[0] for k in keys],
            [k[1] for k in keys],
            [k[2] for k in keys],
            [k[3] for k in keys],
            [k[4] for k in keys],
        ],
    )
    made = 0
    rows: list[tuple[int, int, int]] = []  # edge, scope, unit
    for edge_id, inserted, s, t, r, dspace, dscope in cursor.fetchall():
        made += bool(inserted)
        rows.extend((edge_id, scope, unit) for scope, unit in stated[(s, t, r, dspace, dscope)])
    cursor.execute(
        """
        INSERT INTO rag_graphrelationmention (account_id, edge_id, space, scope_id, unit_id)
        SELECT %s, t.e, %s, t.scope, t.unit
        FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS t(e, scope, unit)
        ON CONFLICT DO NOTHING
        """,
        [account_id, space.name, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]],
    )
    return made, {r[0] for r in rows}


def edges_refresh(cursor: Any, edge_ids: Sequence[int]) -> None:
    """Extracted edges (``metadata.extracted_from``) weigh the number of units stating them;
    one that no unit states any more is deleted. Edges written through the graph API keep
    their weight and stay."""
    if not edge_ids:
        return
    edges = list(edge_ids)
    cursor.execute(
        """
        UPDATE rag_graphedge e SET weight = c.n, updated_at = now()
        FROM (SELECT edge_id, count(*)::float8 AS n FROM rag_graphrelationmention
              WHERE edge_id = ANY(%s) GROUP BY edge_id) c
        WHERE e.id = c.edge_id AND e.metadata ->> 'extracted_from' IS NOT NULL
          AND e.weight IS DISTINCT FROM c.n
        """,
        [edges],
    )
    cursor.execute(
        """
        DELETE FROM rag_graphedge e
        WHERE e.id = ANY(%s) AND e.metadata ->> 'extracted_from' IS NOT NULL
          AND NOT EXISTS (SELECT FROM rag_graphrelationmention m WHERE m.edge_id = e.id)
        """,
        [edges],
    )
