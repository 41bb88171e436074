"""The graph built from text: entities found in the units of a search space (document chunks,
long-term memory entries) become nodes of the account's knowledge graph, each linked to the
units that mention it (``GraphMention``), and the most salient entities of a unit are joined by
``co_occurs`` edges weighted by how many units they share.

Everything here is derived data, exact whatever the order of calls (docs/rag.md, "The graph
built from text"):

- entities are merged into existing nodes by their normalised name or an alias
  (``rag.graph.names.name_key``), whatever their type, so a name is one node;
- ``mentions_replace`` replaces the mentions of the units it is given (indexing a unit twice
  changes nothing), drops the mentions of units that no longer exist in those scopes, and
  recomputes, for every node whose mentions changed, its ``mention_count`` and its
  ``co_occurs`` edges from the mentions themselves (weights are counts of shared units, never
  increments);
- relations an extractor names (the offline one's, ``rag.graph.relation_patterns``, or the
  LLM's) become edges of their type (``rag.graph.services.relations``), once per pair, type
  and source, each with the units stating it (``GraphRelationMention``): an extracted edge
  weighs the number of units stating it, and indexing a unit again, or deleting it, takes
  back what it stated (an extracted edge no unit states any more is deleted; edges written
  through the graph API are never touched);
- the aliases an extractor brings for an existing node's entity ("Lind" for "Jonas Lind") are
  added to the node (re-indexed, re-embedded) when the node is of the same source;
- derived data keeps the visibility of its source (``rag.visibility``): a node made from a
  unit of a private scope (a memory context) records that scope, an entity merges into a node
  by an alias only when that node is account-wide or of the same scope (an alias is what a
  source said of the node), and edges record their source: ``co_occurs`` edges are counted per
  source (the open spaces' units together, each private scope apart), so a private
  co-occurrence never shows in a public edge's weight.

New nodes are embedded before the transaction opens; the transaction takes the account's graph
scope lock (``GraphScope``), under which names are looked up again, so concurrent runs never
make two nodes of one name. No actor and no audit: this runs for ingestion and extraction, like
the ingestion pipeline.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import connection, transaction
from django.db.models import Q

from core.embeddings import generations, get_embedding_provider
from rag import keyword
from rag.graph.entities import Entity, Relation
from rag.graph.names import TITLES, name_key
from rag.graph.relations import COOCCURS
from rag.graph.services.relations import (
    edges_refresh,
    orphans_forget,
    relations_prune,
    relations_write,
)
from rag.models import GraphMention, GraphNode, GraphScope
from rag.spaces import GRAPH_NODES, SearchSpace, graph_node_text
from rag.tuning import TUNING
from rag.visibility import PUBLIC, Source, open_spaces, source_of

EMBED_BATCH = 64


@dataclass
class UnitEntities:
    """What one unit of a space mentions."""

    unit_id: int
    scope_id: int
    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)


@dataclass
class IndexOutcome:
    units: int = 0
    mentions: int = 0
    nodes_created: int = 0
    nodes_touched: int = 0
    edges: int = 0

    def add(self, other: IndexOutcome) -> None:
        """Count ``other``'s counts in this one."""
        self.units += other.units
        self.mentions += other.mentions
        self.nodes_created += other.nodes_created
        self.nodes_touched += other.nodes_touched
        self.edges += other.edges


def _keys_of(node: GraphNode) -> set[str]:
    return {node.name_key, *node.alias_keys} - {""}


def _existing(account_id: int, keys: Iterable[str], source: Source = PUBLIC) -> dict[str, int]:
    """The account's nodes by every key they answer to among ``keys``: by name always; by an
    alias only a node that is account-wide or from ``source`` (an alias a private source gave
    a node is not named to others through another source's mention)."""
    keys = list(set(keys))
    if not keys:
        return {}
    found: dict[str, int] = {}
    by_alias: dict[str, int] = {}
    rows = (
        GraphNode.objects.filter(account_id=account_id)
        .filter(Q(name_key__in=keys) | Q(alias_keys__overlap=keys))
        .order_by("id")
        .values_list("id", "name_key", "alias_keys", "derived_space", "derived_scope_id")
    )
    wanted = set(keys)
    for node_id, key, aliases, space, scope_id in rows:
        if key in wanted:
            found.setdefault(key, node_id)
        if scope_id is None or (space, scope_id) == (source.space, source.scope_id):
            for known in aliases:
                if known in wanted:
                    by_alias.setdefault(known, node_id)
    for known, node_id in by_alias.items():
        found.setdefault(known, node_id)
    return found


