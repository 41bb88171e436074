"""The memory router: ``/api/v1/memory/search``, ``read``, ``write``, ``stats`` and
``consolidate`` across the tiers (docs/memory/router.md;
docs/memory/maintenance.md, "Consolidation")."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.permissions import request_actor
from core.search import MAX_LIST_ITEMS
from core.serializers import validated
from core.views import ApiView
from memory.apis.common import (
    SHORT_TERM_TTL,
    SHORT_TERM_VALUE,
    WORKING_TTL,
    WORKING_VALUE,
    BoundedValueField,
    TtlField,
    key_field,
    session_id_field,
)
from memory.context.selectors import router as router_selectors
from memory.context.services import router as router_services
from memory.context.services.search import memory_search_run
from memory.long_term.services.entries import MAX_CONTENT_CHARS
from memory.maintenance.services import consolidation
from memory.models import MemoryEntry, ShortTermEntry

TIER_STATUS = serializers.DictField(
    child=serializers.CharField(),
    help_text="Each tier searched: ok, unavailable (its store is down: skipped) or skipped "
    "(working memory without filters.session_id).",
)


class MemoryFiltersInput(strict.InputSerializer):
    session_id = session_id_field(
        required=False, help_text="Working memory (searched only with it) and short-term memory."
    )
    context_ids = strict.IdListField(required=False)
    entry_types = serializers.ListField(
        child=serializers.ChoiceField(choices=MemoryEntry.EntryType.choices),
        required=False,
        max_length=MAX_LIST_ITEMS,
    )
    memory_types = serializers.ListField(
        child=serializers.ChoiceField(
            choices=sorted({*MemoryEntry.MemoryType.values, *ShortTermEntry.MemoryType.values})
        ),
        required=False,
        max_length=MAX_LIST_ITEMS,
    )
    tags_any = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, max_length=MAX_LIST_ITEMS
    )
    pool_ids = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        max_length=MAX_LIST_ITEMS,
        help_text="Shared pools only.",
    )
    occurred_from = serializers.DateTimeField(
        required=False, help_text="Long-term entries that happened at or after this time."
    )
    occurred_to = serializers.DateTimeField(
        required=False, help_text="Long-term entries that happened at or before this time."
    )


def router_filters(raw: dict[str, Any] | None) -> router_selectors.RouterFilters:
    """The validated ``filters`` object of a search body as the selectors take it."""
    raw = raw or {}
    return router_selectors.RouterFilters(
        session_id=raw.get("session_id", ""),
        context_ids=tuple(raw.get("context_ids", ())),
        entry_types=tuple(raw.get("entry_types", ())),
        memory_types=tuple(raw.get("memory_types", ())),
        tags_any=tuple(raw.get("tags_any", ())),
        pool_ids=tuple(raw.get("pool_ids", ())),
        occurred_from=raw.get("occurred_from"),
        occurred_to=raw.get("occurred_to"),
    )


class MemoryHitExplanation(serializers.Serializer):
    tier = serializers.ChoiceField(choices=router_selectors.TIERS)
    tier_rank = serializers.IntegerField(help_text="The hit's rank among its tier's hits.")
    keyword_rank = serializers.IntegerField(
        allow_null=True, help_text="Rank in the one keyword list of every tier's hits."
    )
    keyword_score = strict.FiniteFloatField(
        allow_null=True, help_text="BM25 with idf from every corpus searched: comparable."
    )
    vector_rank = serializers.IntegerField(allow_null=True, help_text="Long-term memory only.")
    vector_score = strict.FiniteFloatField(allow_null=True, help_text="Cosine similarity.")
    relevance = strict.FiniteFloatField(help_text="0 to 1; what threshold filters on.")
    fused_score = strict.FiniteFloatField(help_text="The reciprocal rank fusion: score.")
    fusion = serializers.CharField()
    rrf_k = serializers.IntegerField()


class MemoryHitOutput(serializers.Serializer):
    id = serializers.CharField(
        help_text="The entry id (long- and short-term), the working-memory entry or the pool id."
    )
    tier = serializers.ChoiceField(choices=router_selectors.TIERS)
    score = strict.FiniteFloatField(
        help_text="Fused score: the rank of the hit, whatever its tier."
    )
    relevance = strict.FiniteFloatField(help_text="0 to 1 (docs/memory/router.md).")
    components = serializers.DictField(child=strict.FiniteFloatField())
    content = serializers.JSONField(allow_null=True, help_text="Text or JSON.")
    key = serializers.CharField(help_text="The key; for a pool hit, the dot path.")
    path = serializers.CharField(help_text="Pool hits: the dot path of the value found.")
    session_id = serializers.CharField()
    context_id = serializers.IntegerField(allow_null=True)
    pool_id = serializers.CharField()
    details = serializers.DictField(source="extra")
    explanation = MemoryHitExplanation()


class MemorySearchApi(ApiView):
    """Search every tier the caller may read through their indexes; hits best first, ranked by
    one fused score whatever their tier, each explaining its place (docs/memory/router.md)."""

    required_scope = "read"

    class InputSerializer(strict.InputSerializer):
        query = strict.SearchQueryField()
        tiers = serializers.ListField(
            child=serializers.ChoiceField(choices=router_selectors.TIERS),
            required=False,
            max_length=len(router_selectors.TIERS),
        )
        top_k = strict.TopKField()
        threshold = strict.ThresholdField(
            min_value=0, max_value=1, help_text="The lowest relevance returned (0 to 1)."
        )
        filters = MemoryFiltersInput(required=False)

    class OutputSerializer(serializers.Serializer):
        results = MemoryHitOutput(many=True)
        tiers = TIER_STATUS
        timings_ms = strict.TimingsField()

    @extend_schema(
        operation_id="memory_search", request=InputSerializer, responses=OutputSerializer
    )
    def post(self, request: Request) -> Response:
        data = validated(self.InputSerializer, request)
        return Response(memory_search_answer(request_actor(request), data))


class RoutedOutput(serializers.Serializer):
    tier = serializers.CharField()
    key = serializers.CharField()
    value = serializers.JSONField(allow_null=True)
    session_id = serializers.CharField()
    entry_id = serializers.IntegerField(allow_null=True)
    context_id = serializers.IntegerField(allow_null=True)
    version = serializers.IntegerField(allow_null=True)
    tiers = TIER_STATUS


class MemoryReadApi(ApiView):
    """Read a key from the nearest tier holding it: working, short-term (in ``session_id``),
    then long-term memory; or only from ``tier``. 404 ``memory_key_not_found`` when none
    does."""

    required_scope = "read"

    class InputSerializer(strict.InputSerializer):
        key = key_field(help_text="The key to read, e.g. user.timezone.")
        session_id = session_id_field(
            required=False,
            default="",
            help_text="The session whose working and short-term memory to look in, e.g. chat-42.",
        )
        tier = serializers.ChoiceField(
            choices=router_services.WRITABLE_TIERS,
            required=False,
            help_text="Read only this tier (working and short_term need session_id); default: "
            "the nearest tier holding the key.",
        )

    @extend_schema(operation_id="memory_read", request=InputSerializer, responses=RoutedOutput)
    def post(self, request: Request) -> Response:
        data = validated(self.InputSerializer, request)
        return Response(memory_read_answer(request_actor(request), data))


def memory_read_answer(actor: Any, data: dict[str, Any]) -> dict[str, Any]:
    """``POST /memory/read``'s answer to a validated body."""
    found = router_services.memory_read_from(
        actor=actor, key=data["key"], session_id=data["session_id"], tier=data.get("tier")
    )
    return dict(RoutedOutput(found).data)


