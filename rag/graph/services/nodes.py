"""Knowledge graph writes: nodes and typed edges of an account.

Nodes are a search space of the one engine (``rag.spaces.GRAPH_NODES``): every write keeps the
node's BM25 postings, its embedding and the account's graph statistics (``GraphScope``) exact in
the same transaction, under the scope's row lock. Embeddings are computed before the transaction
opens (never call a provider inside one). Edges join two nodes of one account (checked here: a
node of another account answers like a missing one); the database refuses duplicates and
self-loops.

The roles a write needs are those registered for the node's kind (``rag.graph.node_types``: the
app owning ``skill`` nodes registers its role, and so on; ``WRITE_GRAPH`` otherwise), never the
caller's choice. Another app may pass the node's ``embedding`` computed before its own
transaction opened, so that a node is written in that transaction without a provider call.

Derived data keeps the visibility of its source (``rag.visibility``): a write made for a private
source (extraction from a conversation) passes ``source``; an explicit write is account-wide.
An agent cannot touch what it cannot see: an edge to a node it may not see is 404
``node_not_found``, and creating a node whose name a node it may not see holds already makes
that node account-wide under the caller's fields (answering 409 would tell that it exists).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.actors import Actor
from core.audit import audit_record
from core.embeddings import generations, get_embedding_provider
from core.errors import Conflict, NotFound, ValidationFailed
from core.writes import changes_of, changes_validate, row_delete, row_update
from rag import keyword
from rag.graph.names import name_key
from rag.graph.node_types import edge_roles, node_roles
from rag.models import GraphEdge, GraphNode, GraphScope
from rag.spaces import GRAPH_NODES, graph_node_text
from rag.visibility import PUBLIC, Source, visibility_of

NODE_UPDATABLE_FIELDS = (
    "node_type",
    "entity_type",
    "name",
    "aliases",
    "description",
    "metadata",
    "mention_count",
    "status",
    "confidence",
)
# The fields a node is found by: changing one re-indexes (and re-embeds) it.
NODE_INDEXED_FIELDS = ("name", "aliases", "description")
MAX_ALIASES = 100


def _node_exists() -> Conflict:
    return Conflict(
        "A node of this entity type and name (case-insensitive) exists.", code="node_exists"
    )


def node_not_found() -> NotFound:
    return NotFound("No such graph node.", code="node_not_found")


_NODE_CONFLICTS = {"graph_node_unique_name": _node_exists}


def _aliases(aliases: Iterable[str]) -> list[str]:
    """Stripped, without blanks and repeats (case-insensitive), in the order given."""
    seen: set[str] = set()
    kept: list[str] = []
    for alias in aliases:
        alias = alias.strip()
        if alias and alias.lower() not in seen:
            seen.add(alias.lower())
            kept.append(alias)
    if len(kept) > MAX_ALIASES:
        raise ValidationFailed(f"At most {MAX_ALIASES} aliases.", code="too_many_aliases")
    return kept


def _keys(name: str, aliases: Iterable[str]) -> tuple[str, list[str]]:
    """The normalised name and aliases extracted entities are merged by."""
    return name_key(name), [key for key in dict.fromkeys(map(name_key, aliases)) if key]


def _confidence(value: float) -> None:
    if not 0 <= value <= 1:
        raise ValidationFailed("confidence must be from 0 to 1.", code="invalid_confidence")


def _name(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValidationFailed("The name is empty.", code="empty_name")
    return value


# --- the index -------------------------------------------------------------------------------


def _embed(node: GraphNode) -> np.ndarray:
    text = graph_node_text(name=node.name, aliases=node.aliases, description=node.description)
    return np.asarray(get_embedding_provider().embed_documents([text])[0])


def scope_locked(account_id: int) -> GraphScope:
    """The account's graph scope, created on first use, locked (inside a transaction)."""
    GraphScope.objects.get_or_create(account_id=account_id)
    return GraphScope.objects.select_for_update().get(account_id=account_id)


def node_reindex(
    scope: GraphScope, node: GraphNode, vector: np.ndarray | None, *, new: bool = False
) -> None:
    """Under the scope's lock: (re-)index ``node`` as it is now in the database."""
    removed_units, removed_terms = (0, 0)
    if not new:
        removed_units, removed_terms = keyword.postings_forget(
            space=GRAPH_NODES, scope_id=scope.pk, unit_ids=[node.pk], delete=True
        )
    terms = keyword.chunk_terms(
        graph_node_text(name=node.name, aliases=node.aliases, description=node.description)
    )
    count = scope.node_count - removed_units + 1
    total = scope.total_terms - removed_terms + terms.length
    keyword.postings_add(
        space=GRAPH_NODES,
        scope_id=scope.pk,
        units=[keyword.IndexedUnit(unit_id=node.pk, terms=terms)],
        avg_length=total / count,
    )
    written: dict[str, Any] = {"keyword_length": terms.length}
    if vector is not None:
        written.update(embedding=vector, embedding_model=get_embedding_provider().model_id)
    GraphNode.objects.filter(pk=node.pk).update(**written)
    if vector is not None:
        generations.written("graph_nodes", [node.pk])
    GraphScope.objects.filter(pk=scope.pk).update(node_count=count, total_terms=total)
    scope.node_count, scope.total_terms = count, total