def nodes_resolve(
    *, account_id: int, entities: Iterable[Entity], origin: str = "", source: Source = PUBLIC
) -> tuple[dict[str, int], int]:
    """The node of every entity (by its name key), made when the account has none: (key ->
    node id, nodes created). Aliases of an entity find its node too; a new node keeps them and
    records ``source`` (where the entities were found)."""
    wanted: dict[str, Entity] = {}
    for entity in entities:
        key = name_key(entity.name)
        if not key:
            continue
        if key not in wanted:
            wanted[key] = entity
        elif entity.aliases:  # one name's aliases from every unit that gives some
            joined = tuple(dict.fromkeys([*wanted[key].aliases, *entity.aliases]))
            wanted[key] = replace(wanted[key], aliases=joined)
    owners: dict[str, set[str]] = {}
    for key, entity in wanted.items():
        for alias in entity.aliases:
            if name_key(alias) not in ("", key):
                owners.setdefault(name_key(alias), set()).add(key)
    alias_of = {alias: next(iter(keys)) for alias, keys in owners.items() if len(keys) == 1}
    known = _existing(account_id, [*wanted, *alias_of], source)
    resolved = {key: known[key] for key in wanted if key in known}
    # By an alias: a short one ("Lind", "Dr. Lind") only to the node of that very name (a
    # document that wrote the surname alone): "Pierre Curie", aliased "Curie", must not join
    # the node "Marie Curie" that another document aliased "Curie" too.
    short = [known[a] for a in alias_of if a in known and _short(a)]
    named = dict(GraphNode.objects.filter(pk__in=short).values_list("id", "name_key"))
    for alias, key in alias_of.items():
        if (
            key not in resolved
            and alias in known
            and (not _short(alias) or named.get(known[alias]) == alias)
        ):
            resolved[key] = known[alias]
    via_alias = {key for key in resolved if key not in known}
    # An entity named by another one's alias in this batch ("Eckner", "Dr. Eckner" in one
    # document, "Daria Eckner" with the alias "Eckner" in another) is that entity's node.
    merged = {
        key: alias_of[key]
        for key in wanted
        if key not in resolved and key in alias_of and alias_of[key] in wanted
    }
    for key, into in merged.items():
        extra = [wanted[key].name, *wanted[key].aliases]
        joined = tuple(dict.fromkeys([*wanted[into].aliases, *extra]))
        wanted[into] = replace(wanted[into], aliases=joined)
    for key in merged:
        wanted.pop(key)
    _aliases_add(account_id, wanted, resolved, source, via_alias)
    missing = [key for key in wanted if key not in resolved]
    if not missing:
        resolved.update({key: resolved[into] for key, into in merged.items() if into in resolved})
        return resolved, 0
    texts = [
        graph_node_text(name=wanted[k].name, aliases=wanted[k].aliases, description="")
        for k in missing
    ]
    provider = get_embedding_provider()
    vectors: list[Any] = []
    for start in range(0, len(texts), EMBED_BATCH):  # outside any transaction
        vectors.extend(provider.embed_documents(texts[start : start + EMBED_BATCH]))
    created = 0
    with transaction.atomic():
        GraphScope.objects.get_or_create(account_id=account_id)
        scope = GraphScope.objects.select_for_update().get(account_id=account_id)
        known = _existing(account_id, missing, source)  # made meanwhile, under the lock now
        new: list[tuple[GraphNode, keyword.ChunkTerms]] = []
        for key, vector in zip(missing, vectors, strict=True):
            if key in known:
                resolved[key] = known[key]
                continue
            entity = wanted[key]
            aliases = [a for a in dict.fromkeys(entity.aliases) if name_key(a) not in ("", key)]
            node = GraphNode(
                account_id=account_id,
                scope=scope,
                node_type=GraphNode.NodeType.CONCEPT
                if entity.entity_type == "concept"
                else GraphNode.NodeType.ENTITY,
                entity_type=entity.entity_type[:100],
                name=entity.name.strip()[:500],
                aliases=aliases[:100],
                name_key=key,
                alias_keys=[name_key(a) for a in aliases[:100]],
                metadata={"extracted_from": origin} if origin else {},
                derived_space=source.space,
                derived_scope_id=source.scope_id,
                confidence=0.5,
                embedding=vector,
                embedding_model=provider.model_id,
            )
            terms = keyword.chunk_terms(
                graph_node_text(name=node.name, aliases=node.aliases, description="")
            )
            node.keyword_length = terms.length
            new.append((node, terms))
        # One name of one type exists once (graph_node_unique_name): a node of another type
        # with this name would be found by its key above; conflicts cannot happen here.
        GraphNode.objects.bulk_create([node for node, _ in new])
        generations.written("graph_nodes", [node.pk for node, _ in new])
        created = len(new)
        if new:
            count = scope.node_count + created
            total = scope.total_terms + sum(terms.length for _, terms in new)
            keyword.postings_add(
                space=GRAPH_NODES,
                scope_id=scope.pk,
                units=[keyword.IndexedUnit(unit_id=n.pk, terms=t) for n, t in new],
                avg_length=total / count,
            )
            GraphScope.objects.filter(pk=scope.pk).update(node_count=count, total_terms=total)
        for node, _ in new:
            resolved[node.name_key] = node.pk
    resolved.update({key: resolved[into] for key, into in merged.items() if into in resolved})
    return resolved, created


