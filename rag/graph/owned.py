"""What other apps read of the graph nodes they own (a page's node, a skill's, a knowledge
item's): by id, by entity type, by the metadata they wrote on them. Re-exported by
``rag.graph.selectors``, the only door other apps read the graph through.

These are the reads an app's own services and jobs make for items it has scoped already (a
page the actor may edit, every article of the installation, every skill in a weekly job), so
they do not filter by an actor; what an actor may *see* of the graph is ``node_list``,
``node_get``, ``node_search`` and the walks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.apps import apps
from django.db.models import Q, QuerySet

from core.models import Account
from rag.graph.models import GraphEdge, GraphNode
from rag.visibility import Source


def _nodes() -> QuerySet[GraphNode]:
    return GraphNode.objects.defer("embedding")


def node_by_id(node_id: int | None) -> GraphNode | None:
    """The node of this id, if it still exists."""
    return _nodes().filter(pk=node_id).first() if node_id is not None else None


def node_exists(node_id: int | None) -> bool:
    return node_id is not None and GraphNode.objects.filter(pk=node_id).exists()


def nodes_by_id(node_ids: Iterable[int | None]) -> dict[int, GraphNode]:
    """The nodes of these ids that still exist, by id."""
    return _nodes().in_bulk([node_id for node_id in node_ids if node_id])


def node_names(node_ids: Iterable[int]) -> dict[int, str]:
    """The names of the nodes of these ids, by id."""
    return dict(GraphNode.objects.filter(pk__in=set(node_ids)).values_list("pk", "name"))


def nodes_of_type(
    *,
    entity_types: Iterable[str],
    account_id: int | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> QuerySet[GraphNode]:
    """The nodes of these entity types (of one account, or of every account when None) whose
    metadata holds ``metadata``'s keys with those values; unordered."""
    nodes = _nodes().filter(entity_type__in=list(entity_types))
    if account_id is not None:
        nodes = nodes.filter(account_id=account_id)
    for key, value in (metadata or {}).items():
        nodes = nodes.filter(**{f"metadata__{key}": value})
    return nodes


def node_ids_of_type(
    *,
    entity_types: Iterable[str],
    account_id: int | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> list[int]:
    return list(
        nodes_of_type(entity_types=entity_types, account_id=account_id, metadata=metadata)
        .order_by()
        .values_list("pk", flat=True)
    )


def edge_of_source(
    *, source_id: int, target_id: int, relation_type: str, source: Source
) -> GraphEdge | None:
    """The edge of ``relation_type`` from ``source_id`` to ``target_id`` written for
    ``source`` (the graph holds one per pair, type and source), if any."""
    return GraphEdge.objects.filter(
        source_id=source_id,
        target_id=target_id,
        relation_type=relation_type,
        derived_space=source.space,
        derived_scope_id=source.scope_id,
    ).first()


# --- what an account export holds (``rag.graph.portability``) ---------------------------------

# The private space whose scopes a derived node or edge may record (memory's long-term entries:
# a conversation's context); the open spaces record no scope.
PRIVATE_SPACE = "memory_entries"


def _contexts(account: Account) -> Any:
    """The ids of the account's memory contexts (memory's model found by name: rag imports no
    app above it); none when memory is not installed."""
    if not apps.is_installed("memory"):
        return []
    model = apps.get_model("memory", "MemoryContext")
    return model.objects.filter(account=account).values("pk")


def derived_sources(account: Account) -> Q:
    """Rows of an account-wide source, or of a memory context the export holds."""
    return Q(derived_scope_id__isnull=True) | Q(
        derived_space=PRIVATE_SPACE, derived_scope_id__in=_contexts(account)
    )


def exported_nodes(*, account: Account, single_agent: bool = False) -> QuerySet[GraphNode]:
    """The nodes an export holds (none in an agent's share: the graph is account-wide)."""
    nodes = GraphNode.objects.filter(account=account).filter(derived_sources(account))
    return nodes.none() if single_agent else nodes


def exported_node_ids(*, account: Account, single_agent: bool = False) -> QuerySet[Any]:
    """The ids of ``exported_nodes``, as a subquery (for the apps' rows that name a node)."""
    return exported_nodes(account=account, single_agent=single_agent).values("pk")