def _unindex(scope: GraphScope, node_id: int) -> None:
    removed_units, removed_terms = keyword.postings_forget(
        space=GRAPH_NODES, scope_id=scope.pk, unit_ids=[node_id], delete=True
    )
    GraphScope.objects.filter(pk=scope.pk).update(
        node_count=max(0, scope.node_count - removed_units),
        total_terms=max(0, scope.total_terms - removed_terms),
    )


# --- nodes -----------------------------------------------------------------------------------


def _roles_of(node: GraphNode) -> frozenset[str]:
    return node_roles(entity_type=node.entity_type, derived_space=node.derived_space)


def _edge_roles_of(edge: GraphEdge) -> frozenset[str]:
    if GraphEdge._meta.get_field("source").is_cached(edge):
        source_type = edge.source.entity_type
    else:
        source_type = (
            GraphNode.objects.filter(pk=edge.source_id)
            .values_list("entity_type", flat=True)
            .first()
        ) or ""
    return edge_roles(source_entity_type=source_type, derived_space=edge.derived_space)


def node_create(
    *,
    actor: Actor,
    name: str,
    entity_type: str,
    node_type: str = GraphNode.NodeType.ENTITY,
    aliases: Sequence[str] = (),
    description: str = "",
    metadata: Mapping[str, Any] | None = None,
    mention_count: int = 0,
    status: str = GraphNode.Status.ACTIVE,
    confidence: float = 1.0,
    account_id: int | None = None,
    embedding: np.ndarray | None = None,
    source: Source = PUBLIC,
) -> GraphNode:
    """A node of the account's graph, indexed and embedded. 409 ``node_exists`` when the account
    has a node of this entity type whose name matches case-insensitively and the actor may see
    it (one it may not see is made account-wide with these fields: the module's docstring).
    ``source``: the private source the node is derived from (default: account-wide)."""
    account_id = account_id if account_id is not None else actor.account_id
    actor.require(account_id, node_roles(entity_type=entity_type, derived_space=source.space))
    _confidence(confidence)
    node = GraphNode(
        account_id=account_id,
        node_type=node_type,
        entity_type=entity_type.strip(),
        name=_name(name),
        aliases=_aliases(aliases),
        description=description,
        metadata=dict(metadata or {}),
        mention_count=mention_count,
        status=status,
        confidence=confidence,
        derived_space=source.space,
        derived_scope_id=source.scope_id,
    )
    node.name_key, node.alias_keys = _keys(node.name, node.aliases)
    node.full_clean(exclude=["account", "scope"], validate_unique=False, validate_constraints=False)
    vector = _embed(node) if embedding is None else embedding
    try:
        with transaction.atomic():
            scope = scope_locked(account_id)
            node.scope = scope
            node.save()
            node_reindex(scope, node, vector, new=True)
            audit_record(
                actor=actor,
                action="rag.graph.node.create",
                account_id=account_id,
                target=node,
                changes={"name": node.name, "entity_type": node.entity_type},
            )
    except IntegrityError as exc:
        if "graph_node_unique_name" in str(exc):
            hidden = _hidden_namesake(actor, node) if source.is_public else None
            if hidden is None:
                raise _node_exists() from exc
            return _adopt(actor, hidden, node, vector)
        raise
    node.refresh_from_db()
    return node


def _hidden_namesake(actor: Actor, node: GraphNode) -> GraphNode | None:
    """The account's node of ``node``'s type and name when ``actor`` may not see it."""
    from rag.graph.nodes import node_list  # reads, below the services

    found = (
        GraphNode.objects.defer("embedding")
        .filter(account_id=node.account_id, entity_type=node.entity_type)
        .filter(name__iexact=node.name)
        .first()
    )
    if found is None or node_list(actor=actor).filter(pk=found.pk).exists():
        return None
    return found