def _short(alias_key: str) -> bool:
    """A surname, or a title and a surname: an alias many people may share."""
    words = alias_key.split()
    return len(words) == 1 or (len(words) == 2 and words[0].capitalize() in TITLES)


def _aliases_add(
    account_id: int,
    wanted: dict[str, Entity],
    resolved: dict[str, int],
    source: Source,
    via_alias: set[str],
) -> None:
    """Give existing nodes the aliases their entities bring ("Lind" and "Dr. Lind" for
    "Jonas Lind", found in a later document), re-indexed and re-embedded; only a node of the
    same source (an alias a private source gave is not shown through an account-wide node)."""
    from rag.graph.services.nodes import node_reindex, scope_locked

    brought: dict[int, list[str]] = {}
    for key, entity in wanted.items():
        if key in resolved and (entity.aliases or key in via_alias):
            # Its name too when it found the node by an alias ("Daria Eckner" joining the
            # node "Eckner" a document that wrote the surname alone made).
            brought.setdefault(resolved[key], []).extend([entity.name, *entity.aliases])
    if not brought:
        return
    changed: list[tuple[GraphNode, list[str]]] = []
    for node in GraphNode.objects.filter(account_id=account_id, pk__in=list(brought)).only(
        "id", "name", "aliases", "description", "name_key", "alias_keys", "derived_space",
        "derived_scope_id",
    ):  # fmt: skip
        if (node.derived_space, node.derived_scope_id) != (source.space, source.scope_id):
            continue
        keys = _keys_of(node)
        new = []
        for alias in brought[node.pk]:
            key = name_key(alias)
            if key and key not in keys:
                keys.add(key)
                new.append(" ".join(alias.split())[:500])
        if new and len(node.aliases) < 100:
            changed.append((node, [*node.aliases, *new][:100]))
    if not changed:
        return
    changed.sort(key=lambda pair: pair[0].pk)  # rows locked in id order, as nodes_refresh does
    provider = get_embedding_provider()
    vectors = provider.embed_documents(
        [graph_node_text(name=n.name, aliases=a, description=n.description) for n, a in changed]
    )  # outside any transaction
    with transaction.atomic():
        scope = scope_locked(account_id)
        for (node, aliases), vector in zip(changed, vectors, strict=True):
            GraphNode.objects.filter(pk=node.pk).update(
                aliases=aliases, alias_keys=[k for k in dict.fromkeys(map(name_key, aliases)) if k]
            )
            node.aliases = aliases
            node_reindex(scope, node, vector)


def scopes_lock(cursor: Any, space: SearchSpace, scope_ids: Iterable[int]) -> None:
    """Until the transaction ends, the only writer of these scopes' mentions (a transaction
    advisory lock per scope, taken in order). Replacing a unit's mentions deletes and inserts
    them: two indexings of one document at once (its graph task and the catch-up job) would
    both delete nothing, then collide on the second insert."""
    for scope_id in sorted(set(scope_ids)):
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            [f"rag.graph:{space.name}:{scope_id}"],
        )


def _prune(cursor: Any, space: SearchSpace, scope_ids: Sequence[int]) -> set[int]:
    """Forget the mentions of units gone from these scopes; the nodes they named."""
    return orphans_forget(cursor, "rag_graphmention", "node_id", space, scope_ids)