def memory_search_answer(actor: Any, data: dict[str, Any]) -> dict[str, Any]:
    """``POST /memory/search``'s answer to a validated body."""
    result = memory_search_run(
        actor=actor,
        query=data["query"],
        tiers=data.get("tiers"),
        top_k=data["top_k"],
        threshold=data["threshold"],
        filters=router_filters(data.get("filters")),
    )
    return dict(MemorySearchApi.OutputSerializer(result).data)


def memory_stats_answer(actor: Any, data: dict[str, Any]) -> dict[str, Any]:
    """``GET /memory/stats``'s answer."""
    stats = router_selectors.memory_stats(actor=actor, session_id=data.get("session_id", ""))
    return dict(MemoryStatsApi.OutputSerializer(stats).data)


def memory_consolidate_answer(actor: Any, data: dict[str, Any]) -> dict[str, Any]:
    """``POST /memory/consolidate``'s answer to a validated body."""
    report = consolidation.memory_consolidate(
        actor=actor,
        session_id=data.get("session_id", ""),
        jobs=data.get("jobs"),
        dry_run=data["dry_run"],
    )
    body = {"dry_run": data["dry_run"], "report": report}
    return dict(MemoryConsolidateApi.OutputSerializer(body).data)


class MemoryWriteInput(strict.InputSerializer):
    """The router's write, the same body at both doors (``POST /memory/write`` and MCP
    ``memory_write``): ``key`` + ``value`` to the ``tier`` named, or ``content`` (a text) as a
    new long-term entry. The rules: ``memory.context.services.router.memory_remember``."""

    tier = serializers.ChoiceField(
        choices=router_services.WRITABLE_TIERS,
        default=router_services.LONG_TERM,
        help_text="working (a session's scratch state, expires), short_term (a session's, "
        "expires) or long_term (permanent, searchable; the default). content: long_term only.",
    )
    key = key_field(
        required=False,
        help_text="Mode key: the name to store value under (letters, digits, . _ : -), e.g. "
        "user.timezone. Not with content.",
    )
    value = BoundedValueField(
        WORKING_VALUE,
        SHORT_TERM_VALUE,
        required=False,
        allow_null=True,
        help_text='Mode key: any JSON value, e.g. "Europe/Lisbon" or {"city": "Lisbon"}.',
    )
    content = strict.ServiceBoundedCharField(
        max_length=MAX_CONTENT_CHARS,
        required=False,
        trim_whitespace=False,
        help_text="Mode content: a text to remember as a new long-term entry, e.g. The office "
        "moved to Lisbon in May. Not with key.",
    )
    session_id = session_id_field(
        required=False,
        default="",
        help_text="The session (conversation or task) it belongs to; required for working and "
        "short_term, e.g. chat-42.",
    )
    ttl = TtlField(WORKING_TTL, SHORT_TERM_TTL, required=False)
    memory_type = serializers.ChoiceField(
        choices=ShortTermEntry.MemoryType.choices,
        required=False,
        help_text="short_term only: what kind of memory it is.",
    )
    context = strict.IdField(  # type: ignore[assignment]  # a field named "context"
        required=False,
        help_text="long_term only: the id of a memory context you may write (default: your "
        "own memory), e.g. 12.",
    )
    context_id = strict.IdField(
        required=False, help_text="The same as context (its earlier REST name)."
    )
    entry_type = serializers.ChoiceField(
        choices=MemoryEntry.EntryType.choices,
        default=MemoryEntry.EntryType.FACT,
        help_text="long_term only: fact (default), event, preference, procedure, ...",
    )
    importance = serializers.FloatField(
        default=0.5,
        min_value=0,
        max_value=1,
        help_text="long_term only: 0 to 1, how much it matters when recalled (default 0.5).",
    )
    tags = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        max_length=100,
        help_text='Mode content only: labels, e.g. ["office", "travel"].',
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("key" in attrs) == ("content" in attrs):
            raise serializers.ValidationError("Give exactly one of key or content.")
        if "key" in attrs and "value" not in attrs:
            raise serializers.ValidationError({"value": ["Writing a key needs a value."]})
        if "content" in attrs and "value" in attrs:
            raise serializers.ValidationError({"value": ["Give content or value, not both."]})
        if "context_id" in attrs:
            if attrs.get("context", attrs["context_id"]) != attrs["context_id"]:
                raise serializers.ValidationError("Give context or context_id, not both.")
            attrs["context"] = attrs.pop("context_id")
        return attrs


