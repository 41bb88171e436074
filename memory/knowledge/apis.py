"""Knowledge items: ``/api/v1/knowledge/...`` (docs/memory/knowledge.md). A base or
item of another account answers exactly like a missing one: 404 ``knowledge_base_not_found`` /
``knowledge_item_not_found``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.pagination import CreatedCursorPagination, paginated_response
from core.permissions import request_actor
from core.serializers import validated
from core.views import ApiView
from memory.knowledge import selectors, services
from memory.knowledge.models import MAX_BASE_NAME_LENGTH, MAX_KEY_LENGTH
from memory.models import KnowledgeItem, KnowledgeSource, KnowledgeStore

NAME_HELP = (
    "A letter or digit, then letters, digits and . _ : @ - (key: at most "
    f"{MAX_KEY_LENGTH} characters, else 400 key_too_long; base name: at most "
    f"{MAX_BASE_NAME_LENGTH})."
)


class KnowledgeStoreOutput(serializers.ModelSerializer[KnowledgeStore]):
    item_count = serializers.SerializerMethodField(
        help_text="The current, valid items you may read (items extracted from a conversation "
        "count for those who may read it)."
    )

    class Meta:
        model = KnowledgeStore
        fields = ["id", "name", "description", "knowledge_type", "item_count", "created_at"]

    def get_item_count(self, store: KnowledgeStore) -> int:
        return int(getattr(store, "visible_items", store.item_count))


class KnowledgeSourceInput(strict.InputSerializer):
    source_type = serializers.ChoiceField(
        choices=KnowledgeSource.SourceType.choices, help_text="What the source is."
    )
    source_id = serializers.CharField(
        max_length=200,
        required=False,
        default="",
        allow_blank=True,
        help_text="Its id of that type, e.g. 42.",
    )
    reliability = strict.FiniteFloatField(
        min_value=0, max_value=1, required=False, default=1.0, help_text="0 to 1 (default 1)."
    )
    extracted_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text="When it was taken from it."
    )


class KnowledgeSourceOutput(serializers.ModelSerializer[KnowledgeSource]):
    reliability = strict.FiniteFloatField()

    class Meta:
        model = KnowledgeSource
        fields = ["source_type", "source_id", "reliability", "extracted_at"]


class KnowledgeItemOutput(serializers.ModelSerializer[KnowledgeItem]):
    base = serializers.CharField(source="store.name")
    previous_id = serializers.IntegerField(allow_null=True)
    graph_node_id = serializers.IntegerField(allow_null=True)
    author_agent_id = serializers.IntegerField(source="author_id", allow_null=True)
    source_context_id = serializers.IntegerField(
        allow_null=True,
        help_text="The memory context the item was extracted from (a conversation's): only "
        "those who may read it see the item. Null: written explicitly, account-wide.",
    )
    confidence = strict.FiniteFloatField()
    sources = KnowledgeSourceOutput(many=True)

    class Meta:
        model = KnowledgeItem
        fields = [
            "id",
            "base",
            "key",
            "lineage",
            "version",
            "is_current",
            "previous_id",
            "content",
            "content_type",
            "metadata",
            "confidence",
            "valid_from",
            "valid_to",
            "sources",
            "graph_node_id",
            "embedding_model",
            "author_agent_id",
            "source_context_id",
            "created_at",
        ]


class KnowledgeStoreListCreateApi(ApiView):
    """The account's knowledge bases, newest first; POST creates one (a PUT of an item to a
    base that does not exist creates it too, as factual)."""

    pagination_class = CreatedCursorPagination

    class InputSerializer(strict.InputSerializer):
        name = serializers.CharField(max_length=MAX_BASE_NAME_LENGTH, help_text=NAME_HELP)
        knowledge_type = serializers.ChoiceField(
            choices=KnowledgeStore.KnowledgeType.choices,
            default=KnowledgeStore.KnowledgeType.FACTUAL,
        )
        description = serializers.CharField(
            required=False, default="", allow_blank=True, max_length=10_000
        )

    @extend_schema(operation_id="knowledge_bases_list", responses=KnowledgeStoreOutput(many=True))
    def get(self, request: Request) -> Response:
        bases = selectors.store_list(request_actor(request))
        return paginated_response(self, request, bases, KnowledgeStoreOutput)

    @extend_schema(
        operation_id="knowledge_base_create",
        request=InputSerializer,
        responses={201: KnowledgeStoreOutput},
    )
    def post(self, request: Request) -> Response:
        data = validated(self.InputSerializer, request)
        store = services.store_create(actor=request_actor(request), **data)
        return Response(KnowledgeStoreOutput(store).data, status=status.HTTP_201_CREATED)


class KnowledgeItemInput(strict.InputSerializer):
    content = strict.ServiceBoundedCharField(
        max_length=services.MAX_CONTENT_CHARS,
        allow_blank=True,
        trim_whitespace=False,
        help_text=f"At most {services.MAX_CONTENT_CHARS} characters (413 content_too_large).",
    )
    content_type = serializers.CharField(max_length=100, required=False, default="text/plain")
    metadata = strict.MetadataField(required=False, default=dict)
    confidence = strict.FiniteFloatField(min_value=0, max_value=1, required=False, default=1.0)
    sources = serializers.ListField(
        child=KnowledgeSourceInput(),
        required=False,
        allow_null=True,
        default=None,
        max_length=services.MAX_SOURCES,
        help_text="Provenance of this version; omitted: the current version's sources carry over.",
    )


class KnowledgeItemApi(ApiView):
    """GET: the item's current version. PUT: write it (201 for a new item, 200 with a new
    version for a change, 200 without one when nothing changed)."""

    @extend_schema(operation_id="knowledge_item_retrieve", responses=KnowledgeItemOutput)
    def get(self, request: Request, base: str, key: str) -> Response:
        return Response(knowledge_item_get_answer(request_actor(request), base, key))

    @extend_schema(
        operation_id="knowledge_item_put",
        request=KnowledgeItemInput,
        responses={200: KnowledgeItemOutput, 201: KnowledgeItemOutput},
    )
    def put(self, request: Request, base: str, key: str) -> Response:
        data = validated(KnowledgeItemInput, request)
        body, created = knowledge_item_put_answer(request_actor(request), base, key, data)
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


def knowledge_item_get_answer(actor: Any, base: str, key: str) -> dict[str, Any]:
    """``GET /knowledge/{base}/items/{key}``'s answer."""
    return dict(KnowledgeItemOutput(selectors.item_get(actor, base, key)).data)


