"""Long-term memory: persistent contexts holding versioned, embedded, searchable entries.

A context (an agent's memory, a project's, a team's...) holds entries. Updating an entry writes a
new version in the same *lineage* and leaves the previous one readable as history; only the
current version of a lineage that is not archived is indexed and searched. Entries are a search
space of the one engine (``memory.spaces``): their BM25 postings and term statistics live in the
tables below, their corpus statistics on the context.
"""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.db import models
from django.db.models import Q
from django.db.models.fields.json import KeyTransform
from pgvector.django import VectorField

from core.models import Account, Agent, Team, TimeStampedModel
from core.querysets import AccountScopedQuerySet, EmbeddedManager
from memory.maintenance.models.changes import ChangePolicy
from rag.spaces import AbstractKeywordPosting, AbstractKeywordTerm


class MemoryContext(TimeStampedModel):
    class ContextType(models.TextChoices):
        AGENT_MEMORY = "agent_memory", "Agent memory"
        KNOWLEDGE_BASE = "knowledge_base", "Knowledge base"
        SHARED_CONTEXT = "shared_context", "Shared context"
        TOOL_CACHE = "tool_cache", "Tool cache"
        PROJECT_CONTEXT = "project_context", "Project context"
        CONVERSATION = "conversation", "Conversation"

    class Scope(models.TextChoices):
        AGENT = "agent", "Agent (its owner and agents granted access)"
        ACCOUNT = "account", "Account (every agent of the account reads)"
        TEAM = "team", "Team (every agent of the team reads)"
        GLOBAL = "global", "Global (every agent of the account reads and writes)"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200)
    context_type = models.CharField(
        max_length=20, choices=ContextType.choices, default=ContextType.AGENT_MEMORY
    )
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.AGENT)
    owner = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    description = models.TextField(blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    archived_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Review before change (``memory.maintenance.services.changes``): ``review`` holds automatic
    # changes (dedup merges, promotions, rot archivals, decay beyond a threshold, cluster rewrites)
    # as pending changes; ``agent_write_policy`` does the same for agents' memory-tool writes.
    change_policy = models.CharField(
        max_length=6, choices=ChangePolicy.choices, default=ChangePolicy.AUTO
    )
    agent_write_policy = models.CharField(
        max_length=6, choices=ChangePolicy.choices, default=ChangePolicy.AUTO
    )
    # The owner agent's own memory (one per agent, named ``agent:<id>``): where its entries go
    # when it names no context, and where its promoted short-term entries go. A flag, not a
    # name, says so: a name can be chosen, the flag only by Engram.
    is_agent_memory = models.BooleanField(default=False, editable=False)
    # BM25 corpus statistics of the context's indexed entries (kept by the services).
    entry_count = models.PositiveIntegerField(default=0, editable=False)
    total_terms = models.PositiveBigIntegerField(default=0, editable=False)

    objects: ClassVar[AccountScopedQuerySet[MemoryContext]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "long-term memory context"
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["account", "name"], name="ltm_context_unique_name"),
            models.CheckConstraint(
                condition=~Q(scope="team") | Q(team__isnull=False), name="ltm_team_scope_has_team"
            ),
            models.UniqueConstraint(
                fields=["owner"],
                condition=Q(is_agent_memory=True),
                name="ltm_one_agent_memory_per_agent",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_archived(self) -> bool:
        return self.archived_at is not None


class MemoryContextGrant(models.Model):
    class Level(models.TextChoices):
        READ = "read", "Read"
        WRITE = "write", "Read and write"

    context = models.ForeignKey(MemoryContext, on_delete=models.CASCADE, related_name="grants")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    level = models.CharField(max_length=5, choices=Level.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "long-term memory grant"
        constraints = [
            models.UniqueConstraint(fields=["context", "agent"], name="ltm_grant_unique_agent")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} {self.level} {self.context_id}"


class MemoryEntry(models.Model):
    class EntryType(models.TextChoices):
        FACT = "fact", "Fact"
        OBSERVATION = "observation", "Observation"
        REFLECTION = "reflection", "Reflection"
        DECISION = "decision", "Decision"
        PLAN = "plan", "Plan"
        TOOL_OUTPUT = "tool_output", "Tool output"
        CONVERSATION_SUMMARY = "conversation_summary", "Conversation summary"

    class Source(models.TextChoices):
        AGENT = "agent", "Agent"
        USER = "user", "User"
        SYSTEM = "system", "System"
        TOOL = "tool", "Tool"
        WORKFLOW = "workflow", "Workflow"

    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"
        SYSTEM = "system", "System"
        TOOL = "tool", "Tool"

    class MemoryType(models.TextChoices):
        FACTUAL = "factual", "Factual"
        EXPERIENTIAL = "experiential", "Experiential"
        WORKING = "working", "Working"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    context = models.ForeignKey(MemoryContext, on_delete=models.CASCADE, related_name="entries")
    # Every version of one memory shares its lineage; ``version`` counts from 1.
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
    entry_type = models.CharField(max_length=24, choices=EntryType.choices, default=EntryType.FACT)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.AGENT)
    memory_type = models.CharField(
        max_length=12, choices=MemoryType.choices, default=MemoryType.FACTUAL
    )
    content = models.TextField(blank=True)
    data = models.JSONField(null=True, blank=True, help_text="Structured (JSON) content.")
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    occurred_at = models.DateTimeField(
        null=True, blank=True, help_text="When what the entry records happened."
    )
    # Entries of one thread (a conversation session, a task run) are indexed with their
    # neighbours by position: a line of dialogue means little without the lines around it.
    thread = models.CharField(max_length=200, blank=True)
    position = models.IntegerField(null=True, blank=True)
    # A conversation message's role and speaker (``memory.conversations.models``); blank for
    # other entries.
    role = models.CharField(max_length=9, choices=Role.choices, blank=True)
    speaker = models.CharField(max_length=200, blank=True)
    importance = models.FloatField(default=0.5)
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
    access_count = models.PositiveIntegerField(default=0, editable=False)
    last_accessed_at = models.DateTimeField(null=True, blank=True, editable=False)
    archived_at = models.DateTimeField(null=True, blank=True, editable=False)
    author = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects: ClassVar[AccountScopedQuerySet[MemoryEntry]] = EmbeddedManager()

    class Meta:
        verbose_name = "long-term memory entry"
        verbose_name_plural = "long-term memory entries"
        ordering = ["context", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["lineage", "version"], name="ltm_entry_unique_version"),
            models.UniqueConstraint(
                fields=["lineage"], condition=Q(is_current=True), name="ltm_entry_one_current"
            ),
            models.CheckConstraint(
                condition=Q(importance__gte=0, importance__lte=1), name="ltm_importance_0_1"
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0, confidence__lte=1), name="ltm_confidence_0_1"
            ),
        ]
        indexes = [
            models.Index(
                fields=["context", "thread", "position"],
                name="ltm_entry_thread",
                condition=Q(is_current=True) & ~Q(thread=""),
            ),
            models.Index(fields=["context", "is_current"], name="ltm_entry_context_current"),
            # The memory tools' related search: entries linked to given items.
            GinIndex(
                OpClass(KeyTransform("related", "metadata"), name="jsonb_path_ops"),
                name="ltm_entry_related",
                condition=Q(is_current=True),
            ),
        ]

    def __str__(self) -> str:
        text = self.content or str(self.data)
        return text[:80]

    @property
    def is_archived(self) -> bool:
        return self.archived_at is not None


