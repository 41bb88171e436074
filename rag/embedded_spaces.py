"""rag's embedded tables for index generations (``core.embeddings.generations``): chunks and
graph nodes, each embedded as its writers embed it."""

from __future__ import annotations

from collections.abc import Sequence

from core.embeddings.generations import EmbeddedTable, register


def chunk_texts(ids: Sequence[int]) -> dict[int, str]:
    from rag.indexing import indexed_text
    from rag.models import Chunk

    rows = Chunk.objects.filter(pk__in=list(ids)).values_list(
        "pk", "document__title", "heading_path", "text"
    )
    return {
        pk: indexed_text(title=title, heading_path=path, text=text)
        for pk, title, path, text in rows
    }


def graph_node_texts(ids: Sequence[int]) -> dict[int, str]:
    from rag.models import GraphNode
    from rag.spaces import graph_node_text

    rows = GraphNode.objects.filter(pk__in=list(ids)).values_list(
        "pk", "name", "aliases", "description"
    )
    return {
        pk: graph_node_text(name=name, aliases=aliases, description=description)
        for pk, name, aliases, description in rows
    }


def register_tables() -> None:
    register(EmbeddedTable("chunks", "rag_chunk", "document chunks", chunk_texts))
    register(EmbeddedTable("graph_nodes", "rag_graphnode", "graph nodes", graph_node_texts))
