"""The knowledge graph's kinds of an account export (``core.portability``; declared in
``rag.services.portability``): nodes (type, entity type, name, aliases, description, metadata,
status, where they came from) and typed edges (relation type, weight, confidence, direction,
metadata, where they came from). Both are ``late``: they load after every app's other kinds,
so a node made from a private memory context refers to that context (``memory.context``) and
follows its new id, keeping its visibility (``rag.visibility``).

What is carried and what is rebuilt:

- every node is carried, whoever made it. The apps that own nodes find theirs again by name
  when they rebuild them after the import (``node_ensure``: a page's sync, a skill's
  re-index; entities extracted again from documents and memory entries merge by their
  normalised name), so an imported node is adopted, never duplicated; a knowledge item is
  linked to its node by memory's ``memory.knowledge_item_node`` rows. The name of a node of a
  private source that holds the source's id (``<base>/<key> (context <id>)``) follows the new
  id. A node whose private source is gone (its context deleted) is left out, with its edges;
- edges written explicitly (the graph API, knowledge-item relationships, skills'
  ``depends_on``, pages' ``references``) are carried. Edges derived from text (``co_occurs``
  and the relations extractors found, which have relation mentions) are not: re-indexing the
  documents and memory entries rebuilds them with their mentions;
- mentions, the nodes' BM25 postings and communities are derived: the postings are rebuilt
  inside the import, the mentions by the documents' and entries' indexing after it, and the
  communities by the periodic ``rag.graph_communities`` job (an account with edges and no
  communities is due). A node's vector is kept with ``--with-vectors`` when this
  installation's model made it; any other node is embedded after the commit."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from django.db.models import Exists, OuterRef

from core.embeddings import get_embedding_provider
from core.portability.kinds import ExportScope, ImportScope, Kind, Row, ref, when
from rag import keyword
from rag.graph.models import GraphEdge, GraphNode, GraphRelationMention, GraphScope
from rag.graph.names import name_key
from rag.graph.owned import PRIVATE_SPACE, derived_sources, exported_node_ids, exported_nodes
from rag.graph.relations import COOCCURS
from rag.spaces import GRAPH_NODES, graph_node_text

NODE = "rag.graph_node"
EDGE = "rag.graph_edge"
CONTEXT = "memory.context"
EMBED_BATCH = 64
_CONTEXT_SUFFIX = re.compile(r" \(context (\d+)\)$")
# Ids the owning apps write in their nodes' and edges' metadata, with the kind of row they name
# (and the ``content_type`` the metadata must have, if any): they follow their rows, so an app
# that brings its node up to date after the import finds nothing to change. An article's
# ``content_id`` is the installation's, not the account's: left as it is (a page's sync
# rewrites it).
_METADATA_IDS = (
    ("skill_id", None, "skills.skill"),
    ("content_id", "page", "content.page"),
)


def _derived(row: GraphNode | GraphEdge) -> dict[str, Any]:
    return {"derived_space": row.derived_space, "derived_scope": ref(CONTEXT, row.derived_scope_id)}


_NODE_FIELDS = (
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


def _node_rows(scope: ExportScope) -> Iterator[Row]:
    nodes = exported_nodes(account=scope.account, single_agent=scope.single_agent)
    if not scope.with_vectors:
        nodes = nodes.defer("embedding")
    for node in nodes.order_by("pk").iterator(chunk_size=1000):
        row: Row = {
            "id": node.pk,
            "created_at": node.created_at,
            "updated_at": node.updated_at,
            "embedding_model": node.embedding_model if scope.with_vectors else "",
            **_derived(node),
            **{name: getattr(node, name) for name in _NODE_FIELDS},
        }
        if scope.with_vectors:
            row["embedding"] = (
                None if node.embedding is None else [float(x) for x in node.embedding]
            )
        yield row


def _scope_of(scope: ImportScope, row: Row) -> tuple[str, int | None]:
    """The row's source, its scope remapped; ValueError for a source the format cannot name."""
    space, scope_id = row["derived_space"], scope.resolve(row["derived_scope"])
    if scope_id is None:
        return space, None
    if space != PRIVATE_SPACE:
        raise ValueError(f"a derived scope of space {space!r}")
    return space, scope_id


def _metadata(scope: ImportScope, metadata: Any) -> Any:
    """``metadata`` with the ids of ``_METADATA_IDS`` that name rows of the archive remapped."""
    if not isinstance(metadata, dict):
        return metadata
    remapped = dict(metadata)
    for key, content_type, kind in _METADATA_IDS:
        value = remapped.get(key)
        if content_type is not None and remapped.get("content_type") != content_type:
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            new = scope.new_id(kind, value)
            if new is not None:
                remapped[key] = new
    return remapped


