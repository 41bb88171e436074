"""Models of the graph built from text: which nodes each unit of a search space mentions
(``GraphMention``: a chunk, a long-term memory entry), and the Leiden communities of an
account's graph with their members (``GraphCommunity``, ``GraphCommunityMember``). Imported by
``rag.models``; split out to keep that module readable."""

from __future__ import annotations

from typing import ClassVar

from django.db import models

from core.models import Account, TimeStampedModel
from core.querysets import AccountScopedQuerySet


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
    unit's text (``rag.services.graph_index``) are edges, each with the units stating it, so
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
