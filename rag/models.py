"""Knowledge bases, documents, chunks, the BM25 keyword index and query analytics."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from pgvector.django import HnswIndex, VectorField

from core.models import Account, Agent, TimeStampedModel
from core.querysets import AccountScopedQuerySet
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
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS)
    embedding_model = models.CharField(max_length=200)
    keyword_length = models.PositiveIntegerField(default=0, help_text="BM25 document length.")

    class Meta:
        ordering = ["document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="chunk_unique_position")
        ]
        indexes = [
            # The opclass matches the cosine distance (<=>) every vector query uses.
            HnswIndex(
                name="rag_chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
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


# --- the knowledge graph ---------------------------------------------------------------------


class GraphScope(models.Model):
    """One account's graph as a scope of the ``graph_nodes`` search space (``rag.spaces``): its
    row holds the BM25 corpus statistics of the account's nodes and its lock serialises their
    index changes. Created with the account's first node."""

    account = models.OneToOneField(Account, on_delete=models.CASCADE, related_name="+")
    node_count = models.PositiveIntegerField(default=0, editable=False)
    total_terms = models.PositiveBigIntegerField(default=0, editable=False)

    objects: ClassVar[AccountScopedQuerySet[GraphScope]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    def __str__(self) -> str:
        return f"graph of account {self.account_id}"


class GraphNode(TimeStampedModel):
    """An entity or concept of an account's knowledge graph (a person, a page, a skill...),
    searchable (hybrid) over its name, aliases and description."""

    class NodeType(models.TextChoices):
        ENTITY = "entity", "Entity"
        CONCEPT = "concept", "Concept"
        EVENT = "event", "Event"
        DOCUMENT = "document", "Document"
        MEMORY = "memory", "Memory"
        SKILL = "skill", "Skill"

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        ARCHIVED = "archived", "Archived"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    scope = models.ForeignKey(
        GraphScope, on_delete=models.CASCADE, related_name="+", editable=False
    )
    node_type = models.CharField(max_length=20, choices=NodeType.choices, default=NodeType.ENTITY)
    entity_type = models.CharField(
        max_length=100, help_text="What the node is: person, organization, page, article..."
    )
    name = models.CharField(max_length=500)
    aliases = ArrayField(models.CharField(max_length=500), default=list, blank=True)
    description = models.TextField(blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    mention_count = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    confidence = models.FloatField(default=1.0)
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True, editable=False)
    keyword_length = models.PositiveIntegerField(default=0, editable=False)
    # The name and aliases normalised (``rag.graph.names.name_key``): what entities
    # extracted from text are merged by.
    name_key = models.CharField(max_length=500, blank=True, default="", editable=False)
    alias_keys = ArrayField(
        models.CharField(max_length=500), default=list, blank=True, editable=False
    )
    # Where the node came from when that may be private (``rag.visibility``): the scope of a
    # search space whose unit named it first (a conversation's context). Blank / NULL: an
    # account-wide source made it. A node is visible to a reader of that scope, or through any
    # mention the reader may see.
    derived_space = models.CharField(
        max_length=40, blank=True, default="", db_default="", editable=False
    )
    derived_scope_id = models.BigIntegerField(null=True, blank=True, editable=False)

    objects: ClassVar[AccountScopedQuerySet[GraphNode]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                "account",
                "entity_type",
                Lower("name"),
                name="graph_node_unique_name",
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0, confidence__lte=1), name="graph_node_confidence_0_1"
            ),
        ]
        indexes = [
            HnswIndex(
                name="graph_node_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
            models.Index(fields=["account", "-created_at"], name="graph_node_recent"),
            models.Index(fields=["account", "name_key"], name="graph_node_name_key"),
            GinIndex(fields=["alias_keys"], name="graph_node_alias_keys"),
        ]

    def __str__(self) -> str:
        return self.name


class GraphEdge(TimeStampedModel):
    """A typed, directed relation between two nodes of one account; ``bidirectional`` edges are
    traversed both ways."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    # graph_edge_unique (source, target, relation_type) serves lookups by source.
    source = models.ForeignKey(
        GraphNode, on_delete=models.CASCADE, related_name="edges_out", db_index=False
    )
    target = models.ForeignKey(GraphNode, on_delete=models.CASCADE, related_name="edges_in")
    relation_type = models.CharField(max_length=100)
    weight = models.FloatField(default=1.0)
    confidence = models.FloatField(default=1.0)
    bidirectional = models.BooleanField(default=False)
    metadata = models.JSONField(default=dict, blank=True)
    # Where the edge came from when that may be private (``rag.visibility``): a relation a
    # conversation stated, the co-occurrences within one private scope. Blank / NULL: an
    # account-wide source or an explicit write. One edge of a type joins two nodes once per
    # source: a public and a private co-occurrence of the same pair are two rows.
    derived_space = models.CharField(
        max_length=40, blank=True, default="", db_default="", editable=False
    )
    derived_scope_id = models.BigIntegerField(null=True, blank=True, editable=False)

    objects: ClassVar[AccountScopedQuerySet[GraphEdge]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["source", "target", "relation_type", "derived_space", "derived_scope_id"],
                name="graph_edge_unique",
                nulls_distinct=False,
            ),
            models.CheckConstraint(
                condition=~Q(source=models.F("target")), name="graph_edge_no_self_loop"
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0, confidence__lte=1), name="graph_edge_confidence_0_1"
            ),
        ]
        indexes = [
            # Bidirectional edges are followed from their target too.
            models.Index(
                fields=["target", "source"],
                name="graph_edge_bidirectional",
                condition=Q(bidirectional=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} -{self.relation_type}-> {self.target_id}"


class GraphNodePosting(AbstractKeywordPosting):
    """One (term, node) pair of the graph nodes' BM25 index (see ``rag.spaces``)."""

    pk = models.CompositePrimaryKey("scope_id", "term", "node_id")
    scope = models.ForeignKey(
        GraphScope, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
    node = models.ForeignKey(GraphNode, on_delete=models.DO_NOTHING, related_name="+")
    node_length = models.PositiveIntegerField()

    class Meta:
        indexes = [
            models.Index(
                "scope",
                "term",
                models.F("impact").desc(),
                name="graph_posting_impact",
                include=["node", "tf", "node_length"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.term} in node {self.node_id}"


class GraphNodeTerm(AbstractKeywordTerm):
    pk = models.CompositePrimaryKey("scope_id", "term")
    scope = models.ForeignKey(
        GraphScope, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )


from rag.graph_models import (  # noqa: E402 - models of the graph built from text
    GraphCommunity as GraphCommunity,
)
from rag.graph_models import GraphCommunityMember as GraphCommunityMember  # noqa: E402
from rag.graph_models import GraphMention as GraphMention  # noqa: E402
from rag.graph_models import GraphRelationMention as GraphRelationMention  # noqa: E402