def mentions_replace(
    *, account_id: int, space: SearchSpace, units: Sequence[UnitEntities], origin: str = ""
) -> IndexOutcome:
    """Make the mentions of ``units`` (of ``space``, in the account) exactly what they mention
    now; see the module's docstring."""
    outcome = IndexOutcome(units=len(units))
    if not units:
        return outcome
    # Each source's entities resolved apart (the account-wide first: a name an open unit
    # names makes an account-wide node); one node per name whatever its source.
    by_source: dict[Source, list[Entity]] = {}
    for unit in units:
        by_source.setdefault(source_of(space.name, unit.scope_id), []).extend(unit.entities)
    resolved: dict[str, int] = {}
    for source in sorted(by_source, key=lambda s: (not s.is_public, s.space, s.scope_id or 0)):
        found, created = nodes_resolve(
            account_id=account_id, entities=by_source[source], origin=origin, source=source
        )
        for key, made in found.items():
            resolved.setdefault(key, made)
        outcome.nodes_created += created
    rows: dict[tuple[int, int], tuple[int, float, int]] = {}
    for unit in units:
        for entity in unit.entities:
            node_id = resolved.get(name_key(entity.name))
            if node_id is None:
                continue
            _, salience, occurrences = rows.get((node_id, unit.unit_id), (0, 0.0, 0))
            rows[(node_id, unit.unit_id)] = (
                unit.scope_id,
                max(salience, entity.salience),
                occurrences + entity.occurrences,
            )
    unit_ids = [unit.unit_id for unit in units]
    with transaction.atomic(), connection.cursor() as cursor:
        scopes_lock(cursor, space, [unit.scope_id for unit in units])
        cursor.execute(
            "DELETE FROM rag_graphmention WHERE space = %s AND unit_id = ANY(%s) RETURNING node_id",
            [space.name, unit_ids],
        )
        touched = {row[0] for row in cursor.fetchall()}
        touched |= _prune(cursor, space, sorted({unit.scope_id for unit in units}))
        if rows:
            keys = list(rows)
            cursor.execute(
                """
                INSERT INTO rag_graphmention
                    (account_id, node_id, space, scope_id, unit_id, salience, occurrences)
                SELECT %s, t.node_id, %s, t.scope_id, t.unit_id, t.salience, t.occurrences
                FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[], %s::float8[], %s::int[])
                    AS t(node_id, unit_id, scope_id, salience, occurrences)
                JOIN rag_graphnode n ON n.id = t.node_id
                """,
                [
                    account_id,
                    space.name,
                    [k[0] for k in keys],
                    [k[1] for k in keys],
                    [rows[k][0] for k in keys],
                    [rows[k][1] for k in keys],
                    [rows[k][2] for k in keys],
                ],
            )
            outcome.mentions = cursor.rowcount
        touched |= {node_id for node_id, _ in rows}
        outcome.nodes_touched = len(touched)
        cursor.execute(
            "DELETE FROM rag_graphrelationmention WHERE space = %s AND unit_id = ANY(%s) "
            "RETURNING edge_id",
            [space.name, unit_ids],
        )
        edges = {row[0] for row in cursor.fetchall()}
        edges |= relations_prune(cursor, space, sorted({unit.scope_id for unit in units}))
        outcome.edges, stated = relations_write(cursor, account_id, space, units, resolved, origin)
        edges_refresh(cursor, sorted(edges | stated))
        nodes_refresh(cursor, account_id, sorted(touched))
    return outcome


