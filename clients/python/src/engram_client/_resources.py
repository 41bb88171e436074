"""The resources of the sync client, one class per group of operations. Each method sends one
operation of the API (docs/api.md); ``_async_resources.py`` is generated from this file.

A parameter left at ``None`` is not sent, so the server's default applies."""

from __future__ import annotations

import base64
import builtins
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._base import Requester, Resource, SyncPage, endpoint
from .types import (
    Agent,
    Backlink,
    BrokenLinks,
    Conversation,
    ConversationDetail,
    DataValue,
    DataWrite,
    Document,
    Entry,
    Extraction,
    ExtractionRun,
    GraphContext,
    GraphEdge,
    GraphNode,
    KnowledgeBase,
    KnowledgeItem,
    KnowledgeItemRelationships,
    KnowledgeQuery,
    KnowledgeRelationship,
    KnowledgeStore,
    LinkReport,
    LongTermSearch,
    Me,
    MemoryContext,
    MemoryEntry,
    MemoryEntryBatch,
    MemorySearch,
    MemoryStats,
    Mentions,
    Message,
    MessageInput,
    MessageList,
    Neighbours,
    NodeDetail,
    NodeSearch,
    Page,
    PageHits,
    PageSummary,
    Pool,
    PoolStats,
    Query,
    Related,
    Rename,
    Routed,
    Search,
    ShortTerm,
    ShortTermBatch,
    Skill,
    SkillContext,
    SkillDetail,
    SkillDiscover,
    SkillUpdate,
    Summary,
    UsageRecord,
    WorkingExists,
    WorkingSession,
    WorkingSessionClear,
)
from .types import (
    Context as ContextAnswer,
)
from .types import (
    Path as GraphPath,
)

JSON = dict[str, Any]


class Agents(Resource):
    """The calling agent and the agents of its account."""

    @endpoint("GET", "/api/v1/me")
    def me(self) -> Me:
        """The calling agent, its account, and the key's name and scopes."""

    @endpoint("GET", "/api/v1/agents", paged=True)
    def list(self, *, page_size: int | None = None) -> SyncPage[Agent]:
        """The account's agents, by name."""

    @endpoint("GET", "/api/v1/agents/{agent_id}")
    def retrieve(self, agent_id: int) -> Agent:
        """One agent of the account."""


class Messages(Resource):
    """A conversation's messages."""

    @endpoint("GET", "/api/v1/memory/conversations/{conversation_id}/messages", paged=True)
    def list(
        self, conversation_id: int, *, last: int | None = None, page_size: int | None = None
    ) -> SyncPage[Message]:
        """The whole history in turn order (iterate the page for every message), or the
        ``last`` N messages."""

    @endpoint("POST", "/api/v1/memory/conversations/{conversation_id}/messages")
    def add(self, conversation_id: int, *, messages: Sequence[MessageInput]) -> MessageList:
        """Append 1 to 1,000 messages ``{"role", "content", "name", "occurred_at",
        "metadata"}``, all or none."""


class Conversations(Resource):
    """Conversations, their messages, summaries and extractions."""

    def __init__(self, client: Requester) -> None:
        super().__init__(client)
        self.messages = Messages(client)

    @endpoint("GET", "/api/v1/memory/conversations", paged=True)
    def list(
        self, *, user_id: str | None = None, page_size: int | None = None
    ) -> SyncPage[Conversation]:
        """Conversations the caller may read, newest first."""

    @endpoint("POST", "/api/v1/memory/conversations")
    def create(
        self,
        *,
        title: str | None = None,
        user_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        summary_every: int | None = None,
    ) -> Conversation:
        """Start a conversation."""

    @endpoint("GET", "/api/v1/memory/conversations/{conversation_id}")
    def retrieve(self, conversation_id: int) -> ConversationDetail:
        """A conversation, with how far its indexing got."""

    @endpoint("PATCH", "/api/v1/memory/conversations/{conversation_id}")
    def update(
        self,
        conversation_id: int,
        *,
        title: str | None = None,
        user_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        summary_every: int | None = None,
    ) -> Conversation:
        """Change a conversation's title, user id, metadata or summary interval."""

    @endpoint("DELETE", "/api/v1/memory/conversations/{conversation_id}")
    def delete(self, conversation_id: int) -> None:
        """Delete a conversation with its messages and summaries."""

    @endpoint("POST", "/api/v1/memory/conversations/{conversation_id}/turns")
    def add_turn(
        self,
        conversation_id: int,
        *,
        user_input: str,
        agent_response: str,
        context: Mapping[str, Any] | None = None,
        occurred_at: str | None = None,
    ) -> MessageList:
        """A turn: the user's input and the agent's response, as two messages."""

    @endpoint("GET", "/api/v1/memory/conversations/{conversation_id}/summaries", paged=True)
    def summaries(self, conversation_id: int, *, page_size: int | None = None) -> SyncPage[Summary]:
        """The conversation's summaries, newest first."""

    @endpoint("POST", "/api/v1/memory/conversations/{conversation_id}/summaries")
    def summarize(
        self, conversation_id: int, *, start_turn: int | None = None, end_turn: int | None = None
    ) -> Summary:
        """Summarise turns now."""

    @endpoint("POST", "/api/v1/memory/conversations/{conversation_id}/extract")
    def extract(
        self, conversation_id: int, *, from_turn: int | None = None, to_turn: int | None = None
    ) -> ExtractionRun:
        """Extract facts, entities and relations from turns now (default: every turn)."""

    @endpoint("GET", "/api/v1/memory/conversations/{conversation_id}/extractions", paged=True)
    def extractions(
        self, conversation_id: int, *, page_size: int | None = None
    ) -> SyncPage[Extraction]:
        """What was extracted, newest first."""


