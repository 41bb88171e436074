"""rag's MCP tools (docs/mcp.md): knowledge bases and documents (``query_knowledge_base``,
``search_documents``, ``add_document``, ``process_document``), the knowledge graph
(``search_knowledge_graph``, ``get_graph_neighbors``, ``graph_rag_context``) and agentic RAG
(``agentic_query``), over the calls the API's views make."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from core import serializers as strict
from core.mcp import Call, Tool
from rag import graph, selectors, services
from rag.agentic_apis import AgenticInput, AgenticOutput, agentic_run
from rag.apis import DocumentInput, DocumentOutput, DocumentReprocessApi, document_upload
from rag.graph.retrieval import DEFAULT_MAX_HOPS, MAX_GRAPH_HOPS
from rag.graph.staged import node_communities, node_walk
from rag.graph_apis import (
    GraphNodeOutput,
    NeighboursOutput,
    NodeExplanation,
    NodeListCreateApi,
    NodeNeighboursApi,
)
from rag.graph_rag import graph_context
from rag.graph_rag_apis import GraphContextApi
from rag.search import SEARCH_MODES
from rag.search_apis import (
    CommunityRefOutput,
    GraphPathStep,
    QueryApi,
    SearchApi,
    SearchInput,
    query_run,
    run_search,
)
from rag.visibility import visibility_of


class AddDocumentInput(DocumentInput):
    knowledge_base_id = strict.IdField(help_text="The knowledge base to add the document to.")


class ProcessDocumentInput(DocumentReprocessApi.InputSerializer):
    document_id = strict.IdField()


class GraphSearchInput(strict.InputSerializer):
    """``GET /graph/nodes``'s search parameters, ``query`` required."""

    query = serializers.CharField(max_length=2000)
    top_k = NodeListCreateApi.FilterSerializer._declared_fields["top_k"]
    mode = serializers.ChoiceField(
        choices=SEARCH_MODES,
        default="hybrid",
        help_text="hybrid, vector or keyword: nodes by name, aliases and description; graph: "
        "the nodes nearest the query by embedding (at most 5) and those within max_hops.",
    )
    max_hops = serializers.IntegerField(
        min_value=1, max_value=MAX_GRAPH_HOPS, default=DEFAULT_MAX_HOPS
    )
    fusion = NodeListCreateApi.FilterSerializer._declared_fields["fusion"]
    entity_type = NodeListCreateApi.FilterSerializer._declared_fields["entity_type"]


class NeighboursInput(strict.InputSerializer):
    node_id = strict.IdField()
    hops = NodeNeighboursApi.FilterSerializer._declared_fields["hops"]
    relation_type = NodeNeighboursApi.FilterSerializer._declared_fields["relation_type"]
    limit = NodeNeighboursApi.FilterSerializer._declared_fields["limit"]
    direction = NodeNeighboursApi.FilterSerializer._declared_fields["direction"]


def _add(call: Call) -> dict[str, Any]:
    kb = selectors.knowledge_base_get(actor=call.actor, kb_id=call.data["knowledge_base_id"])
    document = services.document_create(actor=call.actor, kb=kb, **document_upload(call.data))
    return dict(DocumentOutput(document).data)


def _process(call: Call) -> dict[str, Any]:
    document = selectors.document_get(actor=call.actor, document_id=call.data["document_id"])
    document = services.document_reprocess(
        actor=call.actor, document=document, force=call.data["force"]
    )
    return dict(DocumentOutput(document).data)


class GraphToolExplanation(NodeExplanation):
    hops = serializers.IntegerField(allow_null=True, help_text="Graph mode: from the seed.")
    path = GraphPathStep(many=True, help_text="Graph mode: from the seed to the node.")


class GraphToolHit(serializers.Serializer):
    node = GraphNodeOutput()
    score = strict.FiniteFloatField(allow_null=True)
    community_id = serializers.IntegerField(allow_null=True)
    explanation = GraphToolExplanation()


class GraphSearchToolOutput(serializers.Serializer):
    mode = serializers.ChoiceField(choices=SEARCH_MODES)
    results = GraphToolHit(many=True)
    communities = CommunityRefOutput(many=True, help_text="The communities of the nodes found.")


def _graph_search(call: Call) -> dict[str, Any]:
    data = call.data
    results: list[dict[str, Any]] = []
    if data["mode"] == "graph":
        found, communities = node_walk(
            visible=visibility_of(call.actor),
            query=data["query"],
            top_k=data["top_k"],
            max_hops=data["max_hops"],
        )
        nodes = graph.node_list(actor=call.actor).in_bulk([r.node_id for r, _ in found])
        for reach, similarity in found:
            if reach.node_id not in nodes:
                continue
            stage = {"rank": None, "score": similarity}
            results.append({
                "node": nodes[reach.node_id], "score": reach.score,
                "community_id": reach.community_id,
                "explanation": {"vector": stage, "keyword": {"rank": None, "score": None},
                                "fused_score": reach.score, "hops": reach.hops,
                                "path": [{"name": n, "relation_type": r} for n, r in reach.path]},
            })  # fmt: skip
    else:
        hits = graph.node_search(
            actor=call.actor,
            query=data["query"],
            top_k=data["top_k"],
            mode=data["mode"],
            fusion=data["fusion"],
            entity_type=data.get("entity_type"),
        )
        communities = node_communities([hit.node.pk for hit in hits], visibility_of(call.actor))
        community_of = {n: c.id for c in communities for n in c.node_ids}
        for hit in hits:
            r = hit.retrieval
            results.append({
                "node": hit.node, "score": hit.score,
                "community_id": community_of.get(hit.node.pk),
                "explanation": {"vector": {"rank": r["vector_rank"], "score": r["vector_score"]},
                                "keyword": {"rank": r["keyword_rank"],
                                            "score": r["keyword_score"]},
                                "fused_score": hit.score, "hops": None, "path": []},
            })  # fmt: skip
    return dict(
        GraphSearchToolOutput(
            {"mode": data["mode"], "results": results, "communities": communities}
        ).data
    )