def _adopt(actor: Actor, found: GraphNode, wanted: GraphNode, vector: np.ndarray) -> GraphNode:
    """An explicit, account-wide write of a node that only private sources named: the node
    becomes account-wide with the writer's fields (its private mentions and edges stay
    private), audited as the creation it answers."""
    fields = {n: getattr(wanted, n) for n in NODE_UPDATABLE_FIELDS if n != "mention_count"}
    with transaction.atomic():
        scope = scope_locked(found.account_id)
        GraphNode.objects.filter(pk=found.pk).update(
            **fields,
            name_key=wanted.name_key,
            alias_keys=wanted.alias_keys,
            derived_space="",
            derived_scope_id=None,
            updated_at=timezone.now(),
        )
        node_reindex(scope, GraphNode.objects.get(pk=found.pk), vector)
        audit_record(
            actor=actor,
            action="rag.graph.node.create",
            account_id=found.account_id,
            target=found,
            changes={"name": wanted.name, "entity_type": wanted.entity_type},
        )
    found.refresh_from_db()
    return found


def node_update(
    *,
    actor: Actor,
    node: GraphNode,
    fields: Mapping[str, Any],
    embedding: np.ndarray | None = None,
) -> GraphNode:
    """Change a node; a new name, aliases or description re-index and re-embed it (with
    ``embedding`` when the caller computed it already). A new entity type needs the roles of
    both kinds."""
    actor.require(node.account_id, _roles_of(node))
    if "entity_type" in fields and fields["entity_type"].strip() != node.entity_type:
        actor.require(
            node.account_id,
            node_roles(entity_type=fields["entity_type"], derived_space=node.derived_space),
        )
    fields = dict(fields)
    if "name" in fields:
        fields["name"] = _name(fields["name"])
    if "aliases" in fields:
        fields["aliases"] = _aliases(fields["aliases"])
    if "entity_type" in fields:
        fields["entity_type"] = fields["entity_type"].strip()
    if "confidence" in fields:
        _confidence(fields["confidence"])
    changes = changes_of(node, fields, NODE_UPDATABLE_FIELDS)
    if not changes:
        return node
    changes_validate(node, changes)
    reindex = any(name in changes for name in NODE_INDEXED_FIELDS)
    vector = None
    if reindex:
        candidate = GraphNode(**{**{f: getattr(node, f) for f in NODE_INDEXED_FIELDS}, **changes})
        vector = _embed(candidate) if embedding is None else embedding
    with transaction.atomic():
        scope = scope_locked(node.account_id)

        def then() -> None:
            if "name" in changes or "aliases" in changes:
                fresh = GraphNode.objects.only("name", "aliases").get(pk=node.pk)
                key, alias_keys = _keys(fresh.name, fresh.aliases)
                GraphNode.objects.filter(pk=node.pk).update(name_key=key, alias_keys=alias_keys)
            if reindex:
                node_reindex(scope, GraphNode.objects.get(pk=node.pk), vector)

        return row_update(
            actor=actor,
            instance=node,
            changes=changes,
            action="rag.graph.node.update",
            account_id=node.account_id,
            conflicts=_NODE_CONFLICTS,
            missing=node_not_found,
            then=then,
        )


def node_delete(*, actor: Actor, node: GraphNode) -> None:
    """Delete a node with its edges, out of the index."""
    actor.require(node.account_id, _roles_of(node))
    with transaction.atomic():
        scope = scope_locked(node.account_id)
        _unindex(scope, node.pk)
        row_delete(
            actor=actor,
            instance=node,
            action="rag.graph.node.delete",
            account_id=node.account_id,
            changes={"name": node.name, "entity_type": node.entity_type},
        )


# --- edges -----------------------------------------------------------------------------------