class Context(Resource):
    """The LLM context for a query, assembled across every store."""

    @endpoint("POST", "/api/v1/memory/context")
    def get(
        self,
        *,
        query: str,
        conversation_id: int | None = None,
        session_id: str | None = None,
        task_type: str | None = None,
        token_budget: int | None = None,
        sources: Sequence[str] | None = None,
        knowledge_base_ids: Sequence[int] | None = None,
        format: str | None = None,
    ) -> ContextAnswer:
        """The agent's context for ``query`` within ``token_budget``: ``context`` (the text)
        and ``sections`` (every item with its source and score)."""


class WorkingMemory(Resource):
    """Working memory (Redis): a session's keys, short-lived."""

    @endpoint("GET", "/api/v1/memory/working/{session_id}/{key}")
    def get(self, session_id: str, key: str) -> Entry:
        """A key's value (404 ``working_memory_key_not_found``)."""

    @endpoint("PUT", "/api/v1/memory/working/{session_id}/{key}")
    def set(self, session_id: str, key: str, *, value: Any, ttl: int | None = None) -> Entry:
        """Store a value (any JSON) under a key."""

    @endpoint("DELETE", "/api/v1/memory/working/{session_id}/{key}")
    def delete(self, session_id: str, key: str) -> None:
        """Remove a key."""

    @endpoint("GET", "/api/v1/memory/working/{session_id}/{key}/exists")
    def exists(self, session_id: str, key: str) -> WorkingExists:
        """Whether a key is held."""

    @endpoint("GET", "/api/v1/memory/working/{session_id}")
    def keys(self, session_id: str) -> WorkingSession:
        """Every key of a session (one answer, not paged)."""

    @endpoint("DELETE", "/api/v1/memory/working/{session_id}")
    def clear(self, session_id: str) -> WorkingSessionClear:
        """Remove every key of a session."""


class ShortTermMemory(Resource):
    """Short-term memory: a session's entries with a TTL (PostgreSQL)."""

    @endpoint("GET", "/api/v1/memory/short-term/{session_id}/{key}")
    def get(self, session_id: str, key: str) -> ShortTerm:
        """An entry (the read counts an access)."""

    @endpoint("PUT", "/api/v1/memory/short-term/{session_id}/{key}")
    def set(
        self,
        session_id: str,
        key: str,
        *,
        value: Any,
        ttl: int | None = None,
        memory_type: str | None = None,
    ) -> ShortTerm:
        """Store an entry."""

    @endpoint("DELETE", "/api/v1/memory/short-term/{session_id}/{key}")
    def delete(self, session_id: str, key: str) -> None:
        """Remove an entry."""

    @endpoint("POST", "/api/v1/memory/short-term/{session_id}/{key}/refresh")
    def refresh(self, session_id: str, key: str, *, ttl: int | None = None) -> ShortTerm:
        """Extend an entry's TTL."""

    @endpoint("POST", "/api/v1/memory/short-term/{session_id}/_batch")
    def set_many(self, session_id: str, *, entries: Sequence[Mapping[str, Any]]) -> ShortTermBatch:
        """Store up to 1,000 entries ``{"key", "value", "ttl", "memory_type"}``, all or none."""

    @endpoint("GET", "/api/v1/memory/short-term/{session_id}", paged=True)
    def list(
        self, session_id: str, *, memory_type: str | None = None, page_size: int | None = None
    ) -> SyncPage[ShortTerm]:
        """A session's live entries."""


