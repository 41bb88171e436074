"""rag's MCP tools (docs/mcp.md): knowledge bases and documents (``query_knowledge_base``, whose
``kind`` also reaches graph RAG's context and agentic RAG, ``search_documents``,
``add_document``, ``process_document``) and the knowledge graph (``search_knowledge_graph``,
``get_graph_neighbors``). Each is a door to one REST operation: the same input serializer, the
same function the view calls, the same answer."""

from __future__ import annotations

from typing import Any

from core import serializers as strict
from core.mcp import Call, Tool
from core.mcp.registry import Job
from rag import selectors, services
from rag.agentic.apis import AgenticInput, AgenticOutput, agentic_run
from rag.apis import DocumentInput, DocumentOutput, DocumentReprocessApi, document_upload
from rag.graph.apis.nodes import (
    NeighboursOutput,
    NodeListCreateApi,
    NodeNeighboursApi,
    NodeSearchOutput,
    neighbours_answer,
    node_search_answer,
)
from rag.graph.apis.retrieval import GraphContextApi
from rag.graph.graph_rag import graph_context
from rag.search_apis import QueryApi, SearchApi, SearchInput, query_run, run_search

_NODE_FILTERS = NodeListCreateApi.FilterSerializer._declared_fields
_NEIGHBOUR_FILTERS = NodeNeighboursApi.FilterSerializer._declared_fields


class AddDocumentInput(DocumentInput):
    knowledge_base_id = strict.IdField(
        help_text="The knowledge base to add the document to, e.g. 3."
    )


class ProcessDocumentInput(DocumentReprocessApi.InputSerializer):
    document_id = strict.IdField(help_text="The document to process again, e.g. 41.")


class GraphSearchInput(strict.InputSerializer):
    """``GET /graph/nodes``'s search parameters, ``query`` required."""

    query = strict.SearchQueryField(help_text="Names or words to look for, e.g. harbour crane.")
    top_k = _NODE_FILTERS["top_k"]
    mode = _NODE_FILTERS["mode"]
    max_hops = _NODE_FILTERS["max_hops"]
    fusion = _NODE_FILTERS["fusion"]
    entity_type = _NODE_FILTERS["entity_type"]


class NeighboursInput(strict.InputSerializer):
    node_id = strict.IdField(help_text="A node id (from search_knowledge_graph), e.g. 17.")
    hops = _NEIGHBOUR_FILTERS["hops"]
    relation_type = _NEIGHBOUR_FILTERS["relation_type"]
    limit = _NEIGHBOUR_FILTERS["limit"]
    direction = _NEIGHBOUR_FILTERS["direction"]


def _add(call: Call) -> dict[str, Any]:
    kb = selectors.knowledge_base_get(actor=call.actor, kb_id=call.data["knowledge_base_id"])
    upload = {k: v for k, v in call.data.items() if k != "knowledge_base_id"}
    document = services.document_create(actor=call.actor, kb=kb, **document_upload(upload))
    return dict(DocumentOutput(document).data)


def _process(call: Call) -> dict[str, Any]:
    document = selectors.document_get(actor=call.actor, document_id=call.data["document_id"])
    document = services.document_reprocess(
        actor=call.actor, document=document, force=call.data["force"]
    )
    return dict(DocumentOutput(document).data)


def _hits(out: Any, noun: str) -> str:
    return f"{len(out['results'])} {noun}."


SEARCH_HINTS = {
    "query": "What to look for, in words (at most 4,000 characters), e.g. tomato planting.",
    "top_k": "How many hits, 1 to 100 (default 10).",
    "mode": "hybrid (default: semantic and keyword, fused), vector, keyword, prf (hybrid with "
    "the query expanded by the best hits' words) or graph (the chunks linked to the "
    "knowledge-graph nodes nearest the query).",
    "fusion": "How hybrid stages are fused: rrf (default) or weighted.",
    "weights": 'The weighted fusion\'s weights, e.g. {"vector": 0.7, "keyword": 0.3}.',
    "stages": 'A hybrid search\'s stages, e.g. ["vector", "keyword", "graph"].',
    "max_hops": "How far the graph stage walks from its seed nodes (1 to 5).",
    "threshold": "The lowest cosine similarity kept, -1 to 1, e.g. 0.2.",
    "knowledge_base_ids": "Only these knowledge bases, e.g. [3] (default: all).",
    "filters": 'Narrow by knowledge base, doc type, tags, dates or lifecycle, e.g. {"tags": '
    '["garden"]}.',
    "rerank": "Rerank the hits with the configured reranker (needs RERANK_PROVIDER).",
}