def knowledge_item_put_answer(
    actor: Any, base: str, key: str, data: dict[str, Any]
) -> tuple[dict[str, Any], bool]:
    """``PUT /knowledge/{base}/items/{key}``'s answer to a validated body, and whether the
    item was created (201) rather than changed or left as it was (200)."""
    data = dict(data)
    raw = data.pop("sources")
    sources = None if raw is None else [services.SourceInput(**dict(s)) for s in raw]
    outcome = services.knowledge_item_put(actor=actor, base=base, key=key, sources=sources, **data)
    return dict(KnowledgeItemOutput(outcome.item).data), outcome.created


class KnowledgeItemListApi(ApiView):
    """The current version of every item of the base, newest first."""

    pagination_class = CreatedCursorPagination

    @extend_schema(operation_id="knowledge_items_list", responses=KnowledgeItemOutput(many=True))
    def get(self, request: Request, base: str) -> Response:
        items = selectors.item_list(request_actor(request), base)
        return paginated_response(self, request, items, KnowledgeItemOutput)


class KnowledgeItemVersionsApi(ApiView):
    """Every version of the item, newest first."""

    pagination_class = CreatedCursorPagination

    @extend_schema(operation_id="knowledge_item_versions", responses=KnowledgeItemOutput(many=True))
    def get(self, request: Request, base: str, key: str) -> Response:
        items = selectors.item_versions(request_actor(request), base, key)
        return paginated_response(self, request, items, KnowledgeItemOutput)


class KnowledgeItemRef(strict.InputSerializer):
    """An item by its base's name and its key."""

    base = serializers.CharField(
        max_length=MAX_BASE_NAME_LENGTH, help_text="The knowledge base's name."
    )
    key = serializers.CharField(max_length=MAX_KEY_LENGTH, help_text="The item's key.")


class KnowledgeItemRefOutput(serializers.Serializer):
    base = serializers.CharField()
    key = serializers.CharField()


class KnowledgeRelationshipOutput(serializers.Serializer):
    id = serializers.IntegerField()
    relationship_type = serializers.CharField()
    strength = strict.FiniteFloatField()
    direction = serializers.ChoiceField(
        choices=["outgoing", "incoming"], help_text="Seen from the item asked about."
    )
    source = KnowledgeItemRefOutput()  # type: ignore[assignment]  # a field named "source"
    target = KnowledgeItemRefOutput()
    graph_edge_id = serializers.IntegerField()
    created_at = serializers.DateTimeField()