class MemoryContexts(Resource):
    """Long-term memory contexts (named stores of entries, with access and policies)."""

    @endpoint("GET", "/api/v1/memory/contexts", paged=True)
    def list(
        self,
        *,
        context_type: str | None = None,
        scope: str | None = None,
        include_archived: bool | None = None,
        page_size: int | None = None,
    ) -> SyncPage[MemoryContext]:
        """Contexts the caller may read."""

    @endpoint("POST", "/api/v1/memory/contexts")
    def create(
        self,
        *,
        name: str,
        context_type: str | None = None,
        scope: str | None = None,
        team_id: int | None = None,
        description: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        change_policy: str | None = None,
        agent_write_policy: str | None = None,
    ) -> MemoryContext:
        """Create a context."""

    @endpoint("GET", "/api/v1/memory/contexts/{context_id}")
    def retrieve(self, context_id: int) -> MemoryContext:
        """A context."""

    @endpoint("PATCH", "/api/v1/memory/contexts/{context_id}")
    def update(
        self,
        context_id: int,
        *,
        name: str | None = None,
        context_type: str | None = None,
        description: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        change_policy: str | None = None,
        agent_write_policy: str | None = None,
    ) -> MemoryContext:
        """Change a context's settings."""

    @endpoint("DELETE", "/api/v1/memory/contexts/{context_id}")
    def delete(self, context_id: int) -> None:
        """Delete a context with its entries."""

    @endpoint("GET", "/api/v1/memory/contexts/{context_id}/entries", paged=True)
    def entries(
        self,
        context_id: int,
        *,
        entry_type: str | None = None,
        include_archived: bool | None = None,
        page_size: int | None = None,
    ) -> SyncPage[MemoryEntry]:
        """A context's current entries."""


class LongTermMemory(Resource):
    """Long-term memory: versioned entries in contexts, and their hybrid search."""

    def __init__(self, client: Requester) -> None:
        super().__init__(client)
        self.contexts = MemoryContexts(client)

    @endpoint("POST", "/api/v1/memory/entries")
    def add(
        self,
        *,
        content: str | None = None,
        data: Any = None,
        context: int | None = None,
        entry_type: str | None = None,
        source: str | None = None,
        memory_type: str | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        occurred_at: str | None = None,
        thread: str | None = None,
        position: int | None = None,
        speaker: str | None = None,
        importance: float | None = None,
        confidence: float | None = None,
    ) -> MemoryEntry:
        """Write one entry into ``context`` (default: the calling agent's own memory)."""

    @endpoint("POST", "/api/v1/memory/entries/batch")
    def add_many(
        self, *, entries: Sequence[Mapping[str, Any]], context: int | None = None
    ) -> MemoryEntryBatch:
        """Write 1 to 500 entries, all or none."""

    @endpoint("GET", "/api/v1/memory/entries/{entry_id}")
    def retrieve(self, entry_id: int) -> MemoryEntry:
        """An entry (the read is logged)."""

    @endpoint("PATCH", "/api/v1/memory/entries/{entry_id}")
    def update(
        self,
        entry_id: int,
        *,
        content: str | None = None,
        data: Any = None,
        entry_type: str | None = None,
        source: str | None = None,
        memory_type: str | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        occurred_at: str | None = None,
        importance: float | None = None,
        confidence: float | None = None,
        expected_version: int | None = None,
    ) -> MemoryEntry:
        """Change an entry (new content makes a new version)."""

    @endpoint("DELETE", "/api/v1/memory/entries/{entry_id}")
    def delete(self, entry_id: int) -> None:
        """Delete an entry with every version."""

    @endpoint("GET", "/api/v1/memory/entries/{entry_id}/versions", paged=True)
    def versions(self, entry_id: int, *, page_size: int | None = None) -> SyncPage[MemoryEntry]:
        """An entry's versions."""

    @endpoint("POST", "/api/v1/memory/long-term/search")
    def search(
        self,
        *,
        query: str,
        top_k: int | None = None,
        threshold: float | None = None,
        mode: str | None = None,
        fusion: str | None = None,
        weights: Mapping[str, float] | None = None,
        filters: Mapping[str, Any] | None = None,
        stages: Sequence[str] | None = None,
        max_hops: int | None = None,
    ) -> LongTermSearch:
        """Search long-term entries (graph mode unless ``mode`` or ``stages`` say otherwise),
        each hit with its relevance components."""


