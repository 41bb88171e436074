"""Knowledge bases, documents, chunks, the BM25 keyword index and query analytics. The knowledge
graph's models live in ``rag.graph.models`` (app ``rag``): imported here so that Django finds
them."""

from __future__ import annotations

from typing import ClassVar

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q
from pgvector.django import VectorField

from core.models import Account, Agent, TimeStampedModel
from core.querysets import AccountScopedQuerySet, EmbeddedManager
from rag.spaces import AbstractKeywordPosting, AbstractKeywordTerm


class KnowledgeBase(TimeStampedModel):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        INDEXING = "indexing", "Indexing"
        PAUSED = "paused", "Paused"
        ERROR = "error", "Error"
        ARCHIVED = "archived", "Archived"

    class Chunking(models.TextChoices):
        RECURSIVE = "recursive", "Recursive (paragraph, sentence, word)"
        MARKDOWN = "markdown", "Markdown-aware (headings, code blocks)"
        SEMANTIC = "semantic", "Semantic (embedding similarity drops)"
        CODE = "code", "Code (top-level definitions)"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="knowledge_bases")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    embedding_provider = models.CharField(max_length=50, default="local")
    embedding_model = models.CharField(max_length=200, help_text="Model id of the vectors.")
    chunking_strategy = models.CharField(
        max_length=20, choices=Chunking.choices, default=Chunking.MARKDOWN
    )
    chunk_size = models.PositiveIntegerField(default=256, help_text="Target tokens per chunk.")
    chunk_overlap = models.PositiveIntegerField(
        default=32, help_text="Tokens shared by neighbours."
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)
    status_message = models.TextField(blank=True)
    # Keyword (BM25) corpus statistics, maintained transactionally with the postings.
    chunk_count = models.PositiveIntegerField(default=0, editable=False)
    total_terms = models.BigIntegerField(default=0, editable=False)

    objects: ClassVar[AccountScopedQuerySet[KnowledgeBase]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["account", "name"], name="kb_unique_name_per_account"),
            models.CheckConstraint(
                condition=Q(chunk_size__gte=32, chunk_size__lte=8192), name="kb_chunk_size_range"
            ),
            models.CheckConstraint(
                condition=Q(chunk_overlap__lt=models.F("chunk_size")), name="kb_overlap_lt_size"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Document(TimeStampedModel):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        PROCESSING = "processing", "Processing"
        INDEXED = "indexed", "Indexed"
        FAILED = "failed", "Failed"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="documents")
    knowledge_base = models.ForeignKey(
        KnowledgeBase, on_delete=models.CASCADE, related_name="documents"
    )
    title = models.CharField(max_length=500, blank=True)
    source = models.CharField(max_length=1000, blank=True, help_text="File name or URL.")
    content_type = models.CharField(max_length=100)
    original = models.BinaryField(help_text="The uploaded bytes: the source of truth for chunks.")
    checksum = models.CharField(max_length=64, db_index=True, help_text="sha256 of the original.")
    size_bytes = models.PositiveIntegerField(default=0)
    # Filterable metadata.
    doc_type = models.CharField(max_length=100, blank=True, db_index=True)
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    lifecycle_state = models.CharField(max_length=50, blank=True, db_index=True)
    source_path = models.CharField(max_length=1000, blank=True)
    document_date = models.DateField(null=True, blank=True, db_index=True)
    metadata = models.JSONField(default=dict, blank=True)
    # Processing state.
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    processing_task_id = models.CharField(max_length=255, blank=True, editable=False)
    processing_started_at = models.DateTimeField(null=True, blank=True, editable=False)
    attempts = models.PositiveSmallIntegerField(
        default=0,
        editable=False,
        help_text="Processing runs of the current cycle; one that never finished (worker lost or "
        "timed out) is given up after RAG_MAX_PROCESSING_ATTEMPTS.",
    )
    chunks_total = models.PositiveIntegerField(default=0, editable=False)
    chunks_embedded = models.PositiveIntegerField(default=0, editable=False)
    indexed_checksum = models.CharField(max_length=64, blank=True, editable=False)
    indexed_model = models.CharField(max_length=200, blank=True, editable=False)
    # What built the chunks: ``rag.chunking.chunker_signature`` (version and settings).
    indexed_chunker = models.CharField(max_length=100, blank=True, editable=False)
    indexed_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The ``indexed_at`` of the chunks whose entities are in the knowledge graph: it differs
    # from ``indexed_at`` while the graph lags behind (the task not run yet, the broker down,
    # a failure), and the periodic ``rag.graph_index_pending`` job catches up.
    graph_indexed_at = models.DateTimeField(null=True, blank=True, editable=False)
    token_count = models.PositiveIntegerField(default=0, editable=False)

    objects: ClassVar[AccountScopedQuerySet[Document]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            GinIndex(fields=["tags"], name="rag_document_tags_gin"),
            models.Index(fields=["knowledge_base", "status"], name="rag_document_kb_status"),
        ]

    def __str__(self) -> str:
        return self.title or self.source or f"document {self.pk}"

    @property
    def progress(self) -> float:
        if self.status == self.Status.INDEXED:
            return 1.0
        return self.chunks_embedded / self.chunks_total if self.chunks_total else 0.0