def memory_write_answer(actor: Any, data: dict[str, Any]) -> dict[str, Any]:
    """``POST /memory/write``'s answer to a validated ``MemoryWriteInput`` body."""
    written = router_services.memory_remember(
        actor=actor,
        tier=data["tier"],
        key=data.get("key"),
        value=data.get("value"),
        content=data.get("content"),
        session_id=data["session_id"],
        ttl=data.get("ttl"),
        memory_type=data.get("memory_type", ""),
        context_id=data.get("context"),
        entry_type=data["entry_type"],
        importance=data["importance"],
        tags=data.get("tags", ()),
    )
    return dict(RoutedOutput(written).data)


class MemoryWriteApi(ApiView):
    """Write to memory: ``key`` + ``value`` to the tier named (working and short-term need
    ``session_id``), or ``content`` as a new long-term entry."""

    InputSerializer = MemoryWriteInput

    @extend_schema(operation_id="memory_write", request=MemoryWriteInput, responses=RoutedOutput)
    def post(self, request: Request) -> Response:
        data = validated(MemoryWriteInput, request)
        return Response(memory_write_answer(request_actor(request), data))


class MemoryStatsApi(ApiView):
    """Counts of every tier for the caller (working memory: of ``session_id``, when given)."""

    class FilterSerializer(strict.FilterSerializer):
        session_id = session_id_field(required=False, default="")

    class OutputSerializer(serializers.Serializer):
        working = serializers.DictField()
        short_term = serializers.DictField()
        long_term = serializers.DictField()
        shared = serializers.DictField()

    @extend_schema(
        operation_id="memory_stats", parameters=[FilterSerializer], responses=OutputSerializer
    )
    def get(self, request: Request) -> Response:
        return Response(memory_stats_answer(request_actor(request), self.filters))