class Pools(Resource):
    """Shared memory pools: JSON data by dot path, with versions, grants and quotas."""

    @endpoint("GET", "/api/v1/memory/pools", paged=True)
    def list(
        self,
        *,
        pool_type: str | None = None,
        scope: str | None = None,
        workflow_run_id: str | None = None,
        page_size: int | None = None,
    ) -> SyncPage[Pool]:
        """Pools the caller may read."""

    @endpoint("POST", "/api/v1/memory/pools")
    def create(
        self,
        *,
        pool_id: str,
        name: str | None = None,
        pool_type: str | None = None,
        scope: str | None = None,
        data: Mapping[str, Any] | None = None,
        public_read: bool | None = None,
        retention_policy: Mapping[str, Any] | None = None,
        expires_at: str | None = None,
        persist_across_executions: bool | None = None,
        workflow_run_id: str | None = None,
        workflow_kind: str | None = None,
        change_policy: str | None = None,
    ) -> Pool:
        """Create a pool."""

    @endpoint("GET", "/api/v1/memory/pools/{pool_id}")
    def retrieve(self, pool_id: str) -> Pool:
        """A pool's settings."""

    @endpoint("PATCH", "/api/v1/memory/pools/{pool_id}")
    def update(
        self,
        pool_id: str,
        *,
        name: str | None = None,
        scope: str | None = None,
        public_read: bool | None = None,
        retention_policy: Mapping[str, Any] | None = None,
        expires_at: str | None = None,
        persist_across_executions: bool | None = None,
        change_policy: str | None = None,
    ) -> Pool:
        """Change a pool's settings (its owner only)."""

    @endpoint("DELETE", "/api/v1/memory/pools/{pool_id}")
    def delete(self, pool_id: str) -> None:
        """Delete a pool (its owner only)."""

    @endpoint("GET", "/api/v1/memory/pools/{pool_id}/stats")
    def stats(self, pool_id: str) -> PoolStats:
        """A pool's size, quota and activity."""

    @endpoint("GET", "/api/v1/memory/pools/{pool_id}/data")
    def read_all(self, pool_id: str) -> DataValue:
        """The pool's whole data."""

    @endpoint("PUT", "/api/v1/memory/pools/{pool_id}/data")
    def write_all(
        self, pool_id: str, *, value: Mapping[str, Any], expected_version: int | None = None
    ) -> DataWrite:
        """Replace the pool's whole data."""

    @endpoint("GET", "/api/v1/memory/pools/{pool_id}/data/{path}")
    def read(self, pool_id: str, path: str) -> DataValue:
        """The value at a dot path (``plan.steps``)."""

    @endpoint("PUT", "/api/v1/memory/pools/{pool_id}/data/{path}")
    def write(
        self, pool_id: str, path: str, *, value: Any, expected_version: int | None = None
    ) -> DataWrite:
        """Set the value at a dot path (409 ``version_conflict`` if ``expected_version`` is
        stale)."""

    @endpoint("PATCH", "/api/v1/memory/pools/{pool_id}/data/{path}")
    def merge(
        self,
        pool_id: str,
        path: str,
        *,
        value: Mapping[str, Any] | None = None,
        expected_version: int | None = None,
    ) -> DataWrite:
        """Merge an object into the object at a dot path."""

    @endpoint("DELETE", "/api/v1/memory/pools/{pool_id}/data/{path}")
    def remove(self, pool_id: str, path: str, *, expected_version: int | None = None) -> DataWrite:
        """Remove the value at a dot path."""


