"""Find, adopt or create the graph node another app's item stands for, once for every app
(pages and articles, knowledge items, what extraction names, skills).

``node_ensure`` answers the node and whether it made it:

1. **find**: the node ``node_id`` names when it still exists in the account; else the account's
   node of ``entity_type`` whose name matches ``name`` case-insensitively (``match="type"``, the
   graph's unique name), restricted to nodes of ``source`` when ``same_source``; or
   (``match="key"``) the node of any type whose normalised name is ``name``'s
   (``rag.graph.names.name_key``);
2. **adopt**: a node found by name is the caller's when ``adoptable`` (if given) accepts it; the
   caller may raise there (a skill's name another skill holds) or answer ``False`` after freeing
   the node (a renamed page still holding it), and the node is then made anew;
3. **bring up to date**: a found node gets ``fields`` (only the changed ones are written,
   re-indexed and re-embedded with ``embedding`` when given; nothing changed, nothing written);
4. **create** otherwise, with ``fields`` and ``initial`` (fields written on creation only);
5. **retry on conflict**: a concurrent writer that made the node meanwhile (409
   ``node_exists``) makes this one find it by type and name (from ``source`` when
   ``same_source``) and takes it as it is (step 3, ``adoptable`` is not asked again: the
   writer that made it won); a node still not found answers the 409.

The roles checked are those of the node's kind (``rag.graph.node_types``), as for every graph
write. No actor scoping of the lookups: the caller scoped the item it ensures a node for, and
nodes an actor may not see are handled by ``node_create`` (module ``rag.graph.services.nodes``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from core.actors import Actor
from core.errors import Conflict
from rag.graph.models import GraphNode
from rag.graph.names import name_key
from rag.graph.services.nodes import node_create, node_update
from rag.visibility import PUBLIC, Source


@dataclass(frozen=True)
class EnsuredNode:
    node: GraphNode
    created: bool


def _by_name(
    account_id: int, name: str, entity_type: str, match: str, source: Source | None
) -> GraphNode | None:
    nodes = GraphNode.objects.defer("embedding").filter(account_id=account_id)
    if match == "key":
        return nodes.filter(name_key=name_key(name)).first()
    nodes = nodes.filter(entity_type=entity_type.strip(), name__iexact=name.strip())
    if source is not None:
        nodes = nodes.filter(derived_space=source.space, derived_scope_id=source.scope_id)
    return nodes.first()


def node_ensure(
    *,
    actor: Actor,
    account_id: int,
    name: str,
    entity_type: str,
    node_id: int | None = None,
    match: Literal["type", "key"] = "type",
    same_source: bool = False,
    fields: Mapping[str, Any] | None = None,
    initial: Mapping[str, Any] | None = None,
    source: Source = PUBLIC,
    embedding: np.ndarray | None = None,
    adoptable: Callable[[GraphNode], bool] | None = None,
) -> EnsuredNode:
    """The node for the caller's item (the module's docstring): found, adopted and brought up to
    date, or created (``created``)."""
    fields = dict(fields or {})
    scoped = source if same_source else None
    node = None
    if node_id is not None:
        node = (
            GraphNode.objects.defer("embedding").filter(account_id=account_id, pk=node_id).first()
        )
    if node is None:
        node = _by_name(account_id, name, entity_type, match, scoped)
        if node is not None and adoptable is not None and not adoptable(node):
            node = None
    if node is None:
        wanted = {"name": name, **(initial or {}), **fields}
        wanted.setdefault("entity_type", entity_type)
        try:
            made = node_create(
                actor=actor, account_id=account_id, embedding=embedding, source=source, **wanted
            )
            return EnsuredNode(made, created=True)
        except Conflict as exc:  # made meanwhile by a concurrent writer
            node = _by_name(account_id, name, entity_type, "type", scoped)
            if node is None:
                raise exc from None
    if any(getattr(node, name, None) != value for name, value in fields.items()):
        node = node_update(actor=actor, node=node, fields=fields, embedding=embedding)
    return EnsuredNode(node, created=False)