class MemoryConsolidateApi(ApiView):
    """Run consolidation now and answer its report; ``dry_run`` counts without changing
    anything. With ``session_id``: promote the calling agent's often-read short-term entries of
    that session (write scope). Without: the chosen steps for the whole account (admin scope)."""

    class InputSerializer(strict.InputSerializer):
        dry_run = serializers.BooleanField(default=False)
        jobs = serializers.ListField(
            child=serializers.ChoiceField(choices=consolidation.JOBS),
            required=False,
            max_length=MAX_LIST_ITEMS,
            help_text="Steps for the whole account (not with session_id); default: all.",
        )
        session_id = session_id_field(
            required=False,
            help_text="Consolidate one session of the calling agent: its short-term entries "
            "read at least MEMORY_PROMOTION_MIN_ACCESSES times become long-term entries.",
        )

    class OutputSerializer(serializers.Serializer):
        dry_run = serializers.BooleanField()
        report = serializers.DictField(
            child=serializers.DictField(child=serializers.IntegerField())
        )

    def required_scope_for(self, request: Request) -> str:
        """A session's consolidation needs ``write``; the whole account's ``admin``."""
        body = request.data if isinstance(request.data, dict) else {}
        return "write" if body.get("session_id") else "admin"

    @extend_schema(
        operation_id="memory_consolidate", request=InputSerializer, responses=OutputSerializer
    )
    def post(self, request: Request) -> Response:
        data = validated(self.InputSerializer, request)
        return Response(memory_consolidate_answer(request_actor(request), data))
