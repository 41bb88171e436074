"""Agentic RAG over HTTP: ``POST /rag/agentic``, one view over
``rag.agentic.services.agentic_query``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.actors import Actor
from core.permissions import request_actor
from core.views import ApiView
from rag.agentic.services import (
    DEFAULT_MAX_ROUNDS,
    MAX_ROUNDS_LIMIT,
    AgenticAnswer,
    ScoredHit,
    agentic_query,
)
from rag.search_apis import HitExplanation


class AgenticInput(strict.InputSerializer):
    query = strict.SearchQueryField()
    max_rounds = serializers.IntegerField(
        min_value=1,
        max_value=MAX_ROUNDS_LIMIT,
        default=DEFAULT_MAX_ROUNDS,
        help_text=f"Rounds of search at most, 1 to {MAX_ROUNDS_LIMIT}.",
    )
    knowledge_base_ids = strict.IdListField(
        required=False, default=list, help_text="The knowledge bases to search (default: all)."
    )
    top_k = strict.TopKField(help_text="Results per round, and sources at most (1 to 100).")


class AgenticExplanation(HitExplanation):
    similarity = strict.FiniteFloatField(help_text="Cosine similarity to the question.")
    coverage = strict.FiniteFloatField(help_text="Share of the question's terms (idf-weighted).")
    evidence = strict.FiniteFloatField(help_text="The hit's relevance evidence, 0 to 1.")
    round = serializers.IntegerField(help_text="The round that found it.")


class AgenticHitOutput(serializers.Serializer):
    """A search hit whose ``score`` is calibrated: 0 to 1, comparable between queries."""

    chunk_id = serializers.IntegerField(source="hit.chunk_id")
    document_id = serializers.IntegerField(source="hit.document_id")
    knowledge_base_id = serializers.IntegerField(source="hit.knowledge_base_id")
    document_title = serializers.CharField(source="hit.document_title")
    text = serializers.CharField(source="hit.text")
    heading_path = serializers.ListField(child=serializers.CharField(), source="hit.heading_path")
    position = serializers.IntegerField(source="hit.position")
    score = strict.FiniteFloatField()
    explanation = serializers.SerializerMethodField()

    @extend_schema_field(AgenticExplanation)
    def get_explanation(self, scored: ScoredHit) -> dict[str, Any]:
        hit = scored.hit
        return AgenticExplanation(
            {
                "vector": {"rank": hit.vector_rank, "score": hit.vector_score},
                "keyword": {"rank": hit.keyword_rank, "score": hit.keyword_score},
                "fused_score": hit.score,
                "rerank_score": hit.rerank_score,
                "similarity": scored.similarity,
                "coverage": scored.coverage,
                "evidence": scored.evidence,
                "round": scored.round,
            }
        ).data


class AgenticSourceOutput(AgenticHitOutput):
    ref = serializers.IntegerField(help_text="Its number: the answer cites it as [ref].")
    cited = serializers.BooleanField(help_text="Whether the answer cites it.")


class AgenticBridgeOutput(serializers.Serializer):
    """The entity a round's results name for what the question describes ("the person who
    runs the Harbor Library": "Jonas Lind"); the next round asks with it in its place."""

    name = serializers.CharField()
    entity_type = serializers.CharField(
        allow_blank=True, help_text="The kind the description asks for (blank: any)."
    )
    replaces = serializers.CharField(
        allow_blank=True, help_text="The description of the question it stands in for."
    )
    chunk_id = serializers.IntegerField(
        allow_null=True, help_text="The result that names it next to the question's entity."
    )
    found_by = serializers.ChoiceField(choices=["offline", "llm"])


class AgenticRoundOutput(serializers.Serializer):
    query = serializers.CharField()
    results = AgenticHitOutput(many=True)
    sufficient = serializers.BooleanField()
    avg_score = strict.FiniteFloatField()
    gaps = serializers.ListField(child=serializers.CharField())
    reformulated_query = serializers.CharField(allow_null=True)
    reformulated_by = serializers.ChoiceField(
        choices=["", "llm", "bridge", "feedback"],
        allow_blank=True,
        help_text="What wrote the next query: the LLM, the bridge entity put in place of the "
        "question's description, or pseudo-relevance feedback (blank: the last round).",
    )
    target = serializers.CharField(
        help_text="The question the round's scores measure against: the original, or the "
        "original with an earlier round's bridge entity in place of its description."
    )
    mode = serializers.CharField(help_text="The round's search mode: hybrid or graph.")
    bridge = AgenticBridgeOutput(allow_null=True)


class AgenticOutput(serializers.Serializer):
    answer = serializers.CharField(allow_blank=True)
    sources = AgenticSourceOutput(many=True)
    rounds = AgenticRoundOutput(many=True)
    total_results = serializers.IntegerField()


def agentic_run(actor: Actor, data: dict[str, Any]) -> AgenticAnswer:
    """The agentic query ``data`` (a validated ``AgenticInput``) asks for: the API's and the
    MCP tool's one way to run it."""
    return agentic_query(
        actor=actor,
        query=data["query"],
        max_rounds=data["max_rounds"],
        knowledge_base_ids=data["knowledge_base_ids"],
        top_k=data["top_k"],
    )


class AgenticApi(ApiView):
    """Agentic RAG: rounds of search (reranked when a reranker is configured), each checked
    for sufficiency and reformulated to fill its gaps (a question that describes an entity
    is asked again with the bridge entity the round found in its place), then an answer citing
    its sources. A read: it needs only the ``read`` scope."""

    required_scope = "read"

    @extend_schema(request=AgenticInput, responses=AgenticOutput, operation_id="rag_agentic")
    def post(self, request: Request) -> Response:
        data = AgenticInput(data=request.data)
        data.is_valid(raise_exception=True)
        answer = agentic_run(request_actor(request), data.validated_data)
        return Response(AgenticOutput(answer).data)