DOCUMENT_HINTS = {
    "text": "The document as plain text or markdown. Not with content_base64.",
    "content_base64": "The file's bytes in base64 (PDF, HTML, markdown, code...), with "
    "filename. Not with text.",
    "filename": "The file's name, e.g. guide.pdf: its type is read from it.",
    "title": "Its title (default: from the file or the first heading).",
    "content_type": "Its media type, e.g. application/pdf (default: from filename).",
    "source": "Where it comes from, e.g. a URL.",
    "doc_type": "Your label of its type, e.g. manual; a search filter.",
    "tags": 'Labels, e.g. ["garden"]; a search filter.',
    "lifecycle_state": "Your label of its state, e.g. draft; a search filter.",
    "source_path": "Its path where it comes from, e.g. docs/guide.md.",
    "document_date": "Its date, YYYY-MM-DD; a search filter.",
    "metadata": "Any JSON object kept with it.",
}

TOOLS = (
    Tool(
        name="query_knowledge_base",
        title="Query the knowledge bases",
        description=(
            "Context for a prompt from the account's knowledge bases. kind passages "
            "(default): search for `query` and answer a context block of the best passages, "
            "numbered, within `token_budget` tokens, with their sources and the ranked hits; "
            "cite sources by their number. kind graph: a context block built through the "
            "knowledge graph (community summaries, then linked passages, within "
            "`token_budget`). kind agentic: an answer citing its `sources`, after rounds of "
            "search (at most `max_rounds`) until the evidence suffices."
        ),
        scope="read",
        rest="POST /api/v1/rag/query",
        input=QueryApi.InputSerializer,
        output=QueryApi.OutputSerializer,
        run=lambda call: query_run(call.actor, call.data),
        summary=lambda out: f"{len(out['sources'])} sources, {out['token_count']} tokens.",
        hints={**SEARCH_HINTS, "token_budget": "The context's token limit (default 2,000)."},
        selector="kind",
        default="passages",
        more=(
            Job(
                value="graph",
                description="community summaries and the passages the knowledge graph reaches "
                "from the entities nearest query, within token_budget (POST /rag/graph/context)",
                scope="read",
                rest="POST /api/v1/rag/graph/context",
                input=GraphContextApi.InputSerializer,
                output=GraphContextApi.OutputSerializer,
                run=lambda call: dict(
                    GraphContextApi.OutputSerializer(
                        graph_context(actor=call.actor, **call.data)
                    ).data
                ),
                summary=lambda out: f"{out['tokens']} tokens in {len(out['sections'])} sections.",
                hints={
                    "query": SEARCH_HINTS["query"],
                    "token_budget": "kind graph: 50 to 100,000 tokens (default 4,000).",
                    "max_hops": "kind graph: how far to walk from the seed entities (default 3).",
                },
            ),
            Job(
                value="agentic",
                description="an answer to query citing numbered sources, after rounds of "
                "search until at least 3 results score 0.5 on average (POST /rag/agentic)",
                scope="read",
                rest="POST /api/v1/rag/agentic",
                input=AgenticInput,
                output=AgenticOutput,
                run=lambda call: dict(AgenticOutput(agentic_run(call.actor, call.data)).data),
                summary=lambda out: (
                    f"{len(out['sources'])} sources after {len(out['rounds'])} round(s)."
                ),
                hints={
                    "query": "The question, in words, e.g. when should tomatoes be planted?",
                    "knowledge_base_ids": "Knowledge bases to search (default: all).",
                },
            ),
        ),
    ),
    Tool(
        name="search_documents",
        title="Search documents",
        description=(
            "Search the chunks of the account's documents for `query`: hybrid (semantic and "
            "keyword, fused), vector, keyword, prf (pseudo-relevance feedback) or graph (the "
            "chunks linked to the knowledge-graph nodes nearest the query). Each hit gives "
            "its document, its text and why it ranked (its rank and score in each stage). "
            "Filter by knowledge base, document type, tags, dates or lifecycle state."
        ),
        scope="read",
        rest="POST /api/v1/rag/search",
        input=SearchInput,
        output=SearchApi.OutputSerializer,
        run=lambda call: dict(SearchApi.OutputSerializer(run_search(call.actor, call.data)).data),
        summary=lambda out: _hits(out, "passages"),
        hints=SEARCH_HINTS,
    ),
    Tool(
        name="add_document",
        title="Add a document",
        description=(
            "Add a document to a knowledge base: `text` (plain text or markdown), or "
            "`content_base64` with a `filename` (PDF, HTML, markdown, code...). It is chunked, "
            "embedded and indexed in the background: the answer's `status` says where it is "
            "(pending, processing, indexed or failed with `error`); search finds it once "
            "indexed."
        ),
        scope="write",
        rest="POST /api/v1/rag/knowledge-bases/{knowledge_base_id}/documents",
        input=AddDocumentInput,
        output=DocumentOutput,
        run=_add,
        summary=lambda out: f"Document {out['id']} added ({out['status']}).",
        hints=DOCUMENT_HINTS,
        examples={"source": "https://example.org/garden-handbook"},
        schema_extra={
            "oneOf": [
                {"required": ["text"], "not": {"required": ["content_base64"]}},
                {"required": ["content_base64"], "not": {"required": ["text"]}},
            ]
        },
    ),
    Tool(
        name="process_document",
        title="Process a document again",
        description=(
            "Queue a document for processing again (chunking, embedding, indexing) in the "
            "background; `force` re-embeds it even if its content did not change."
        ),
        scope="write",
        rest="POST /api/v1/rag/documents/{document_id}/reprocess",
        input=ProcessDocumentInput,
        output=DocumentOutput,
        run=_process,
        summary=lambda out: f"Document {out['id']} queued ({out['status']}).",
        idempotent=True,
    ),
    Tool(
        name="search_knowledge_graph",
        title="Search the knowledge graph",
        description=(
            "Find nodes of the account's knowledge graph (entities, pages, skills, agents...) "
            "by name, aliases and description; `entity_type` keeps one type (e.g. page). "
            "`mode` graph starts from the nodes nearest the query and walks `max_hops` from "
            "them. Each hit explains its ranks (graph: its path) and names its community; the "
            "answer lists those communities with their summaries. Follow up with "
            "get_graph_neighbors."
        ),
        scope="read",
        rest="GET /api/v1/graph/nodes?query=",
        input=GraphSearchInput,
        output=NodeSearchOutput,
        run=lambda call: node_search_answer(call.actor, call.data),
        summary=lambda out: _hits(out, "nodes"),
        hints={"top_k": SEARCH_HINTS["top_k"]},
    ),
    Tool(
        name="get_graph_neighbors",
        title="Graph neighbours of a node",
        description=(
            "The nodes within `hops` (1 to 5) of a node, nearest first, each with its "
            "distance and the relation that reached it; `relation_type` follows only edges of "
            "one type (e.g. references: wikilinks between pages); `direction` out follows "
            "edges from source to target, in the other way, both either way."
        ),
        scope="read",
        rest="GET /api/v1/graph/nodes/{node_id}/neighbors",
        input=NeighboursInput,
        output=NeighboursOutput,
        run=lambda call: neighbours_answer(
            call.actor, call.data["node_id"], {k: v for k, v in call.data.items()}
        ),
        summary=lambda out: _hits(out, "neighbours"),
    ),
)
