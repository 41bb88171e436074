"""The knowledge graph's models (app ``rag``; ``rag.models`` imports them so that Django finds
them): nodes and typed edges of an account's graph with the nodes' BM25 index (``GraphScope``,
``GraphNode``, ``GraphEdge``, ``GraphNodePosting``, ``GraphNodeTerm``), which nodes each unit of a
search space mentions (``GraphMention``, ``GraphRelationMention``: a chunk, a long-term memory
entry), and the Leiden communities of an account's graph with their members (``GraphCommunity``,
``GraphCommunityMember``). Only rag reads them: other apps go through ``rag.graph.selectors`` and
``rag.graph.services``."""

from __future__ import annotations

from typing import ClassVar

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from pgvector.django import VectorField

from core.models import Account, TimeStampedModel
from core.querysets import AccountScopedQuerySet, EmbeddedManager
from rag.spaces import AbstractKeywordPosting, AbstractKeywordTerm


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
    # The current embedding generation's vector and model id; the other generation's beside
    # them (core.embeddings.generations: a migration to another model, or a rollback).
    embedding = VectorField(null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True, editable=False)
    embedding_next = VectorField(null=True, blank=True, editable=False)
    embedding_next_model = models.CharField(
        max_length=200, blank=True, default="", db_default="", editable=False
    )
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

    objects: ClassVar[AccountScopedQuerySet[GraphNode]] = EmbeddedManager()

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


class GraphMention(models.Model):
    """A node mentioned by one unit of a search space (``space`` is the space's name: chunks,
    memory_entries), in a scope of that space (a knowledge base, a memory context). Derived
    from the unit's text by entity extraction; rebuilt by ``graph_rebuild``. The unit is not a
    foreign key (spaces of the apps above rag have units here too): readers join the space's
    unit table, so a mention of a deleted unit is never read, and the index jobs prune them.
    Rows exist in bulk: the database cascades the node's deletion (migration)."""

    pk = models.CompositePrimaryKey("node_id", "space", "unit_id")
    account = models.ForeignKey(
        Account, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
    node = models.ForeignKey(
        "rag.GraphNode", on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
    space = models.CharField(max_length=40)
    scope_id = models.BigIntegerField()
    unit_id = models.BigIntegerField()
    # How central the node is to the unit (0..1): the extractor's rank of it among the unit's
    # entities; co-occurrence edges join a unit's most salient nodes only.
    salience = models.FloatField(default=1.0)
    occurrences = models.PositiveIntegerField(default=1)

    class Meta:
        indexes = [
            models.Index(fields=["space", "unit_id"], name="graph_mention_unit"),
            models.Index(fields=["space", "scope_id"], name="graph_mention_scope"),
        ]

    def __str__(self) -> str:
        return f"node {self.node_id} in {self.space} {self.unit_id}"


class GraphRelationMention(models.Model):
    """A typed edge stated by one unit of a search space: the relations an extractor found in a
    unit's text (``rag.graph.services.index``) are edges, each with the units stating it, so
    that indexing a unit again or deleting it takes back what it stated (an extracted edge no
    unit states any more is deleted; its weight is the number of units stating it). Derived,
    in bulk like ``GraphMention``: the database cascades the edge's deletion (migration)."""

    pk = models.CompositePrimaryKey("edge_id", "space", "unit_id")
    account = models.ForeignKey(
        Account, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
    edge = models.ForeignKey(
        "rag.GraphEdge", on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
    space = models.CharField(max_length=40)
    scope_id = models.BigIntegerField()
    unit_id = models.BigIntegerField()

    class Meta:
        indexes = [
            models.Index(fields=["space", "unit_id"], name="graph_relmention_unit"),
            models.Index(fields=["space", "scope_id"], name="graph_relmention_scope"),
        ]

    def __str__(self) -> str:
        return f"edge {self.edge_id} in {self.space} {self.unit_id}"


class GraphCommunity(TimeStampedModel):
    """A community of an account's graph found by Leiden at one ``level`` (0: the whole graph;
    level n + 1 splits each community of level n), with its members and a summary."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    level = models.PositiveSmallIntegerField(default=0)
    number = models.PositiveIntegerField(help_text="The community's number within its level.")
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    size = models.PositiveIntegerField(default=0)
    title = models.CharField(max_length=300, blank=True)
    summary = models.TextField(blank=True)
    summary_method = models.CharField(
        max_length=250, blank=True, help_text="extractive, or llm:<model>."
    )
    seed = models.IntegerField(default=0, help_text="The Leiden seed of the run.")
    modularity = models.FloatField(null=True, blank=True)

    objects: ClassVar[AccountScopedQuerySet[GraphCommunity]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["level", "-size", "number"]
        verbose_name_plural = "graph communities"
        constraints = [
            models.UniqueConstraint(
                fields=["account", "level", "number"], name="graph_community_unique_number"
            )
        ]

    def __str__(self) -> str:
        return self.title or f"community {self.level}.{self.number}"


class GraphCommunityMember(models.Model):
    """A node of a community (each node is in at most one community per level)."""

    pk = models.CompositePrimaryKey("community_id", "node_id")
    community = models.ForeignKey(
        GraphCommunity, on_delete=models.DO_NOTHING, related_name="members", db_index=False
    )
    node = models.ForeignKey("rag.GraphNode", on_delete=models.DO_NOTHING, related_name="+")
    account = models.ForeignKey(
        Account, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
    level = models.PositiveSmallIntegerField(default=0)
    # The member's weighted degree inside the community: its most central members first.
    centrality = models.FloatField(default=0.0)

    class Meta:
        indexes = [models.Index(fields=["node", "level"], name="graph_member_node_level")]

    def __str__(self) -> str:
        return f"node {self.node_id} in community {self.community_id}"
