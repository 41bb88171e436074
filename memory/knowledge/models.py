"""Knowledge items (seed 003's knowledge system; docs/memory/knowledge.md).

A *knowledge store* is a named base of an account (``/api/v1/knowledge/{base}/...``) with a
knowledge type; it is not rag's document knowledge base (``rag.KnowledgeBase``), hence the
class name. It holds keyed items. Writing a key again makes a new *version* of the item in the
same lineage and leaves the previous one readable; only one version per key is current. An item
is valid from ``valid_from``; an invalidated item gets ``valid_to``, is kept, never deleted,
and leaves search. Current, valid items are a search space of the one engine
(``memory.spaces.KNOWLEDGE_ITEMS``): their BM25 postings and term statistics live in the tables
below, their corpus statistics on the store. Each lineage has one node in rag's knowledge
graph; relationships between items are typed edges between those nodes. Every version records
its sources (provenance).
"""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import VectorField

from core.models import Account, Agent, TimeStampedModel
from core.querysets import AccountScopedQuerySet, EmbeddedManager
from memory.long_term.models import MemoryContext
from rag.spaces import AbstractKeywordPosting, AbstractKeywordTerm

MAX_KEY_LENGTH = 200
MAX_BASE_NAME_LENGTH = 100


class KnowledgeStore(TimeStampedModel):
    class KnowledgeType(models.TextChoices):
        FACTUAL = "factual", "Factual"
        PROCEDURAL = "procedural", "Procedural"
        CONCEPTUAL = "conceptual", "Conceptual"
        CONTEXTUAL = "contextual", "Contextual"
        EXPERIENTIAL = "experiential", "Experiential"
        LEARNED_PATTERNS = "learned_patterns", "Learned patterns"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=MAX_BASE_NAME_LENGTH)
    description = models.TextField(blank=True)
    knowledge_type = models.CharField(
        max_length=20, choices=KnowledgeType.choices, default=KnowledgeType.FACTUAL
    )
    created_by = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", editable=False
    )
    # BM25 corpus statistics of the store's searchable items (kept by the services).
    item_count = models.PositiveIntegerField(default=0, editable=False)
    total_terms = models.PositiveBigIntegerField(default=0, editable=False)

    objects: ClassVar[AccountScopedQuerySet[KnowledgeStore]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "knowledge base (items)"
        verbose_name_plural = "knowledge bases (items)"
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["account", "name"], name="knowledge_store_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name


class KnowledgeItem(models.Model):
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    store = models.ForeignKey(KnowledgeStore, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=MAX_KEY_LENGTH)
    # Every version of one item shares its lineage; ``version`` counts from 1.
    lineage = models.UUIDField(default=uuid.uuid4, editable=False)
    version = models.PositiveIntegerField(default=1, editable=False)
    previous = models.OneToOneField(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="next_version",
    )
    is_current = models.BooleanField(default=True, editable=False)
    content = models.TextField()
    content_type = models.CharField(max_length=100, default="text/plain")
    metadata = models.JSONField(default=dict, blank=True)
    confidence = models.FloatField(default=1.0)
    # Temporal validity: an invalidated item keeps its rows with ``valid_to`` set.
    valid_from = models.DateTimeField(default=timezone.now)
    valid_to = models.DateTimeField(null=True, blank=True, editable=False)
    # The lineage's node in rag's knowledge graph (relationships are edges between nodes).
    graph_node = models.ForeignKey(
        "rag.GraphNode",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
    )
    # The current embedding generation's vector and model id; the other generation's beside
    # them (core.embeddings.generations: a migration to another model, or a rollback).
    embedding = VectorField(null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True, editable=False)
    embedding_next = VectorField(null=True, blank=True, editable=False)
    embedding_next_model = models.CharField(
        max_length=200, blank=True, default="", db_default="", editable=False
    )
    keyword_length = models.PositiveIntegerField(default=0, editable=False)
    author = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", editable=False
    )
    # Derived data keeps the visibility of its source: an item extraction took out of a
    # conversation records the conversation's context, and only the readers of that context
    # see it (``memory.long_term.context_access.derived_visible``). NULL: written explicitly,
    # account-wide. No database constraint: an item outlives a deleted conversation, readable by
    # nobody but memory managers, never turned account-wide.
    source_context = models.ForeignKey(
        MemoryContext,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects: ClassVar[AccountScopedQuerySet[KnowledgeItem]] = EmbeddedManager()

    class Meta:
        ordering = ["store", "key", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["lineage", "version"], name="knowledge_item_unique_version"
            ),
            models.UniqueConstraint(
                fields=["lineage"], condition=Q(is_current=True), name="knowledge_item_one_current"
            ),
            # The key names one item of the store per source: one current version per key
            # among the account-wide items, and per key within each context's extractions (a
            # conversation never writes a version of an item others may not read, nor reads
            # theirs).
            models.UniqueConstraint(
                fields=["store", "key", "source_context"],
                condition=Q(is_current=True),
                name="knowledge_item_unique_current_key",
                nulls_distinct=False,
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0, confidence__lte=1),
                name="knowledge_item_confidence_0_1",
            ),
            models.CheckConstraint(
                condition=Q(valid_to__isnull=True) | Q(valid_to__gte=models.F("valid_from")),
                name="knowledge_item_valid_range",
            ),
        ]
        indexes = [
            models.Index(
                fields=["store", "-created_at", "-id"],
                name="knowledge_item_store_recent",
                condition=Q(is_current=True),
            ),
            models.Index(fields=["lineage", "-version"], name="knowledge_item_history"),
        ]

    def __str__(self) -> str:
        return f"{self.key} v{self.version}"

    @property
    def is_valid(self) -> bool:
        return self.valid_to is None


class KnowledgeSource(models.Model):
    """Where one version of an item comes from."""

    class SourceType(models.TextChoices):
        CONVERSATION_MESSAGE = "conversation_message", "Conversation message"
        DOCUMENT_CHUNK = "document_chunk", "Document chunk"
        PAGE = "page", "Page"
        USER = "user", "User"
        AGENT = "agent", "Agent"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(KnowledgeItem, on_delete=models.CASCADE, related_name="sources")
    source_type = models.CharField(max_length=24, choices=SourceType.choices)
    source_id = models.CharField(max_length=200, blank=True)
    reliability = models.FloatField(default=1.0)
    extracted_at = models.DateTimeField(default=timezone.now)

    objects: ClassVar[AccountScopedQuerySet[KnowledgeSource]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["item", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(reliability__gte=0, reliability__lte=1),
                name="knowledge_source_reliability_0_1",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source_type}:{self.source_id}"


class KnowledgeItemPosting(AbstractKeywordPosting):
    """One (term, item) pair of the knowledge items' BM25 index (see ``rag.spaces``)."""

    pk = models.CompositePrimaryKey("store_id", "term", "item_id")
    store = models.ForeignKey(
        KnowledgeStore, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
    item = models.ForeignKey(KnowledgeItem, on_delete=models.DO_NOTHING, related_name="+")
    item_length = models.PositiveIntegerField()

    class Meta:
        indexes = [
            models.Index(
                "store",
                "term",
                models.F("impact").desc(),
                name="knowledge_posting_impact",
                include=["item", "tf", "item_length"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.term} in knowledge item {self.item_id}"


class KnowledgeItemTerm(AbstractKeywordTerm):
    pk = models.CompositePrimaryKey("store_id", "term")
    store = models.ForeignKey(
        KnowledgeStore, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