def nodes_refresh(cursor: Any, account_id: int, node_ids: Sequence[int]) -> None:
    """Recompute the mention counts and ``co_occurs`` edges of these nodes from the mentions."""
    if not node_ids:
        return
    nodes = sorted(set(node_ids))
    # The rows locked in id order first: two indexings of one account's scopes refresh shared
    # nodes, and an update's own order is the plan's (they deadlocked under the fuzzer's load).
    cursor.execute(
        "SELECT 1 FROM rag_graphnode WHERE id = ANY(%s) ORDER BY id FOR NO KEY UPDATE", [nodes]
    )
    cursor.execute(
        """
        UPDATE rag_graphnode n SET mention_count = coalesce(c.count, 0)
        FROM unnest(%s::bigint[]) AS t(id)
        LEFT JOIN (SELECT node_id, count(*) AS count FROM rag_graphmention
                   WHERE node_id = ANY(%s) GROUP BY node_id) c ON c.node_id = t.id
        WHERE n.id = t.id AND n.mention_count IS DISTINCT FROM coalesce(c.count, 0)
        """,
        [nodes, nodes],
    )
    # Per pair and source: the open spaces' units together (derived blank / NULL), each
    # scope of another space apart.
    cursor.execute(
        """
        WITH top AS (
            SELECT node_id, space, unit_id,
                   CASE WHEN space = ANY(%(open)s::varchar[]) THEN '' ELSE space END AS vspace,
                   CASE WHEN space = ANY(%(open)s::varchar[]) THEN NULL ELSE scope_id END
                       AS vscope
            FROM rag_graphmention
            WHERE salience >= %(salience)s
        ),
        touched AS (
            SELECT DISTINCT space, unit_id FROM top WHERE node_id = ANY(%(nodes)s)
        )
        SELECT a.node_id, b.node_id, a.vspace, a.vscope, count(*)
        FROM touched u
        JOIN top a ON a.space = u.space AND a.unit_id = u.unit_id
        JOIN top b ON b.space = u.space AND b.unit_id = u.unit_id AND a.node_id < b.node_id
        WHERE a.node_id = ANY(%(nodes)s) OR b.node_id = ANY(%(nodes)s)
        GROUP BY a.node_id, b.node_id, a.vspace, a.vscope
        """,
        {"salience": TUNING.build.cooccurrence_min_salience, "nodes": nodes, "open": open_spaces()},
    )
    pairs = cursor.fetchall()
    columns = [
        [p[0] for p in pairs],
        [p[1] for p in pairs],
        [p[2] for p in pairs],
        [p[3] for p in pairs],
        [float(p[4]) for p in pairs],
    ]
    cursor.execute(
        """
        INSERT INTO rag_graphedge (account_id, source_id, target_id, relation_type, weight,
            confidence, bidirectional, metadata, created_at, updated_at, derived_space,
            derived_scope_id)
        SELECT %s, t.s, t.t, %s, t.w, 1.0, true, '{}'::jsonb, now(), now(), t.space, t.scope
        FROM unnest(%s::bigint[], %s::bigint[], %s::varchar[], %s::bigint[], %s::float8[])
            AS t(s, t, space, scope, w)
        ON CONFLICT ON CONSTRAINT graph_edge_unique
        DO UPDATE SET weight = EXCLUDED.weight, updated_at = now()
        WHERE rag_graphedge.weight IS DISTINCT FROM EXCLUDED.weight
        """,
        [account_id, COOCCURS, *columns],
    )
    cursor.execute(
        """
        DELETE FROM rag_graphedge e
        WHERE e.account_id = %s AND e.relation_type = %s
          AND (e.source_id = ANY(%s) OR e.target_id = ANY(%s))
          AND NOT EXISTS (
              SELECT FROM unnest(%s::bigint[], %s::bigint[], %s::varchar[], %s::bigint[])
                  AS t(s, t, space, scope)
              WHERE t.s = e.source_id AND t.t = e.target_id AND t.space = e.derived_space
                AND t.scope IS NOT DISTINCT FROM e.derived_scope_id)
        """,
        [account_id, COOCCURS, nodes, nodes, *columns[:4]],
    )


def mentions_forget(*, space: SearchSpace, scope_ids: Sequence[int]) -> int:
    """Drop the mentions of units gone from these scopes (after deletions), refreshing the
    nodes they named; how many nodes were touched."""
    with transaction.atomic(), connection.cursor() as cursor:
        scopes_lock(cursor, space, scope_ids)
        touched = _prune(cursor, space, scope_ids)
        edges_refresh(cursor, sorted(relations_prune(cursor, space, scope_ids)))
        by_account: dict[int, list[int]] = defaultdict(list)
        for node_id, account_id in GraphNode.objects.filter(pk__in=touched).values_list(
            "id", "account_id"
        ):
            by_account[account_id].append(node_id)
        for account_id, node_ids in by_account.items():
            nodes_refresh(cursor, account_id, node_ids)
    return len(touched)


def mentions_forget_soon(task: Any, space: SearchSpace, scope_ids: Sequence[int]) -> None:
    """Once the deleting transaction commits, ``task`` (the app's task calling
    ``mentions_forget`` for ``space`` and its scope ids) drops the mentions of the units it
    deleted, so that nothing derived from them stays in the graph; with the broker down, this
    process does it."""
    from core.queue import task_send_on_commit

    scopes = sorted(set(scope_ids))

    def inline() -> None:
        try:
            mentions_forget(space=space, scope_ids=scopes)
        except Exception:
            logging.getLogger("engram.rag").exception(
                "graph mentions of deleted %s not forgotten (scopes %s)", space.name, scopes
            )

    if scopes:
        task_send_on_commit(task, scopes, on_failure=inline)


def unit_mentions(*, space: SearchSpace, unit_ids: Sequence[int]) -> dict[int, list[int]]:
    """The nodes each unit mentions, most salient first (for explanations and tests)."""
    found: dict[int, list[int]] = defaultdict(list)
    for unit_id, node_id in (
        GraphMention.objects.filter(space=space.name, unit_id__in=list(unit_ids))
        .order_by("unit_id", "-salience", "node_id")
        .values_list("unit_id", "node_id")
    ):
        found[unit_id].append(node_id)
    return dict(found)