def _relationship(found: selectors.Relationship) -> dict[str, Any]:
    return {
        "id": found.edge.pk,
        "relationship_type": found.edge.relation_type,
        "strength": found.strength,
        "direction": found.direction,
        "source": {"base": found.source.store.name, "key": found.source.key},
        "target": {"base": found.target.store.name, "key": found.target.key},
        "graph_edge_id": found.edge.pk,
        "created_at": found.edge.created_at,
    }


class KnowledgeItemRelationshipsApi(ApiView):
    """The item's relationships with other knowledge items, each way, strongest first."""

    class OutputSerializer(serializers.Serializer):
        results = KnowledgeRelationshipOutput(many=True)

    @extend_schema(operation_id="knowledge_item_relationships", responses=OutputSerializer)
    def get(self, request: Request, base: str, key: str) -> Response:
        found = selectors.item_relationships(request_actor(request), base, key)
        return Response(self.OutputSerializer({"results": [_relationship(r) for r in found]}).data)


class KnowledgeRelationshipCreateApi(ApiView):
    """Relate two items: a typed edge of the knowledge graph between their nodes (strength 0
    to 1 as its weight). 404 for a missing item, 409 edge_exists for the same type again."""

    class InputSerializer(strict.InputSerializer):
        source = KnowledgeItemRef()  # type: ignore[assignment]  # a field named "source"
        target = KnowledgeItemRef()
        relationship_type = serializers.CharField(max_length=100)
        strength = strict.FiniteFloatField(min_value=0, max_value=1, required=False, default=1.0)

    @extend_schema(
        operation_id="knowledge_relationship_create",
        request=InputSerializer,
        responses={201: KnowledgeRelationshipOutput},
    )
    def post(self, request: Request) -> Response:
        data = validated(self.InputSerializer, request)
        body = knowledge_relate_answer(request_actor(request), data)
        return Response(body, status=status.HTTP_201_CREATED)


def knowledge_relate_answer(actor: Any, data: dict[str, Any]) -> dict[str, Any]:
    """``POST /knowledge/relationships``'s answer to a validated body."""
    source, target = dict(data["source"]), dict(data["target"])
    edge = services.knowledge_relate(
        actor=actor,
        source=(source["base"], source["key"]),
        target=(target["base"], target["key"]),
        relationship_type=data["relationship_type"],
        strength=data["strength"],
    )
    body = {
        "id": edge.pk,
        "relationship_type": edge.relation_type,
        "strength": edge.weight,
        "direction": "outgoing",
        "source": source,
        "target": target,
        "graph_edge_id": edge.pk,
        "created_at": edge.created_at,
    }
    return dict(KnowledgeRelationshipOutput(body).data)


class KnowledgeHitOutput(serializers.Serializer):
    item = KnowledgeItemOutput()
    score = strict.FiniteFloatField()
    explanation = serializers.DictField(
        help_text="The hit's rank and score in the vector and keyword stages, the fused score, "
        "the fusion and its weights."
    )


class KnowledgeQueryApi(ApiView):
    """Search current, valid knowledge items (hybrid, explained). ``bases``: names of the
    caller's bases (a name that is not one: 404 knowledge_base_not_found); none: every base."""

    required_scope = "read"

    class InputSerializer(strict.InputSerializer):
        query = strict.SearchQueryField()
        bases = serializers.ListField(
            child=serializers.CharField(max_length=MAX_BASE_NAME_LENGTH),
            required=False,
            default=list,
            max_length=100,
        )
        knowledge_types = serializers.ListField(
            child=serializers.ChoiceField(choices=KnowledgeStore.KnowledgeType.choices),
            required=False,
            default=list,
            max_length=10,
        )
        max_results = strict.TopKField()

    class OutputSerializer(serializers.Serializer):
        results = KnowledgeHitOutput(many=True)
        bases = serializers.ListField(child=serializers.CharField())
        timings_ms = strict.TimingsField()

    @extend_schema(
        operation_id="knowledge_query", request=InputSerializer, responses=OutputSerializer
    )
    def post(self, request: Request) -> Response:
        data = validated(self.InputSerializer, request)
        return Response(knowledge_query_answer(request_actor(request), data))


def knowledge_query_answer(actor: Any, data: dict[str, Any]) -> dict[str, Any]:
    """``POST /knowledge/query``'s answer to a validated body."""
    found = selectors.knowledge_search(
        actor=actor,
        query=data["query"],
        bases=data["bases"],
        knowledge_types=data["knowledge_types"],
        top_k=data["max_results"],
    )
    body = {
        "results": [
            {"item": hit.item, "score": hit.score, "explanation": hit.explanation}
            for hit in found.hits
        ],
        "bases": found.bases,
        "timings_ms": found.timings_ms,
    }
    return dict(KnowledgeQueryApi.OutputSerializer(body).data)
