"""Which roles govern the writes of each kind of graph node (docs/rag.md, "Knowledge graph").

The graph is where the apps meet: pages, articles, skills, knowledge items and what a
conversation taught are nodes of one graph. The app that owns a kind of node registers, once (in
its ``AppConfig.ready``), the roles a person needs to write nodes of that kind, and every graph
write checks them, whoever calls: a caller never chooses the role it is checked against.

- ``node_type_register(entity_type, roles)``: nodes of this entity type (``skill``,
  ``knowledge_item``, ``page``...);
- ``node_source_register(space, roles)``: nodes and edges derived from a private source of this
  search space (what extraction learnt from a memory context) when their type is not registered.

``NodeType`` and ``NodeStatus`` are the graph's node types and statuses, for the apps writing
nodes (``rag.graph.services``) and reading them (``rag.graph.selectors``).

Any other node or edge needs ``core.actors.WRITE_GRAPH``. An edge is governed by its source
space when it has one, else by its source node (the node it goes from). Registering one name
twice with other roles is a programming error (``ValueError``).
"""

from __future__ import annotations

from collections.abc import Iterable

from core.actors import WRITE_GRAPH
from rag.graph.models import GraphNode

NodeType = GraphNode.NodeType
NodeStatus = GraphNode.Status

_BY_TYPE: dict[str, frozenset[str]] = {}
_BY_SOURCE: dict[str, frozenset[str]] = {}


def _register(table: dict[str, frozenset[str]], name: str, roles: Iterable[str]) -> None:
    wanted = frozenset(roles)
    if not name or not wanted:
        raise ValueError("a node kind needs a name and at least one role")
    if table.setdefault(name, wanted) != wanted:
        raise ValueError(f"{name!r} is registered already with other roles")


def node_type_register(entity_type: str, roles: Iterable[str]) -> None:
    _register(_BY_TYPE, entity_type, roles)


def node_source_register(space: str, roles: Iterable[str]) -> None:
    _register(_BY_SOURCE, space, roles)


def node_roles(*, entity_type: str, derived_space: str = "") -> frozenset[str]:
    """The roles that govern writing a node of ``entity_type`` derived from ``derived_space``
    (``""``: an account-wide source)."""
    found = _BY_TYPE.get(entity_type.strip())
    if found is None and derived_space:
        found = _BY_SOURCE.get(derived_space)
    return found if found is not None else WRITE_GRAPH


def edge_roles(*, source_entity_type: str, derived_space: str = "") -> frozenset[str]:
    """The roles that govern writing an edge derived from ``derived_space`` going from a node of
    ``source_entity_type``."""
    found = _BY_SOURCE.get(derived_space) if derived_space else None
    if found is not None:
        return found
    return _BY_TYPE.get(source_entity_type.strip(), WRITE_GRAPH)


def registered() -> dict[str, dict[str, frozenset[str]]]:
    """What the apps registered (for tests and docs)."""
    return {"types": dict(_BY_TYPE), "sources": dict(_BY_SOURCE)}