class Chunk(models.Model):
    # Chunks and postings exist in bulk: the database cascades deletes (migration 0002), so
    # Django's collector never loads them. Delete documents and knowledge bases through services.
    account = models.ForeignKey(Account, on_delete=models.DO_NOTHING, related_name="+")
    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.DO_NOTHING, related_name="+")
    # chunk_unique_position (document, position) serves lookups by document: no index of its own.
    document = models.ForeignKey(
        Document, on_delete=models.DO_NOTHING, related_name="chunks", db_index=False
    )
    position = models.PositiveIntegerField()
    text = models.TextField()
    heading_path = ArrayField(models.CharField(max_length=300), default=list, blank=True)
    token_count = models.PositiveIntegerField()
    start_char = models.PositiveIntegerField(default=0)
    end_char = models.PositiveIntegerField(default=0)
    # The current embedding generation's vector and model id; the other generation's beside
    # them (core.embeddings.generations: a migration to another model, or a rollback).
    embedding = VectorField(null=True, blank=True)
    embedding_model = models.CharField(max_length=200)
    embedding_next = VectorField(null=True, blank=True, editable=False)
    embedding_next_model = models.CharField(
        max_length=200, blank=True, default="", db_default="", editable=False
    )
    keyword_length = models.PositiveIntegerField(default=0, help_text="BM25 document length.")

    objects: ClassVar[AccountScopedQuerySet[Chunk]] = EmbeddedManager()

    class Meta:
        ordering = ["document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="chunk_unique_position")
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.position}"


class KeywordPosting(AbstractKeywordPosting):
    """One (term, chunk) pair of the chunks' BM25 inverted index (see ``rag.spaces``)."""

    pk = models.CompositePrimaryKey("knowledge_base_id", "term", "chunk_id")
    # The primary key and the impact index lead with knowledge_base: no index of its own.
    knowledge_base = models.ForeignKey(
        KnowledgeBase, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
    chunk = models.ForeignKey(Chunk, on_delete=models.DO_NOTHING, related_name="+")
    # Denormalised for search filters (in the impact index). Postings go with their chunk, and
    # chunks with their document, so this needs no constraint or index of its own: each index
    # costs every ingestion about fifty inserts per chunk.
    document = models.ForeignKey(
        Document, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False, db_index=False
    )
    chunk_length = models.PositiveIntegerField()

    class Meta:
        indexes = [
            # Covering: a query term's top postings come from the index alone (index-only scan).
            models.Index(
                "knowledge_base",
                "term",
                models.F("impact").desc(),
                name="rag_posting_impact",
                include=["chunk", "tf", "chunk_length", "document"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.term} in chunk {self.chunk_id}"


class KeywordTerm(AbstractKeywordTerm):
    """Document frequency of a term within a knowledge base (for idf at query time)."""

    pk = models.CompositePrimaryKey("knowledge_base_id", "term")
    knowledge_base = models.ForeignKey(
        KnowledgeBase, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )


class SearchQuery(models.Model):
    """One search or query call, for analytics."""

    class Status(models.TextChoices):
        OK = "ok", "OK"
        EMPTY = "empty", "No results"
        ERROR = "error", "Error"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    query_text = models.TextField()
    mode = models.CharField(max_length=20)
    fusion = models.CharField(max_length=20, blank=True)
    top_k = models.PositiveIntegerField()
    threshold = models.FloatField(null=True, blank=True)
    knowledge_base_ids = ArrayField(models.BigIntegerField(), default=list)
    filters = models.JSONField(default=dict, blank=True)
    result_count = models.PositiveIntegerField(default=0)
    avg_score = models.FloatField(null=True, blank=True)
    quality_score = models.FloatField(null=True, blank=True)
    latency_ms = models.FloatField(default=0)
    stage_ms = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OK)
    error = models.TextField(blank=True)

    objects: ClassVar[AccountScopedQuerySet[SearchQuery]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "search queries"
        indexes = [models.Index(fields=["account", "mode", "created_at"], name="rag_query_mode")]

    def __str__(self) -> str:
        return f"{self.mode}: {self.query_text[:60]}"


class SearchResult(models.Model):
    """One hit of a recorded search. A log: the chunk and document it names may have been
    replaced or deleted since (re-indexing, deletion), so those references carry no constraint;
    a foreign key would make a search fail when its hit is replaced before the log commits."""

    query = models.ForeignKey(SearchQuery, on_delete=models.CASCADE, related_name="results")
    # No query looks results up by chunk or document: no index either.
    chunk = models.ForeignKey(
        Chunk,
        null=True,
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    document = models.ForeignKey(
        Document,
        null=True,
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    rank = models.PositiveIntegerField()
    mode = models.CharField(max_length=20)
    fusion = models.CharField(max_length=20, blank=True)
    score = models.FloatField()
    vector_rank = models.PositiveIntegerField(null=True)
    vector_score = models.FloatField(null=True)
    keyword_rank = models.PositiveIntegerField(null=True)
    keyword_score = models.FloatField(null=True)

    class Meta:
        ordering = ["query", "rank"]

    def __str__(self) -> str:
        return f"#{self.rank} of query {self.query_id}"


from rag.graph.models import GraphCommunity as GraphCommunity  # noqa: E402
from rag.graph.models import GraphCommunityMember as GraphCommunityMember  # noqa: E402
from rag.graph.models import GraphEdge as GraphEdge  # noqa: E402
from rag.graph.models import GraphMention as GraphMention  # noqa: E402
from rag.graph.models import GraphNode as GraphNode  # noqa: E402
from rag.graph.models import GraphNodePosting as GraphNodePosting  # noqa: E402
from rag.graph.models import GraphNodeTerm as GraphNodeTerm  # noqa: E402
from rag.graph.models import GraphRelationMention as GraphRelationMention  # noqa: E402
from rag.graph.models import GraphScope as GraphScope  # noqa: E402