def _neighbours(call: Call) -> dict[str, Any]:
    data = call.data
    node = graph.node_get(actor=call.actor, node_id=data["node_id"])
    limit = data["limit"]
    found = graph.neighbours(
        node=node,
        hops=data["hops"],
        relation_types=[data["relation_type"]] if data.get("relation_type") else [],
        direction=data.get("direction") or "both",
        limit=limit + 1,
        visible=visibility_of(call.actor),
    )
    return dict(NeighboursOutput({"results": found[:limit], "truncated": len(found) > limit}).data)


def _hits(out: Any, noun: str) -> str:
    return f"{len(out['results'])} {noun}."


SEARCH_HINTS = {
    "query": "What to look for, in words (at most 4,000 characters).",
    "top_k": "How many hits, 1 to 100 (default 10).",
    "mode": "hybrid (default: semantic and keyword, fused), vector, keyword, or prf (hybrid "
    "with the query expanded by the best hits' words: finds passages in other words, slower).",
}

TOOLS = (
    Tool(
        name="query_knowledge_base",
        title="Query the knowledge bases",
        description=(
            "Search the account's knowledge bases for `query` and answer a context block for a "
            "prompt: the best passages, numbered, within `token_budget` tokens, with their "
            "sources (document, chunk) and the ranked hits. Cite sources by their number. "
            "`filters.knowledge_base_ids` limits the search to some knowledge bases."
        ),
        scope="read",
        input=QueryApi.InputSerializer,
        output=QueryApi.OutputSerializer,
        run=lambda call: query_run(call.actor, call.data),
        summary=lambda out: f"{len(out['sources'])} sources, {out['token_count']} tokens.",
        hints=SEARCH_HINTS,
    ),
    Tool(
        name="search_documents",
        title="Search documents",
        description=(
            "Search the chunks of the account's documents for `query`: hybrid (semantic and "
            "keyword, fused), vector, keyword, prf (pseudo-relevance feedback) or graph (with "
            "the chunks linked to the knowledge-graph nodes nearest the query). Each hit gives "
            "its document, its text and why it ranked (its rank and score in each stage). "
            "Filter by knowledge base, document type, tags, dates or lifecycle state."
        ),
        scope="read",
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
        input=AddDocumentInput,
        output=DocumentOutput,
        run=_add,
        summary=lambda out: f"Document {out['id']} added ({out['status']}).",
    ),
    Tool(
        name="process_document",
        title="Process a document again",
        description=(
            "Queue a document for processing again (chunking, embedding, indexing) in the "
            "background; `force` re-embeds it even if its content did not change."
        ),
        scope="write",
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
        input=GraphSearchInput,
        output=GraphSearchToolOutput,
        run=_graph_search,
        summary=lambda out: _hits(out, "nodes"),
        hints={**SEARCH_HINTS, "query": "Names or words to look for (at most 2,000 characters)."},
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
        input=NeighboursInput,
        output=NeighboursOutput,
        run=_neighbours,
        summary=lambda out: _hits(out, "neighbours"),
        hints={"node_id": "A node id (from search_knowledge_graph)."},
    ),
    Tool(
        name="agentic_query",
        title="Answer a question from the knowledge bases",
        description=(
            "Answer `query` from the account's knowledge bases in rounds of search (at most "
            "`max_rounds`, 1 to 5, default 3): each round searches (hybrid, reranked when a "
            "reranker is configured), scores its results 0 to 1, stops when at least 3 came "
            "back with a mean score of 0.5 or more, else names the question's uncovered words "
            "(`gaps`) and searches again with a reformulated query. Answers `answer` citing "
            "`sources` by number ([1], [2]...), the sources best first, and every round."
        ),
        scope="read",
        input=AgenticInput,
        output=AgenticOutput,
        run=lambda call: dict(AgenticOutput(agentic_run(call.actor, call.data)).data),
        summary=lambda out: (
            f"{len(out['sources'])} sources after {len(out['rounds'])} "
            f"round{'s' if len(out['rounds']) != 1 else ''}."
        ),
        hints={
            "query": "The question, in words (at most 4,000 characters).",
            "knowledge_base_ids": "Knowledge bases to search (default: all of the account's).",
        },
    ),
    Tool(
        name="graph_rag_context",
        title="Context from the knowledge graph",
        description=(
            "A context block for a prompt built through the knowledge graph: the entities "
            "nearest `query`, the communities within `max_hops` (default 3) with their "
            "summaries, then the document passages linked to them, within `token_budget` "
            "tokens (default 4,000; never exceeded). Every item names its source (document, "
            "chunk, the path from the seed entity)."
        ),
        scope="read",
        input=GraphContextApi.InputSerializer,
        output=GraphContextApi.OutputSerializer,
        run=lambda call: dict(
            GraphContextApi.OutputSerializer(graph_context(actor=call.actor, **call.data)).data
        ),
        summary=lambda out: f"{out['tokens']} tokens in {len(out['sections'])} sections.",
        hints={"query": SEARCH_HINTS["query"], "token_budget": "50 to 100,000 (default 4,000)."},
    ),
)