class Memories(Resource):
    """Memory in every tier (``working``, ``short_term``, ``long_term``, ``pools``) and the
    router across them (``search``, ``read``, ``write``, ``stats``)."""

    def __init__(self, client: Requester) -> None:
        super().__init__(client)
        self.working = WorkingMemory(client)
        self.short_term = ShortTermMemory(client)
        self.long_term = LongTermMemory(client)
        self.pools = Pools(client)

    @endpoint("POST", "/api/v1/memory/search")
    def search(
        self,
        *,
        query: str,
        tiers: Sequence[str] | None = None,
        top_k: int | None = None,
        threshold: float | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> MemorySearch:
        """Search every tier (or ``tiers``: ``working``, ``short_term``, ``long_term``,
        ``shared``)."""

    @endpoint("POST", "/api/v1/memory/read")
    def read(self, *, key: str, session_id: str | None = None, tier: str | None = None) -> Routed:
        """Read a key from the nearest tier that holds it (404 ``memory_key_not_found``)."""

    @endpoint("POST", "/api/v1/memory/write")
    def write(
        self,
        *,
        tier: str | None = None,
        key: str | None = None,
        value: Any = None,
        content: str | None = None,
        session_id: str | None = None,
        ttl: int | None = None,
        memory_type: str | None = None,
        context: int | None = None,
        context_id: int | None = None,
        entry_type: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
    ) -> Routed:
        """Write to a named tier (default ``long_term``): a ``key`` and ``value``, or
        ``content``."""

    @endpoint("GET", "/api/v1/memory/stats")
    def stats(self, *, session_id: str | None = None) -> MemoryStats:
        """Counts per tier."""


class Knowledge(Resource):
    """Knowledge items: keyed, versioned facts in knowledge stores, and their search."""

    @endpoint("GET", "/api/v1/knowledge/bases", paged=True)
    def bases(self, *, page_size: int | None = None) -> SyncPage[KnowledgeStore]:
        """The account's knowledge stores, newest first."""

    @endpoint("POST", "/api/v1/knowledge/bases")
    def create_base(
        self, *, name: str, knowledge_type: str | None = None, description: str | None = None
    ) -> KnowledgeStore:
        """Create a knowledge store."""

    @endpoint("PUT", "/api/v1/knowledge/{base}/items/{key}")
    def put(
        self,
        base: str,
        key: str,
        *,
        content: str,
        content_type: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        confidence: float | None = None,
        sources: Sequence[Mapping[str, Any]] | None = None,
    ) -> KnowledgeItem:
        """Write an item (a new version if it changed; the store is created on first use)."""

    @endpoint("GET", "/api/v1/knowledge/{base}/items/{key}")
    def get(self, base: str, key: str) -> KnowledgeItem:
        """An item's current version."""

    @endpoint("GET", "/api/v1/knowledge/{base}/items", paged=True)
    def list(self, base: str, *, page_size: int | None = None) -> SyncPage[KnowledgeItem]:
        """A store's items."""

    @endpoint("GET", "/api/v1/knowledge/{base}/items/{key}/versions", paged=True)
    def versions(
        self, base: str, key: str, *, page_size: int | None = None
    ) -> SyncPage[KnowledgeItem]:
        """An item's versions."""

    @endpoint("POST", "/api/v1/knowledge/query")
    def query(
        self,
        *,
        query: str,
        bases: Sequence[str] | None = None,
        knowledge_types: Sequence[str] | None = None,
        max_results: int | None = None,
    ) -> KnowledgeQuery:
        """Hybrid search of current, valid items."""

    @endpoint("POST", "/api/v1/knowledge/relationships")
    def relate(
        self,
        *,
        source: Mapping[str, Any],
        target: Mapping[str, Any],
        relationship_type: str,
        strength: float | None = None,
    ) -> KnowledgeRelationship:
        """Relate two items ``{"base", "key"}`` (an edge of the knowledge graph)."""

    @endpoint("GET", "/api/v1/knowledge/{base}/items/{key}/relationships")
    def relationships(self, base: str, key: str) -> KnowledgeItemRelationships:
        """An item's relationships."""


class Documents(Resource):
    """Documents of a knowledge base: upload, read, delete, reprocess."""

    @endpoint("GET", "/api/v1/rag/knowledge-bases/{kb_id}/documents", paged=True)
    def list(
        self, kb_id: int, *, status: str | None = None, page_size: int | None = None
    ) -> SyncPage[Document]:
        """A knowledge base's documents."""

    @endpoint("POST", "/api/v1/rag/knowledge-bases/{kb_id}/documents")
    def upload(
        self,
        kb_id: int,
        *,
        text: str | None = None,
        content_base64: str | None = None,
        filename: str | None = None,
        content_type: str | None = None,
        title: str | None = None,
        source: str | None = None,
        doc_type: str | None = None,
        tags: Sequence[str] | None = None,
        lifecycle_state: str | None = None,
        source_path: str | None = None,
        document_date: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Document:
        """Upload one document: its ``text``, or a file as ``content_base64`` with its
        ``filename`` (see ``upload_file``). It is chunked and embedded in the background:
        ``status`` becomes ``indexed`` (``retrieve`` to follow it)."""

    @endpoint("POST", "/api/v1/rag/knowledge-bases/{kb_id}/documents")
    def upload_many(
        self, kb_id: int, *, documents: Sequence[Mapping[str, Any]]
    ) -> builtins.list[Document]:
        """Upload several documents at once (each as ``upload`` takes them)."""

    def upload_file(
        self,
        kb_id: int,
        file: str | Path | bytes,
        *,
        filename: str | None = None,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Document:
        """Upload a file (a path, or its bytes with ``filename``): PDF, text, Markdown,
        HTML, ... as the server extracts them."""
        if isinstance(file, bytes):
            content, name = file, filename or "upload.txt"
        else:
            content, name = Path(file).read_bytes(), filename or Path(file).name
        encoded = base64.b64encode(content).decode("ascii")
        return self.upload(
            kb_id, content_base64=encoded, filename=name, title=title, tags=tags, metadata=metadata
        )

    @endpoint("GET", "/api/v1/rag/documents/{document_id}")
    def retrieve(self, document_id: int) -> Document:
        """A document, with its processing ``status`` and ``progress``."""

    @endpoint("DELETE", "/api/v1/rag/documents/{document_id}")
    def delete(self, document_id: int) -> None:
        """Delete a document with its chunks."""

    @endpoint("POST", "/api/v1/rag/documents/{document_id}/reprocess")
    def reprocess(self, document_id: int, *, force: bool | None = None) -> Document:
        """Queue a document's processing again."""


class KnowledgeBases(Resource):
    """Knowledge bases of documents (RAG), their documents, and search over them."""

    def __init__(self, client: Requester) -> None:
        super().__init__(client)
        self.documents = Documents(client)

    @endpoint("GET", "/api/v1/rag/knowledge-bases", paged=True)
    def list(self, *, page_size: int | None = None) -> SyncPage[KnowledgeBase]:
        """The account's knowledge bases."""

    @endpoint("POST", "/api/v1/rag/knowledge-bases")
    def create(
        self,
        *,
        name: str,
        description: str | None = None,
        chunking_strategy: str | None = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
    ) -> KnowledgeBase:
        """Create a knowledge base (409 ``name_taken``)."""

    @endpoint("GET", "/api/v1/rag/knowledge-bases/{kb_id}")
    def retrieve(self, kb_id: int) -> KnowledgeBase:
        """A knowledge base."""

    @endpoint("PATCH", "/api/v1/rag/knowledge-bases/{kb_id}")
    def update(
        self,
        kb_id: int,
        *,
        name: str | None = None,
        description: str | None = None,
        chunking_strategy: str | None = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
    ) -> KnowledgeBase:
        """Change a knowledge base."""

    @endpoint("DELETE", "/api/v1/rag/knowledge-bases/{kb_id}")
    def delete(self, kb_id: int) -> None:
        """Delete a knowledge base with its documents."""

    @endpoint("POST", "/api/v1/rag/knowledge-bases/{kb_id}/status")
    def set_status(self, kb_id: int, *, status: str, message: str | None = None) -> KnowledgeBase:
        """Move a knowledge base through its lifecycle (``active``, ``paused``, ...)."""

    @endpoint("POST", "/api/v1/rag/search")
    def search(
        self,
        *,
        query: str,
        knowledge_base_ids: Sequence[int] | None = None,
        top_k: int | None = None,
        mode: str | None = None,
        fusion: str | None = None,
        weights: Mapping[str, float] | None = None,
        stages: Sequence[str] | None = None,
        max_hops: int | None = None,
        threshold: float | None = None,
        filters: Mapping[str, Any] | None = None,
        rerank: bool | None = None,
    ) -> Search:
        """Search the chunks of documents (hybrid by default), each hit explained."""

    @endpoint("POST", "/api/v1/rag/query")
    def query(
        self,
        *,
        query: str,
        knowledge_base_ids: Sequence[int] | None = None,
        top_k: int | None = None,
        mode: str | None = None,
        fusion: str | None = None,
        weights: Mapping[str, float] | None = None,
        stages: Sequence[str] | None = None,
        max_hops: int | None = None,
        threshold: float | None = None,
        filters: Mapping[str, Any] | None = None,
        rerank: bool | None = None,
        token_budget: int | None = None,
    ) -> Query:
        """A search plus a context block for a prompt, with its sources."""


class Pages(Resource):
    """Pages (wiki-style, with [[links]]), their search and link panels."""

    @endpoint("GET", "/api/v1/content/pages", paged=True)
    def list(self, *, status: str | None = None) -> SyncPage[PageSummary]:
        """The account's pages, newest first."""

    @endpoint("GET", "/api/v1/content/pages")
    def search(self, *, query: str, top_k: int | None = None, mode: str | None = None) -> PageHits:
        """The pages best matching ``query`` by title, aliases and the start of their text."""

    @endpoint("POST", "/api/v1/content/pages")
    def create(
        self,
        *,
        title: str,
        content: str | None = None,
        aliases: Sequence[str] | None = None,
        status: str | None = None,
    ) -> Page:
        """Create a page."""

    @endpoint("GET", "/api/v1/content/pages/{page_id}")
    def retrieve(self, page_id: int) -> Page:
        """A page."""

    @endpoint("PATCH", "/api/v1/content/pages/{page_id}")
    def update(
        self,
        page_id: int,
        *,
        title: str | None = None,
        content: str | None = None,
        aliases: Sequence[str] | None = None,
        status: str | None = None,
    ) -> Page:
        """Change a page (a new title does not rewrite links: ``rename`` does)."""

    @endpoint("DELETE", "/api/v1/content/pages/{page_id}")
    def delete(self, page_id: int) -> None:
        """Delete a page with its graph node."""

    @endpoint("POST", "/api/v1/content/pages/{page_id}/rename")
    def rename(self, page_id: int, *, title: str, rewrite_links: bool | None = None) -> Rename:
        """Rename a page, rewriting the links to it."""

    @endpoint("GET", "/api/v1/content/pages/{page_id}/backlinks", paged=True)
    def backlinks(self, page_id: int, *, page_size: int | None = None) -> SyncPage[Backlink]:
        """The pages linking to this one."""

    @endpoint("GET", "/api/v1/content/pages/{page_id}/related")
    def related(self, page_id: int, *, limit: int | None = None) -> Related:
        """Pages related by meaning and links."""

    @endpoint("GET", "/api/v1/content/pages/{page_id}/broken-links")
    def broken_links(self, page_id: int) -> BrokenLinks:
        """Links to pages that do not exist."""

    @endpoint("GET", "/api/v1/content/pages/{page_id}/unlinked-mentions")
    def unlinked_mentions(self, page_id: int) -> Mentions:
        """Pages naming this one without linking to it."""

    @endpoint("POST", "/api/v1/content/pages/{page_id}/extract-links")
    def extract_links(self, page_id: int) -> LinkReport:
        """Re-extract a page's links now."""


class Skills(Resource):
    """Skills: procedures agents share, their discovery, context and usage."""

    @endpoint("GET", "/api/v1/skills", paged=True)
    def list(
        self,
        *,
        category: str | None = None,
        status: str | None = None,
        page_size: int | None = None,
    ) -> SyncPage[Skill]:
        """Skills, newest first."""

    @endpoint("POST", "/api/v1/skills")
    def create(
        self,
        *,
        name: str,
        category: str,
        description: str | None = None,
        procedure: str | None = None,
        tags: Sequence[str] | None = None,
        execution_context: Mapping[str, Any] | None = None,
        dependencies: Sequence[Mapping[str, Any]] | None = None,
        status: str | None = None,
        version: str | None = None,
    ) -> SkillDetail:
        """Create a skill (an agent's is a draft)."""

    @endpoint("GET", "/api/v1/skills/{skill_id}")
    def retrieve(self, skill_id: int) -> SkillDetail:
        """A skill with its dependencies and active versions."""

    @endpoint("PATCH", "/api/v1/skills/{skill_id}")
    def update(
        self,
        skill_id: int,
        *,
        name: str | None = None,
        category: str | None = None,
        description: str | None = None,
        status: str | None = None,
        execution_context: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        dependencies: Sequence[Mapping[str, Any]] | None = None,
    ) -> SkillUpdate:
        """Change a skill (``pending_version`` when a change waits for review)."""

    @endpoint("POST", "/api/v1/skills/discover")
    def discover(
        self,
        *,
        description: str,
        top_k: int | None = None,
        mode: str | None = None,
        fusion: str | None = None,
        category: str | None = None,
        statuses: Sequence[str] | None = None,
    ) -> SkillDiscover:
        """Skills for a task's description."""

    @endpoint("GET", "/api/v1/skills/{skill_id}/context")
    def context(self, skill_id: int, *, routing_key: str | None = None) -> SkillContext:
        """The routed active version, dependencies, dependents, documents and pages."""

    @endpoint("POST", "/api/v1/skills/usage")
    def record_usage(
        self,
        *,
        skill_id: int | None = None,
        success: bool | None = None,
        version_id: int | None = None,
        agent_id: int | None = None,
        task_type: str | None = None,
        duration_ms: int | None = None,
        occurred_at: str | None = None,
        records: Sequence[Mapping[str, Any]] | None = None,
    ) -> UsageRecord:
        """Record one use of a skill, or ``records`` (1 to 1,000)."""


class GraphNodes(Resource):
    """Nodes of the knowledge graph."""

    @endpoint("GET", "/api/v1/graph/nodes", paged=True)
    def list(
        self, *, entity_type: str | None = None, page_size: int | None = None
    ) -> SyncPage[GraphNode]:
        """Nodes, newest first."""

    @endpoint("GET", "/api/v1/graph/nodes")
    def search(
        self,
        *,
        query: str,
        top_k: int | None = None,
        mode: str | None = None,
        fusion: str | None = None,
        entity_type: str | None = None,
        max_hops: int | None = None,
    ) -> NodeSearch:
        """Hybrid search over nodes' names, aliases and descriptions."""

    @endpoint("POST", "/api/v1/graph/nodes")
    def create(
        self,
        *,
        name: str,
        entity_type: str,
        node_type: str | None = None,
        aliases: Sequence[str] | None = None,
        description: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        mention_count: int | None = None,
        status: str | None = None,
        confidence: float | None = None,
    ) -> GraphNode:
        """Create a node (409 ``node_exists``)."""

    @endpoint("GET", "/api/v1/graph/nodes/{node_id}")
    def retrieve(self, node_id: int) -> NodeDetail:
        """A node with its ``edges_out`` and ``edges_in``."""

    @endpoint("PATCH", "/api/v1/graph/nodes/{node_id}")
    def update(
        self,
        node_id: int,
        *,
        name: str | None = None,
        entity_type: str | None = None,
        node_type: str | None = None,
        aliases: Sequence[str] | None = None,
        description: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        mention_count: int | None = None,
        status: str | None = None,
        confidence: float | None = None,
    ) -> NodeDetail:
        """Change a node."""

    @endpoint("DELETE", "/api/v1/graph/nodes/{node_id}")
    def delete(self, node_id: int) -> None:
        """Delete a node with its edges."""

    @endpoint("GET", "/api/v1/graph/nodes/{node_id}/neighbors")
    def neighbors(
        self,
        node_id: int,
        *,
        hops: int | None = None,
        relation_type: str | None = None,
        direction: str | None = None,
        limit: int | None = None,
    ) -> Neighbours:
        """Nodes within ``hops`` (1 to 5), nearest first."""


class GraphEdges(Resource):
    """Edges of the knowledge graph."""

    @endpoint("POST", "/api/v1/graph/edges")
    def create(
        self,
        *,
        source_id: int,
        target_id: int,
        relation_type: str,
        weight: float | None = None,
        confidence: float | None = None,
        bidirectional: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> GraphEdge:
        """A typed edge (409 ``edge_exists``)."""

    @endpoint("DELETE", "/api/v1/graph/edges/{edge_id}")
    def delete(self, edge_id: int) -> None:
        """Delete an edge."""


class Graph(Resource):
    """The knowledge graph: nodes, edges, paths, and graph RAG over documents."""

    def __init__(self, client: Requester) -> None:
        super().__init__(client)
        self.nodes = GraphNodes(client)
        self.edges = GraphEdges(client)

    @endpoint("GET", "/api/v1/graph/path")
    def path(self, *, from_: int, to: int, direction: str | None = None) -> GraphPath:
        """A shortest path (at most 6 hops) between two nodes (404 ``no_path``)."""

    @endpoint("POST", "/api/v1/rag/graph/retrieve")
    def retrieve(
        self,
        *,
        query: str,
        top_k: int | None = None,
        max_hops: int | None = None,
        include_summaries: bool | None = None,
        knowledge_base_ids: Sequence[int] | None = None,
    ) -> JSON:
        """Graph RAG: the chunks the graph reaches from the query, with their communities."""

    @endpoint("POST", "/api/v1/rag/graph/context")
    def context(
        self, *, query: str, token_budget: int | None = None, max_hops: int | None = None
    ) -> GraphContext:
        """A context of community summaries and passages within ``token_budget``."""