def _node_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    graph, _ = GraphScope.objects.get_or_create(account=scope.account)
    made = []
    for row in rows:
        space, scope_id = _scope_of(scope, row)
        name = row["name"]
        suffix = _CONTEXT_SUFFIX.search(name)
        if (
            suffix is not None
            and scope_id is not None
            and scope.new_id(CONTEXT, int(suffix[1])) == scope_id
        ):
            name = f"{name[: suffix.start()]} (context {scope_id})"
        vector = scope.vector_of(row)
        made.append(
            GraphNode(
                account=scope.account,
                scope=graph,
                derived_space=space,
                derived_scope_id=scope_id,
                name_key=name_key(name),
                alias_keys=[k for k in dict.fromkeys(map(name_key, row["aliases"])) if k],
                embedding=vector,
                embedding_model=scope.embedding_model if vector is not None else "",
                created_at=when(row["created_at"]),
                **{f: row[f] for f in _NODE_FIELDS if f not in ("name", "metadata")},
                name=name,
                metadata=_metadata(scope, row["metadata"]),
            )
        )
    GraphNode.objects.bulk_create(made)
    scope.remember_created(NODE, GraphNode, rows, made, "updated_at")
    scope.memo["rag.graph_scope"] = graph.pk
    unembedded: list[int] = scope.memo.setdefault(NODE, [])
    unembedded.extend(node.pk for node in made if node.embedding is None)


def _nodes_finish(scope: ImportScope) -> None:
    """The account's node index rebuilt in the import; the nodes without a vector embedded
    after the commit."""
    if "rag.graph_scope" not in scope.memo:
        return
    keyword.index_rebuild(space=GRAPH_NODES, scope_id=scope.memo["rag.graph_scope"])
    unembedded = list(scope.memo.get(NODE, []))
    if unembedded:
        scope.after_commit.append(lambda: _embed_after_commit(unembedded))


def _embed_after_commit(node_ids: Sequence[int]) -> None:
    nodes_embed(node_ids)


def nodes_embed(node_ids: Sequence[int]) -> int:
    """Embed those of these nodes that still have no vector (a sync that ran first may have
    embedded some); returns how many were embedded."""
    provider = get_embedding_provider()
    done = 0
    for start in range(0, len(node_ids), EMBED_BATCH):
        nodes = list(
            GraphNode.objects.filter(pk__in=node_ids[start : start + EMBED_BATCH])
            .filter(embedding__isnull=True)
            .order_by("pk")
        )
        if not nodes:
            continue
        vectors = provider.embed_documents(
            [
                graph_node_text(name=n.name, aliases=n.aliases, description=n.description)
                for n in nodes
            ]
        )
        for node, vector in zip(nodes, vectors, strict=True):
            node.embedding, node.embedding_model = vector, provider.model_id
        GraphNode.objects.bulk_update(nodes, ["embedding", "embedding_model"])
        done += len(nodes)
    return done


_EDGE_FIELDS = ("relation_type", "weight", "confidence", "bidirectional", "metadata")


def _edge_rows(scope: ExportScope) -> Iterator[Row]:
    nodes = exported_node_ids(account=scope.account, single_agent=scope.single_agent)
    edges = (
        GraphEdge.objects.filter(account=scope.account, source__in=nodes, target__in=nodes)
        .filter(derived_sources(scope.account))
        .exclude(relation_type=COOCCURS)
        .exclude(Exists(GraphRelationMention.objects.filter(edge=OuterRef("pk"))))
    )
    for edge in edges.order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": edge.pk,
            "source": ref(NODE, edge.source_id),
            "target": ref(NODE, edge.target_id),
            "created_at": edge.created_at,
            "updated_at": edge.updated_at,
            **_derived(edge),
            **{name: getattr(edge, name) for name in _EDGE_FIELDS},
        }


def _edge_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = []
    for row in rows:
        space, scope_id = _scope_of(scope, row)
        made.append(
            GraphEdge(
                account=scope.account,
                source_id=scope.required(row["source"]),
                target_id=scope.required(row["target"]),
                derived_space=space,
                derived_scope_id=scope_id,
                created_at=when(row["created_at"]),
                metadata=_metadata(scope, row["metadata"]),
                **{name: row[name] for name in _EDGE_FIELDS if name != "metadata"},
            )
        )
    GraphEdge.objects.bulk_create(made)
    scope.remember_created(EDGE, GraphEdge, rows, made, "updated_at")


_DERIVED = {
    "derived_space": f"str: the private space it was derived from ({PRIVATE_SPACE}), or blank",
    "derived_scope": f"ref:{CONTEXT} or null: the memory context it was derived from",
}

NODE_KIND = Kind(
    name=NODE,
    schema={
        "node_type": "str: entity | concept | event | document | memory | skill",
        "entity_type": "str: person, page, skill, knowledge_item...",
        "name": "str: unique per entity type in the account (case-insensitive)",
        "aliases": "[str]",
        "description": "str",
        "metadata": "object",
        "mention_count": "int: recomputed when the mentions are rebuilt",
        "status": "str: active | archived",
        "confidence": "float 0..1",
        **_DERIVED,
        "created_at": "datetime",
        "updated_at": "datetime",
        "embedding_model": "str: the model of embedding (blank without vectors)",
    },
    rows=_node_rows,
    load=_node_load,
    vector="embedding",
    finish=_nodes_finish,
    late=True,
)

EDGE_KIND = Kind(
    name=EDGE,
    schema={
        "source": f"ref:{NODE}",
        "target": f"ref:{NODE}",
        "relation_type": "str: depends_on, references, related_to...",
        "weight": "float",
        "confidence": "float 0..1",
        "bidirectional": "bool: traversed both ways",
        "metadata": "object",
        **_DERIVED,
        "created_at": "datetime",
        "updated_at": "datetime",
    },
    rows=_edge_rows,
    load=_edge_load,
    late=True,
)