class MemoryEntryPosting(AbstractKeywordPosting):
    """One (term, entry) pair of the long-term entries' BM25 index (see ``rag.spaces``)."""

    pk = models.CompositePrimaryKey("context_id", "term", "entry_id")
    context = models.ForeignKey(
        MemoryContext, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
    entry = models.ForeignKey(MemoryEntry, on_delete=models.DO_NOTHING, related_name="+")
    entry_length = models.PositiveIntegerField()

    class Meta:
        indexes = [
            models.Index(
                "context",
                "term",
                models.F("impact").desc(),
                name="ltm_posting_impact",
                include=["entry", "tf", "entry_length"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.term} in entry {self.entry_id}"


class MemoryEntryTerm(AbstractKeywordTerm):
    pk = models.CompositePrimaryKey("context_id", "term")
    context = models.ForeignKey(
        MemoryContext, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )


class MemoryEntryReading(models.Model):
    """An entry's own text as the local model reads it, token by token: the WordPiece tokens and
    their contextual states (int8, one scale per token), which late interaction scores a graph
    search's candidates by (``rag.late_interaction``). Written with the entry's index, so a
    search reads them instead of running the model over its candidates; ``text_sha`` is the
    SHA-1 of the text read, and a reading of another text than the entry's current one is not
    used. About 400 bytes a token (a LoCoMo turn: 35 tokens, 14 KB). Deleted with its entry."""

    entry = models.OneToOneField(
        MemoryEntry, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    text_sha = models.BinaryField(max_length=20)
    tokens = ArrayField(models.TextField())
    states = models.BinaryField()  # tokens x 384 int8, row-major
    scales = models.BinaryField()  # one float32 a token: a row's state is states * scale / 127

    def __str__(self) -> str:
        return f"reading of entry {self.entry_id}"


class MemorySnapshot(models.Model):
    """The current entries of a context at one moment; restoring writes them back as new
    versions, so a restore loses nothing."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    context = models.ForeignKey(MemoryContext, on_delete=models.CASCADE, related_name="snapshots")
    name = models.CharField(max_length=200, blank=True)
    entries = models.JSONField(default=list, editable=False)
    entry_count = models.PositiveIntegerField(default=0, editable=False)
    created_by = models.CharField(max_length=200, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    objects: ClassVar[AccountScopedQuerySet[MemorySnapshot]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "long-term memory snapshot"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name or f"snapshot {self.pk}"


class MemoryAccessLog(models.Model):
    class Action(models.TextChoices):
        READ = "read", "Read"
        SEARCH = "search", "Search"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    context = models.ForeignKey(
        MemoryContext, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    entry = models.ForeignKey(
        MemoryEntry, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    agent = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor = models.CharField(max_length=200, blank=True)
    action = models.CharField(max_length=6, choices=Action.choices)
    query = models.TextField(blank=True)
    result_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    objects: ClassVar[AccountScopedQuerySet[MemoryAccessLog]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "long-term memory access"
        verbose_name_plural = "long-term memory access log"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["account", "-created_at"], name="ltm_access_recent")]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor}"