def edge_create(
    *,
    actor: Actor,
    source_id: int,
    target_id: int,
    relation_type: str,
    weight: float = 1.0,
    confidence: float = 1.0,
    bidirectional: bool = False,
    metadata: Mapping[str, Any] | None = None,
    account_id: int | None = None,
    source: Source = PUBLIC,
) -> GraphEdge:
    """A typed edge between two nodes of the account. 400 ``self_loop`` from a node to itself,
    404 ``node_not_found`` for a node that is missing, another account's or one the actor may
    not see, 409 ``edge_exists`` for a second edge of the type between the same nodes in the
    same direction from the same ``source`` (default: account-wide)."""
    account_id = account_id if account_id is not None else actor.account_id
    ends = GraphNode.objects.filter(account_id=account_id, pk__in=[source_id, target_id])
    if source.is_public:  # an explicit write: of nodes the actor may see
        ends = ends.filter(visibility_of(actor).node_q())
    types = dict(ends.values_list("pk", "entity_type"))
    actor.require(
        account_id,
        edge_roles(source_entity_type=types.get(source_id, ""), derived_space=source.space),
    )
    relation_type = relation_type.strip()
    if not relation_type:
        raise ValidationFailed("The relation type is empty.", code="empty_relation_type")
    if source_id == target_id:
        raise ValidationFailed("An edge cannot join a node to itself.", code="self_loop")
    _confidence(confidence)
    if len(types) != 2:
        raise node_not_found()
    edge = GraphEdge(
        account_id=account_id,
        source_id=source_id,
        target_id=target_id,
        relation_type=relation_type,
        weight=weight,
        confidence=confidence,
        bidirectional=bidirectional,
        metadata=dict(metadata or {}),
        derived_space=source.space,
        derived_scope_id=source.scope_id,
    )
    try:
        with transaction.atomic():
            edge.save()
            audit_record(
                actor=actor,
                action="rag.graph.edge.create",
                account_id=account_id,
                target=edge,
                changes={
                    "source": source_id,
                    "target": target_id,
                    "relation_type": relation_type,
                },
            )
    except IntegrityError as exc:
        if "graph_edge_unique" in str(exc):
            raise Conflict(
                "An edge of this relation type joins these nodes already.", code="edge_exists"
            ) from exc
        if "graph_edge_no_self_loop" in str(exc):
            raise ValidationFailed(
                "An edge cannot join a node to itself.", code="self_loop"
            ) from exc
        if "foreign key" in str(exc).lower():
            raise node_not_found() from exc  # a node deleted meanwhile
        raise
    return edge


def edge_delete(*, actor: Actor, edge: GraphEdge) -> None:
    actor.require(edge.account_id, _edge_roles_of(edge))
    row_delete(
        actor=actor,
        instance=edge,
        action="rag.graph.edge.delete",
        account_id=edge.account_id,
        changes={
            "source": edge.source_id,
            "target": edge.target_id,
            "relation_type": edge.relation_type,
        },
    )


@dataclass(frozen=True)
class EdgeSync:
    created: int
    removed: int
    updated: int


def edges_sync(
    *,
    actor: Actor,
    source: GraphNode,
    relation_type: str,
    targets: Mapping[int, Mapping[str, Any]],
) -> EdgeSync:
    """Make ``source``'s outgoing edges of ``relation_type`` exactly ``targets`` (target node id
    -> the edge's metadata): create the missing, delete the rest, rewrite changed metadata; an
    unchanged set writes nothing (idempotent). One transaction under the source node's row lock,
    so concurrent syncs of one source serialise; one audit event when anything changed. Targets
    must be other nodes of the source's account (404 ``node_not_found`` otherwise)."""
    actor.require(source.account_id, edge_roles(source_entity_type=source.entity_type))
    wanted = {int(node_id): dict(metadata) for node_id, metadata in targets.items()}
    if source.pk in wanted:
        raise ValidationFailed("An edge cannot join a node to itself.", code="self_loop")
    with transaction.atomic():
        if not GraphNode.objects.select_for_update().filter(pk=source.pk).exists():
            raise node_not_found()
        if wanted:
            found = (
                GraphNode.objects.filter(account_id=source.account_id, pk__in=wanted)
                .filter(visibility_of(actor).node_q())
                .count()
            )
            if found != len(wanted):
                raise node_not_found()
        existing = {
            edge.target_id: edge
            for edge in GraphEdge.objects.filter(
                source=source, relation_type=relation_type, derived_scope_id__isnull=True
            )
        }
        removed = [edge.pk for target, edge in existing.items() if target not in wanted]
        changed = []
        for target, edge in existing.items():
            if target in wanted and edge.metadata != wanted[target]:
                edge.metadata, edge.updated_at = wanted[target], timezone.now()
                changed.append(edge)
        new = [
            GraphEdge(
                account_id=source.account_id,
                source_id=source.pk,
                target_id=target,
                relation_type=relation_type,
                metadata=metadata,
            )
            for target, metadata in wanted.items()
            if target not in existing
        ]
        if removed:
            GraphEdge.objects.filter(pk__in=removed).delete()
        if changed:
            GraphEdge.objects.bulk_update(changed, ["metadata", "updated_at"])
        if new:
            # A concurrent single edge_create of the same edge wins; this sync keeps it.
            GraphEdge.objects.bulk_create(new, ignore_conflicts=True)
        result = EdgeSync(created=len(new), removed=len(removed), updated=len(changed))
        if new or removed or changed:
            audit_record(
                actor=actor,
                action="rag.graph.edges.sync",
                account_id=source.account_id,
                target=source,
                changes={
                    "relation_type": relation_type,
                    "created": result.created,
                    "removed": result.removed,
                    "updated": result.updated,
                },
            )
    return result
