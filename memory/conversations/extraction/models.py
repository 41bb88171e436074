"""Extractions: what was taken out of a conversation's messages, with its provenance.

Every extraction names its source messages (entry ids of the conversation's context, with their
turn numbers), the method that found it (``llm:<model>`` or ``offline``), a confidence and the
decision taken on the knowledge it touched: ``add`` (a new knowledge item, node or edge),
``update`` (a new version of an item), ``invalidate`` (an item given ``valid_to``) or ``none``
(known already, or nothing written). A run that failed leaves one row with decision ``none`` and
its ``error``: failures are visible, never silent (docs/memory/conversations.md, "Extraction").
"""

from __future__ import annotations

from typing import ClassVar

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from core.models import Account
from core.querysets import AccountScopedQuerySet
from memory.conversations.models import Conversation
from memory.knowledge.models import KnowledgeItem

OFFLINE_METHOD = "offline"


class Extraction(models.Model):
    class Kind(models.TextChoices):
        FACT = "fact", "Fact"
        ENTITY = "entity", "Entity"
        RELATION = "relation", "Relation"

    class Decision(models.TextChoices):
        ADD = "add", "Add"
        UPDATE = "update", "Update"
        INVALIDATE = "invalidate", "Invalidate"
        NONE = "none", "None"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="extractions"
    )
    # The source messages: their entry ids and turn numbers, in turn order.
    message_ids = ArrayField(models.BigIntegerField(), default=list)
    turns = ArrayField(models.PositiveIntegerField(), default=list)
    method = models.CharField(max_length=250)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    decision = models.CharField(max_length=10, choices=Decision.choices)
    confidence = models.FloatField(default=0.0)
    # The fact as a sentence; an entity's name; a relation as "source type target".
    fact = models.TextField(blank=True)
    # The knowledge item's key a fact was written under (its base is the item's).
    key = models.CharField(max_length=200, blank=True)
    # What the extraction produced or changed (kept when that is deleted: the row says so).
    knowledge_item = models.ForeignKey(
        KnowledgeItem, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    graph_node = models.ForeignKey(
        "rag.GraphNode", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    graph_edge = models.ForeignKey(
        "rag.GraphEdge", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # A run that failed: the error (decision none, nothing written).
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects: ClassVar[AccountScopedQuerySet[Extraction]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(
                fields=["conversation", "-created_at", "-id"], name="extraction_conversation"
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(confidence__gte=0, confidence__lte=1),
                name="extraction_confidence_0_1",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.decision}: {self.fact[:80]}"

    @property
    def failed(self) -> bool:
        return bool(self.error)
