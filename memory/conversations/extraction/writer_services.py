"""How an extraction run writes what it found (``memory.conversations.extraction.services`` runs the
extractors): facts as knowledge items of the account's base ``EXTRACTION_BASE``, entities as
nodes of rag's knowledge graph (found again by their name), relations as its edges, and one
``Extraction`` row per finding with its source messages and decision.

Derived data keeps the visibility of its source (docs/architecture.md, rule 11): every item,
node and edge written here records the conversation's context (``source_context`` /
``rag.visibility.Source``), so only those who may read the conversation see it. A key names
one item per source: a conversation writes versions of its own items only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.actors import Actor
from core.errors import Conflict
from memory.conversations.extraction import offline
from memory.knowledge import selectors as knowledge_selectors
from memory.knowledge import services as knowledge_services
from memory.models import Conversation, Extraction, MemoryEntry
from memory.spaces import MEMORY_ENTRIES
from rag.graph import selectors as graph
from rag.graph import services as graph_services
from rag.graph.selectors import NodeType
from rag.visibility import Source, source_of

if TYPE_CHECKING:
    from rag.graph.models import GraphNode

EXTRACTION_BASE = "conversations"
Decision = Extraction.Decision
Kind = Extraction.Kind


@dataclass
class ExtractionRun:
    from_turn: int
    to_turn: int
    method: str
    extractions: list[Extraction] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        plural = {Kind.FACT: "facts", Kind.ENTITY: "entities", Kind.RELATION: "relations"}
        counts = {f"{d}": 0 for d in Decision.values} | {name: 0 for name in plural.values()}
        for row in self.extractions:
            counts[row.decision] += 1
            counts[plural[Kind(row.kind)]] += 1
        counts["failed"] = sum(1 for row in self.extractions if row.error)
        return counts


@dataclass
class ExtractionWriter:
    """Writes one run's knowledge and rows for one conversation."""

    actor: Actor
    conversation: Conversation
    method: str
    run: ExtractionRun
    nodes: dict[tuple[str, str], tuple[GraphNode, bool]] = field(default_factory=dict)

    @property
    def account_id(self) -> int:
        return self.conversation.account_id

    @property
    def context_id(self) -> int:
        return self.conversation.context_id

    @property
    def source(self) -> Source:
        """Where the graph rows written here come from: the conversation's context."""
        return source_of(MEMORY_ENTRIES.name, self.conversation.context_id)

    def row(
        self,
        messages: Sequence[MemoryEntry],
        *,
        kind: str,
        decision: str,
        fact: str,
        confidence: float,
        **links: Any,
    ) -> Extraction:
        ordered = sorted(messages, key=lambda m: m.position or 0)
        made = Extraction.objects.create(
            account_id=self.account_id,
            conversation_id=self.conversation.pk,
            message_ids=[m.pk for m in ordered],
            turns=[m.position or 0 for m in ordered],
            method=self.method,
            kind=kind,
            decision=decision,
            fact=fact,
            confidence=min(1.0, max(0.0, confidence)),
            **links,
        )
        self.run.extractions.append(made)
        return made

    def fact_put(
        self,
        messages: Sequence[MemoryEntry],
        *,
        key: str,
        text: str,
        confidence: float,
        base: str = EXTRACTION_BASE,
        metadata: dict[str, Any] | None = None,
    ) -> Extraction:
        """The fact as item ``key`` of ``base``: a new item (add), a new version (update) or,
        when the current valid version says it already, nothing (none)."""
        store = knowledge_selectors.stores_visible(self.actor).filter(
            account_id=self.account_id, name=base
        )
        current = None
        if store.exists():
            current = knowledge_selectors.item_current(store.get(), key, self.context_id)
        if current is not None and current.is_valid and current.content == text:
            return self.row(
                messages, kind=Kind.FACT, decision=Decision.NONE, fact=text,
                confidence=confidence, key=key, knowledge_item=current,
            )  # fmt: skip
        outcome = knowledge_services.knowledge_item_put(
            actor=self.actor,
            base=base,
            key=key,
            content=text,
            confidence=confidence,
            metadata={"conversation_id": self.conversation.pk, **(metadata or {})},
            sources=[
                knowledge_services.SourceInput(
                    "conversation_message", str(m.pk), reliability=confidence
                )
                for m in messages
            ],
            account_id=self.account_id,
            source_context_id=self.context_id,
        )
        decision = (
            Decision.ADD
            if outcome.created
            else Decision.UPDATE
            if outcome.changed
            else Decision.NONE
        )
        return self.row(
            messages, kind=Kind.FACT, decision=decision, fact=text, confidence=confidence,
            key=key, knowledge_item=outcome.item,
        )  # fmt: skip

    def node(self, name: str, entity_type: str, confidence: float) -> tuple[GraphNode, bool]:
        """The account's node of this name (its normalised name, whatever its type), made when
        missing: (node, made now)."""
        wanted = (name.strip().lower(), entity_type)
        if wanted in self.nodes:
            return self.nodes[wanted][0], False
        ensured = graph_services.node_ensure(
            actor=self.actor,
            account_id=self.account_id,
            name=name.strip(),
            entity_type=entity_type,
            match="key",
            initial={
                "node_type": NodeType.ENTITY,
                "confidence": confidence,
                "metadata": {"extracted_from": f"conversation:{self.conversation.pk}"},
            },
            source=self.source,
        )
        self.nodes[wanted] = (ensured.node, ensured.created)
        return ensured.node, ensured.created

    def entity(
        self, messages: Sequence[MemoryEntry], name: str, entity_type: str, confidence: float
    ) -> Extraction:
        node, made = self.node(name, entity_type, confidence)
        return self.row(
            messages, kind=Kind.ENTITY, decision=Decision.ADD if made else Decision.NONE,
            fact=f"{node.name} ({entity_type})", confidence=confidence, graph_node=node,
        )  # fmt: skip

    def relation(
        self,
        messages: Sequence[MemoryEntry],
        source: GraphNode,
        relation_type: str,
        target: GraphNode,
        confidence: float,
    ) -> Extraction | None:
        relation_type = offline.slug(relation_type)[:100]
        if not relation_type or source.pk == target.pk:
            return None
        text = f"{source.name} {relation_type} {target.name}"
        try:
            edge = graph_services.edge_create(
                actor=self.actor,
                account_id=self.account_id,
                source_id=source.pk,
                target_id=target.pk,
                relation_type=relation_type,
                confidence=confidence,
                metadata={"extracted_from": f"conversation:{self.conversation.pk}"},
                source=self.source,
            )
            decision = Decision.ADD
        except Conflict:
            found = graph.edge_of_source(
                source_id=source.pk,
                target_id=target.pk,
                relation_type=relation_type,
                source=self.source,
            )
            if found is None:  # deleted again meanwhile
                raise
            edge, decision = found, Decision.NONE
        return self.row(
            messages, kind=Kind.RELATION, decision=decision, fact=text,
            confidence=confidence, graph_edge=edge,
        )  # fmt: skip
