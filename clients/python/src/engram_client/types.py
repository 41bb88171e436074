"""The API's objects as TypedDicts, generated from the OpenAPI schema by
scripts/generate.py: do not edit by hand. Fields the schema marks required are
required keys; the others may be absent."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

__all__ = [
    "Access",
    "Account",
    "Agent",
    "Backlink",
    "BrokenLink",
    "BrokenLinks",
    "ChainLink",
    "CommunityRef",
    "Components",
    "Context",
    "ContextDocument",
    "ContextItem",
    "ContextPage",
    "ContextSection",
    "Conversation",
    "ConversationDetail",
    "DataValue",
    "DataWrite",
    "Document",
    "Dropped",
    "Entry",
    "ErrorBody",
    "ExpansionTerm",
    "Extraction",
    "ExtractionRun",
    "GraphContext",
    "GraphContextDropped",
    "GraphContextItem",
    "GraphContextSection",
    "GraphEdge",
    "GraphHitExplanation",
    "GraphNode",
    "GraphNodeRef",
    "GraphPathStep",
    "GraphStage",
    "Hit",
    "HitExplanation",
    "IndexedEntry",
    "Indexing",
    "KnowledgeBase",
    "KnowledgeHit",
    "KnowledgeItem",
    "KnowledgeItemRef",
    "KnowledgeItemRelationships",
    "KnowledgeQuery",
    "KnowledgeRelationship",
    "KnowledgeSource",
    "KnowledgeStore",
    "LinkReport",
    "LinkedItem",
    "LongTermHit",
    "LongTermSearch",
    "Me",
    "MemoryContext",
    "MemoryContextAccess",
    "MemoryEntry",
    "MemoryEntryBatch",
    "MemoryHit",
    "MemoryHitExplanation",
    "MemorySearch",
    "MemoryStats",
    "Mentions",
    "Message",
    "MessageInput",
    "MessageList",
    "Neighbour",
    "Neighbours",
    "NodeDetail",
    "NodeExplanation",
    "NodeHit",
    "NodeSearch",
    "Page",
    "PageExplanation",
    "PageHit",
    "PageHits",
    "PageSummary",
    "Path",
    "Pool",
    "PoolStats",
    "PoolStatsApiOutputSerializerGrantCounts",
    "Query",
    "QuerySource",
    "Related",
    "RelatedItem",
    "Rename",
    "RetentionPolicy",
    "Retrieval",
    "Rewritten",
    "Routed",
    "Search",
    "Seed",
    "ShortTerm",
    "ShortTermBatch",
    "ShortTermBatchItem",
    "Skill",
    "SkillContext",
    "SkillDependency",
    "SkillDetail",
    "SkillDiscover",
    "SkillExplanation",
    "SkillHit",
    "SkillSummary",
    "SkillUpdate",
    "SkillUsage",
    "SkillVersion",
    "StageExplanation",
    "Summary",
    "UsageRecord",
    "WorkingExists",
    "WorkingSession",
    "WorkingSessionClear",
]


class Me(TypedDict):
    """``MeOutput`` in the OpenAPI schema."""

    id: int
    name: str
    description: str
    status: str
    metadata: Any
    created_at: str
    account: Account
    key: dict[str, Any]


class Agent(TypedDict):
    """``AgentOutput`` in the OpenAPI schema."""

    id: int
    name: str
    description: str
    status: str
    metadata: Any
    created_at: str
    account: Account


class _ConversationRequired(TypedDict):
    id: int
    agent_id: int
    context_id: int
    summary: str
    message_count: int
    summarized_through: int
    extracted_through: int
    last_message_at: str | None
    created_at: str
    updated_at: str


class Conversation(_ConversationRequired, total=False):
    """``ConversationOutput`` in the OpenAPI schema."""

    user_id: str
    title: str
    metadata: Any
    summary_every: int


class _ConversationDetailRequired(TypedDict):
    id: int
    agent_id: int
    context_id: int
    summary: str
    message_count: int
    summarized_through: int
    extracted_through: int
    last_message_at: str | None
    created_at: str
    updated_at: str
    indexing: Indexing


class ConversationDetail(_ConversationDetailRequired, total=False):
    """``ConversationDetailOutput`` in the OpenAPI schema."""

    user_id: str
    title: str
    metadata: Any
    summary_every: int


class _MessageRequired(TypedDict):
    id: int
    conversation_id: int
    turn_number: int
    name: str
    version: int
    created_at: str


class Message(_MessageRequired, total=False):
    """``MessageOutput`` in the OpenAPI schema."""

    role: Literal["user", "assistant", "system", "tool"]
    content: str
    occurred_at: str | None
    metadata: Any


class MessageList(TypedDict):
    """``MessageListOutput`` in the OpenAPI schema."""

    results: list[Message]


class _SummaryRequired(TypedDict):
    id: int
    summary: str
    key_points: list[str]
    start_turn: int
    end_turn: int
    method: str
    created_at: str


class Summary(_SummaryRequired, total=False):
    """``SummaryOutput`` in the OpenAPI schema."""

    occurred_at: str | None


class ExtractionRun(TypedDict):
    """``ExtractionRunOutput`` in the OpenAPI schema."""

    from_turn: int
    to_turn: int
    method: str
    counts: dict[str, int]
    results: list[Extraction]


class _ExtractionRequired(TypedDict):
    id: int
    conversation_id: int
    kind: Literal["fact", "entity", "relation"]
    decision: Literal["add", "update", "invalidate", "none"]
    method: str
    message_ids: list[int]
    turns: list[int]
    knowledge_item_id: int | None
    graph_node_id: int | None
    graph_edge_id: int | None
    created_at: str


class Extraction(_ExtractionRequired, total=False):
    """``ExtractionOutput`` in the OpenAPI schema."""

    fact: str
    key: str
    confidence: float
    error: str


class Context(TypedDict):
    """``ContextOutput`` in the OpenAPI schema."""

    context: str
    task_type: Literal["conversation", "problem_solving", "learning", "analysis"]
    task_type_source: str
    tokens: int
    token_budget: int
    tokenizer: str
    sections: list[ContextSection]
    dropped: Dropped
    timings_ms: dict[str, float | None]


class MemorySearch(TypedDict):
    """``MemorySearchOutput`` in the OpenAPI schema."""

    tiers: dict[str, str]
    results: list[MemoryHit]
    timings_ms: dict[str, float | None]


class Routed(TypedDict):
    """``RoutedOutput`` in the OpenAPI schema."""

    tiers: dict[str, str]
    tier: str
    key: str
    value: Any
    session_id: str
    entry_id: int | None
    context_id: int | None
    version: int | None


class MemoryStats(TypedDict):
    """``MemoryStatsOutput`` in the OpenAPI schema."""

    working: dict[str, Any]
    short_term: dict[str, Any]
    long_term: dict[str, Any]
    shared: dict[str, Any]


class Entry(TypedDict):
    """``EntryOutput`` in the OpenAPI schema."""

    session_id: str
    kind: Literal["value", "task_state", "step", "conversation", "tool_state", "scratch_pad"]
    key: str
    value: Any
    ttl: int | None
    expires_at: str | None


class WorkingSession(TypedDict):
    """``WorkingSessionOutput`` in the OpenAPI schema."""

    session_id: str
    count: int
    limit: int
    keys: list[IndexedEntry]


class WorkingSessionClear(TypedDict):
    """``WorkingSessionClearOutput`` in the OpenAPI schema."""

    session_id: str
    removed: int


class WorkingExists(TypedDict):
    """``WorkingExistsOutput`` in the OpenAPI schema."""

    session_id: str
    key: str
    exists: bool


class _ShortTermRequired(TypedDict):
    session_id: str
    key: str
    value: Any
    ttl: int
    expires_at: str
    access_count: int
    last_accessed_at: str | None
    created_at: str
    updated_at: str


class ShortTerm(_ShortTermRequired, total=False):
    """``ShortTermOutput`` in the OpenAPI schema."""

    memory_type: Literal["task_context", "conversation", "tool_result", "reflection", "observation"]


class ShortTermBatch(TypedDict):
    """``ShortTermBatchOutput`` in the OpenAPI schema."""

    session_id: str
    created: int
    replaced: int
    items: list[ShortTermBatchItem]


class _PoolRequired(TypedDict):
    pool_id: str
    owner_agent_id: int | None
    version: int
    data_size_bytes: int
    quota_bytes: int
    retention_policy: RetentionPolicy
    access: Access
    created_at: str
    updated_at: str


class Pool(_PoolRequired, total=False):
    """``PoolOutput`` in the OpenAPI schema."""

    name: str
    pool_type: Literal["shared", "agent_private", "team_shared", "task_scoped", "global"]
    scope: Literal["execution", "session", "persistent"]
    public_read: bool
    expires_at: str | None
    persist_across_executions: bool
    workflow_run_id: str
    workflow_kind: Literal["shared_memory", "tool_cache", "blackboard"]
    change_policy: Literal["auto", "review"]


class PoolStats(TypedDict):
    """``PoolStatsOutput`` in the OpenAPI schema."""

    pool_id: str
    version: int
    size_bytes: int
    quota_bytes: int
    usage: float
    top_level_keys: int
    bulletin_keys: int
    grants: PoolStatsApiOutputSerializerGrantCounts
    events: int
    last_event_at: str | None
    created_at: str
    updated_at: str
    expires_at: str | None


class DataValue(TypedDict):
    """``DataValueOutput`` in the OpenAPI schema."""

    pool_id: str
    path: str
    value: Any
    version: int


class DataWrite(TypedDict):
    """``DataWriteOutput`` in the OpenAPI schema."""

    pool_id: str
    path: str
    value: Any
    version: int
    changed: bool
    size_bytes: int


class _MemoryContextRequired(TypedDict):
    id: int
    name: str
    owner_agent_id: int | None
    team_id: int | None
    entry_count: int
    archived_at: str | None
    access: MemoryContextAccess
    created_at: str
    updated_at: str


class MemoryContext(_MemoryContextRequired, total=False):
    """``MemoryContextOutput`` in the OpenAPI schema."""

    context_type: Literal[
        "agent_memory",
        "knowledge_base",
        "shared_context",
        "tool_cache",
        "project_context",
        "conversation",
    ]
    scope: Literal["agent", "account", "team", "global"]
    description: str
    metadata: Any
    change_policy: Literal["auto", "review"]
    agent_write_policy: Literal["auto", "review"]


class _MemoryEntryRequired(TypedDict):
    id: int
    context_id: int
    lineage: str
    version: int
    is_current: bool
    previous_id: int | None
    data: Any
    importance: float
    confidence: float
    embedding_model: str
    access_count: int
    last_accessed_at: str | None
    archived_at: str | None
    author_agent_id: int | None
    created_at: str


class MemoryEntry(_MemoryEntryRequired, total=False):
    """``MemoryEntryOutput`` in the OpenAPI schema."""

    entry_type: Literal[
        "fact",
        "observation",
        "reflection",
        "decision",
        "plan",
        "tool_output",
        "conversation_summary",
    ]
    source: Literal["agent", "user", "system", "tool", "workflow"]
    memory_type: Literal["factual", "experiential", "working"]
    content: str
    tags: list[str]
    metadata: Any
    occurred_at: str | None
    thread: str
    position: int | None
    speaker: str


class MemoryEntryBatch(TypedDict):
    """``MemoryEntryBatchOutput`` in the OpenAPI schema."""

    entries: list[MemoryEntry]


class LongTermSearch(TypedDict):
    """``LongTermSearchOutput`` in the OpenAPI schema."""

    results: list[LongTermHit]
    timings_ms: dict[str, float | None]


class _KnowledgeStoreRequired(TypedDict):
    id: int
    name: str
    item_count: int
    created_at: str


class KnowledgeStore(_KnowledgeStoreRequired, total=False):
    """``KnowledgeStoreOutput`` in the OpenAPI schema."""

    description: str
    knowledge_type: Literal[
        "factual", "procedural", "conceptual", "contextual", "experiential", "learned_patterns"
    ]


class _KnowledgeItemRequired(TypedDict):
    id: int
    base: str
    key: str
    lineage: str
    version: int
    is_current: bool
    previous_id: int | None
    content: str
    confidence: float
    valid_to: str | None
    sources: list[KnowledgeSource]
    graph_node_id: int | None
    embedding_model: str
    author_agent_id: int | None
    source_context_id: int | None
    created_at: str


class KnowledgeItem(_KnowledgeItemRequired, total=False):
    """``KnowledgeItemOutput`` in the OpenAPI schema."""

    content_type: str
    metadata: Any
    valid_from: str


class KnowledgeQuery(TypedDict):
    """``KnowledgeQueryOutput`` in the OpenAPI schema."""

    results: list[KnowledgeHit]
    bases: list[str]
    timings_ms: dict[str, float | None]


class KnowledgeRelationship(TypedDict):
    """``KnowledgeRelationshipOutput`` in the OpenAPI schema."""

    id: int
    relationship_type: str
    strength: float
    direction: Literal["outgoing", "incoming"]
    source: KnowledgeItemRef
    target: KnowledgeItemRef
    graph_edge_id: int
    created_at: str


class KnowledgeItemRelationships(TypedDict):
    """``KnowledgeItemRelationshipsOutput`` in the OpenAPI schema."""

    results: list[KnowledgeRelationship]


class _KnowledgeBaseRequired(TypedDict):
    id: int
    name: str
    embedding_model: str
    chunk_count: int
    created_at: str
    updated_at: str


class KnowledgeBase(_KnowledgeBaseRequired, total=False):
    """``KnowledgeBaseOutput`` in the OpenAPI schema."""

    description: str
    embedding_provider: str
    chunking_strategy: Literal["recursive", "markdown", "semantic", "code"]
    chunk_size: int
    chunk_overlap: int
    status: Literal["active", "indexing", "paused", "error", "archived"]
    status_message: str


class _DocumentRequired(TypedDict):
    id: int
    knowledge_base_id: int
    content_type: str
    checksum: str
    chunks_total: int
    chunks_embedded: int
    progress: float
    token_count: int
    indexed_model: str
    indexed_at: str | None
    graph_indexed_at: str | None
    created_at: str
    updated_at: str


class Document(_DocumentRequired, total=False):
    """``DocumentOutput`` in the OpenAPI schema."""

    title: str
    source: str
    size_bytes: int
    doc_type: str
    tags: list[str]
    lifecycle_state: str
    source_path: str
    document_date: str | None
    metadata: Any
    status: Literal["pending", "processing", "indexed", "failed"]
    error: str


class Search(TypedDict):
    """``SearchOutput`` in the OpenAPI schema."""

    mode: str
    fusion: str
    results: list[Hit]
    graph: GraphStage | None
    timings_ms: dict[str, float | None]
    expansion: list[ExpansionTerm]


class Query(TypedDict):
    """``QueryOutput`` in the OpenAPI schema."""

    context: str
    sources: list[QuerySource]
    token_count: int
    truncated: bool
    results: list[Hit]
    timings_ms: dict[str, float | None]


class _PageRequired(TypedDict):
    id: int
    title: str
    slug: str
    author_id: int | None
    author_agent_id: int | None
    node_id: int | None
    embedding_model: str
    created_at: str
    updated_at: str


class Page(_PageRequired, total=False):
    """``PageOutput`` in the OpenAPI schema."""

    content: str
    aliases: list[str]
    status: Literal["draft", "published"]


class _PageSummaryRequired(TypedDict):
    id: int
    title: str
    slug: str
    excerpt: str
    created_at: str
    updated_at: str


class PageSummary(_PageSummaryRequired, total=False):
    """``PageSummaryOutput`` in the OpenAPI schema."""

    aliases: list[str]
    status: Literal["draft", "published"]


class PageHits(TypedDict):
    """``PageHitsOutput`` in the OpenAPI schema."""

    mode: str
    results: list[PageHit]


class Backlink(TypedDict):
    """``BacklinkOutput`` in the OpenAPI schema."""

    id: int | None
    title: str
    slug: str
    type: (
        Literal[
            "page",
            "article",
        ]
        | None
    )
    excerpt: str
    link_text: str | None


class Related(TypedDict):
    """``RelatedOutput`` in the OpenAPI schema."""

    results: list[RelatedItem]
    timings_ms: dict[str, float | None]


class BrokenLinks(TypedDict):
    """``BrokenLinksOutput`` in the OpenAPI schema."""

    results: list[BrokenLink]


class Mentions(TypedDict):
    """``MentionsOutput`` in the OpenAPI schema."""

    results: list[LinkedItem]


class Rename(TypedDict):
    """``RenameOutput`` in the OpenAPI schema."""

    page: Page
    old_title: str
    new_title: str
    links_rewritten: int
    rewritten: list[Rewritten]


class LinkReport(TypedDict):
    """``LinkReportOutput`` in the OpenAPI schema."""

    links: int
    resolved: int
    created: int
    removed: int
    updated: int
    broken: list[str]


class _SkillRequired(TypedDict):
    id: int
    name: str
    slug: str
    category: Literal[
        "code_generation",
        "code_review",
        "testing",
        "debugging",
        "deployment",
        "documentation",
        "analysis",
        "communication",
        "planning",
        "research",
        "data_processing",
        "security",
        "monitoring",
        "optimization",
        "integration",
        "automation",
        "design",
        "architecture",
        "project_management",
        "devops",
        "operations",
        "general",
    ]
    effectiveness_score: float
    health_score: float
    usage_count: int
    success_count: int
    last_used_at: str | None
    graph_node_id: int | None
    embedding_model: str
    created_at: str
    updated_at: str


class Skill(_SkillRequired, total=False):
    """``SkillOutput`` in the OpenAPI schema."""

    description: str
    status: Literal["draft", "active", "deprecated", "archived"]
    execution_context: Any
    procedure: str
    tags: list[str]


class _SkillDetailRequired(TypedDict):
    id: int
    name: str
    slug: str
    category: Literal[
        "code_generation",
        "code_review",
        "testing",
        "debugging",
        "deployment",
        "documentation",
        "analysis",
        "communication",
        "planning",
        "research",
        "data_processing",
        "security",
        "monitoring",
        "optimization",
        "integration",
        "automation",
        "design",
        "architecture",
        "project_management",
        "devops",
        "operations",
        "general",
    ]
    effectiveness_score: float
    health_score: float
    usage_count: int
    success_count: int
    last_used_at: str | None
    graph_node_id: int | None
    embedding_model: str
    created_at: str
    updated_at: str
    dependencies: list[SkillDependency]
    active_versions: list[SkillVersion]


class SkillDetail(_SkillDetailRequired, total=False):
    """``SkillDetailOutput`` in the OpenAPI schema."""

    description: str
    status: Literal["draft", "active", "deprecated", "archived"]
    execution_context: Any
    procedure: str
    tags: list[str]


class _SkillUpdateRequired(TypedDict):
    id: int
    name: str
    slug: str
    category: Literal[
        "code_generation",
        "code_review",
        "testing",
        "debugging",
        "deployment",
        "documentation",
        "analysis",
        "communication",
        "planning",
        "research",
        "data_processing",
        "security",
        "monitoring",
        "optimization",
        "integration",
        "automation",
        "design",
        "architecture",
        "project_management",
        "devops",
        "operations",
        "general",
    ]
    effectiveness_score: float
    health_score: float
    usage_count: int
    success_count: int
    last_used_at: str | None
    graph_node_id: int | None
    embedding_model: str
    created_at: str
    updated_at: str
    dependencies: list[SkillDependency]
    active_versions: list[SkillVersion]
    pending_version: SkillVersion | None


class SkillUpdate(_SkillUpdateRequired, total=False):
    """``SkillUpdateOutput`` in the OpenAPI schema."""

    description: str
    status: Literal["draft", "active", "deprecated", "archived"]
    execution_context: Any
    procedure: str
    tags: list[str]


class SkillDiscover(TypedDict):
    """``SkillDiscoverOutput`` in the OpenAPI schema."""

    mode: Literal["vector", "keyword", "hybrid", "prf"]
    results: list[SkillHit]
    timings_ms: dict[str, float | None]


class SkillContext(TypedDict):
    """``SkillContextOutput`` in the OpenAPI schema."""

    skill: Skill
    version: SkillVersion | None
    variants: list[SkillVersion]
    dependencies: list[SkillDependency]
    chain: list[ChainLink]
    dependents: list[SkillSummary]
    documents: list[ContextDocument]
    pages: list[ContextPage]


class UsageRecord(TypedDict):
    """``UsageRecordOutput`` in the OpenAPI schema."""

    count: int
    records: list[SkillUsage]


class _GraphNodeRequired(TypedDict):
    id: int
    entity_type: str
    name: str
    confidence: float
    embedding_model: str
    created_at: str
    updated_at: str


class GraphNode(_GraphNodeRequired, total=False):
    """``GraphNodeOutput`` in the OpenAPI schema."""

    node_type: Literal["entity", "concept", "event", "document", "memory", "skill"]
    aliases: list[str]
    description: str
    metadata: Any
    mention_count: int
    status: Literal["active", "archived"]


class _NodeDetailRequired(TypedDict):
    id: int
    entity_type: str
    name: str
    confidence: float
    embedding_model: str
    created_at: str
    updated_at: str
    edges_out: list[GraphEdge]
    edges_in: list[GraphEdge]


class NodeDetail(_NodeDetailRequired, total=False):
    """``NodeDetailOutput`` in the OpenAPI schema."""

    node_type: Literal["entity", "concept", "event", "document", "memory", "skill"]
    aliases: list[str]
    description: str
    metadata: Any
    mention_count: int
    status: Literal["active", "archived"]


class NodeSearch(TypedDict):
    """``NodeSearchOutput`` in the OpenAPI schema."""

    mode: Literal["vector", "keyword", "hybrid", "prf", "graph"]
    results: list[NodeHit]
    communities: list[CommunityRef]
    timings_ms: dict[str, float | None]


class _GraphEdgeRequired(TypedDict):
    id: int
    source_id: int
    target_id: int
    relation_type: str
    weight: float
    confidence: float
    created_at: str


class GraphEdge(_GraphEdgeRequired, total=False):
    """``GraphEdgeOutput`` in the OpenAPI schema."""

    bidirectional: bool
    metadata: Any


class Neighbours(TypedDict):
    """``NeighboursOutput`` in the OpenAPI schema."""

    results: list[Neighbour]
    truncated: bool


class Path(TypedDict):
    """``PathOutput`` in the OpenAPI schema."""

    hops: int
    nodes: list[GraphNode]
    edges: list[GraphEdge]


class GraphContext(TypedDict):
    """``GraphContextOutput`` in the OpenAPI schema."""

    context: str
    tokens: int
    token_budget: int
    tokenizer: str
    sections: list[GraphContextSection]
    dropped: GraphContextDropped
    seeds: list[Seed]
    timings_ms: dict[str, float | None]


class _MessageInputRequired(TypedDict):
    role: Literal["user", "assistant", "system", "tool"]
    content: str


class MessageInput(_MessageInputRequired, total=False):
    """``MessageInputRequest`` in the OpenAPI schema."""

    name: str
    occurred_at: str | None
    metadata: dict[str, Any]


class ErrorBody(TypedDict):
    """``ErrorBody`` in the OpenAPI schema."""

    code: str
    message: str
    details: dict[str, Any]


class Account(TypedDict):
    """``AccountOutput`` in the OpenAPI schema."""

    id: int
    name: str
    slug: str


class Indexing(TypedDict):
    """``IndexingOutput`` in the OpenAPI schema."""

    waiting: int
    unsearchable: int
    failed: int
    error: str


class ContextSection(TypedDict):
    """``ContextSectionOutput`` in the OpenAPI schema."""

    name: str
    tokens: int
    items: list[ContextItem]


class Dropped(TypedDict):
    """``DroppedOutput`` in the OpenAPI schema."""

    candidates: int
    tokens: int


class MemoryHit(TypedDict):
    """``MemoryHitOutput`` in the OpenAPI schema."""

    id: str
    tier: Literal["working", "short_term", "long_term", "shared"]
    score: float
    relevance: float
    components: dict[str, float]
    content: Any
    key: str
    path: str
    session_id: str
    context_id: int | None
    pool_id: str
    details: dict[str, Any]
    explanation: MemoryHitExplanation


class IndexedEntry(TypedDict):
    """``IndexedEntryOutput`` in the OpenAPI schema."""

    key: str
    kind: Literal["value", "task_state", "step", "conversation", "tool_state", "scratch_pad"]
    ttl: int | None
    expires_at: str | None


class ShortTermBatchItem(TypedDict):
    """``ShortTermBatchItemOutput`` in the OpenAPI schema."""

    key: str
    created: bool
    expires_at: str


class RetentionPolicy(TypedDict, total=False):
    """``RetentionPolicy`` in the OpenAPI schema."""

    ttl_seconds: int
    max_size_bytes: int


class Access(TypedDict):
    """``AccessOutput`` in the OpenAPI schema."""

    read: bool
    write: bool
    owner: bool


class PoolStatsApiOutputSerializerGrantCounts(TypedDict):
    """``PoolStatsApi.OutputSerializerGrantCounts`` in the OpenAPI schema."""

    read: int
    write: int


class MemoryContextAccess(TypedDict):
    """``MemoryContextAccessOutput`` in the OpenAPI schema."""

    read: bool
    write: bool


class LongTermHit(TypedDict):
    """``LongTermHitOutput`` in the OpenAPI schema."""

    id: int
    context_id: int
    content: str
    data: Any
    entry_type: str
    version: int
    occurred_at: str | None
    score: float
    components: Components
    retrieval: Retrieval


class _KnowledgeSourceRequired(TypedDict):
    source_type: Literal["conversation_message", "document_chunk", "page", "user", "agent"]
    reliability: float


class KnowledgeSource(_KnowledgeSourceRequired, total=False):
    """``KnowledgeSourceOutput`` in the OpenAPI schema."""

    source_id: str
    extracted_at: str


class KnowledgeHit(TypedDict):
    """``KnowledgeHitOutput`` in the OpenAPI schema."""

    item: KnowledgeItem
    score: float
    explanation: dict[str, Any]


class KnowledgeItemRef(TypedDict):
    """``KnowledgeItemRefOutput`` in the OpenAPI schema."""

    base: str
    key: str


class Hit(TypedDict):
    """``HitOutput`` in the OpenAPI schema."""

    chunk_id: int
    document_id: int
    knowledge_base_id: int
    document_title: str
    text: str
    heading_path: list[str]
    position: int
    score: float | None
    explanation: HitExplanation


class GraphStage(TypedDict):
    """``GraphStageOutput`` in the OpenAPI schema."""

    seeds: list[Seed]
    communities: list[CommunityRef]


class ExpansionTerm(TypedDict):
    """``ExpansionTermOutput`` in the OpenAPI schema."""

    term: str
    weight: float


class QuerySource(TypedDict):
    """``QuerySourceOutput`` in the OpenAPI schema."""

    ref: int
    document_id: int
    chunk_id: int
    title: str
    heading_path: list[str]
    score: float | None


class PageHit(TypedDict):
    """``PageHitOutput`` in the OpenAPI schema."""

    page: PageSummary
    score: float | None
    explanation: PageExplanation


class RelatedItem(TypedDict):
    """``RelatedItemOutput`` in the OpenAPI schema."""

    id: int | None
    title: str
    slug: str
    type: (
        Literal[
            "page",
            "article",
        ]
        | None
    )
    excerpt: str
    similarity: float


class BrokenLink(TypedDict):
    """``BrokenLinkOutput`` in the OpenAPI schema."""

    id: int | None
    title: str
    slug: str
    type: (
        Literal[
            "page",
            "article",
        ]
        | None
    )
    excerpt: str
    link_text: str


class LinkedItem(TypedDict):
    """``LinkedItemOutput`` in the OpenAPI schema."""

    id: int | None
    title: str
    slug: str
    type: (
        Literal[
            "page",
            "article",
        ]
        | None
    )
    excerpt: str


class Rewritten(TypedDict):
    """``RewrittenOutput`` in the OpenAPI schema."""

    id: int
    title: str
    slug: str
    links: int


class SkillDependency(TypedDict):
    """``SkillDependencyOutput`` in the OpenAPI schema."""

    skill_id: int | None
    name: str
    node_id: int
    version: str
    satisfied: bool | None


class _SkillVersionRequired(TypedDict):
    id: int
    version: str
    change_type: Literal["major", "minor", "patch", "hotfix", "experimental"]
    traffic_share: float
    success_count: int
    failure_count: int
    success_rate: float | None
    created_at: str
    activated_at: str | None


class SkillVersion(_SkillVersionRequired, total=False):
    """``SkillVersionOutput`` in the OpenAPI schema."""

    content: str
    execution_context: Any
    notes: str
    is_active: bool


class SkillHit(TypedDict):
    """``SkillHitOutput`` in the OpenAPI schema."""

    skill: Skill
    score: float | None
    explanation: SkillExplanation


class ChainLink(TypedDict):
    """``ChainLinkOutput`` in the OpenAPI schema."""

    skill_id: int | None
    name: str
    node_id: int
    depth: int


class _SkillSummaryRequired(TypedDict):
    id: int
    name: str
    slug: str
    category: Literal[
        "code_generation",
        "code_review",
        "testing",
        "debugging",
        "deployment",
        "documentation",
        "analysis",
        "communication",
        "planning",
        "research",
        "data_processing",
        "security",
        "monitoring",
        "optimization",
        "integration",
        "automation",
        "design",
        "architecture",
        "project_management",
        "devops",
        "operations",
        "general",
    ]


class SkillSummary(_SkillSummaryRequired, total=False):
    """``SkillSummaryOutput`` in the OpenAPI schema."""

    status: Literal["draft", "active", "deprecated", "archived"]


class ContextDocument(TypedDict):
    """``ContextDocumentOutput`` in the OpenAPI schema."""

    chunk_id: int
    document_id: int
    knowledge_base_id: int
    document_title: str
    text: str
    score: float | None


class ContextPage(TypedDict):
    """``ContextPageOutput`` in the OpenAPI schema."""

    node_id: int
    name: str
    entity_type: str
    description: str
    score: float | None


class _SkillUsageRequired(TypedDict):
    id: int
    agent_id: int
    recorded_by_id: int | None
    skill_id: int | None
    version_id: int | None
    task_type: str
    success: bool


class SkillUsage(_SkillUsageRequired, total=False):
    """``SkillUsageOutput`` in the OpenAPI schema."""

    duration_ms: int
    occurred_at: str


class NodeHit(TypedDict):
    """``NodeHitOutput`` in the OpenAPI schema."""

    node: GraphNode
    score: float | None
    community_id: int | None
    explanation: NodeExplanation


class CommunityRef(TypedDict):
    """``CommunityRefOutput`` in the OpenAPI schema."""

    id: int
    level: int
    title: str
    summary: str
    size: int
    score: float
    node_ids: list[int]


class Neighbour(TypedDict):
    """``NeighbourOutput`` in the OpenAPI schema."""

    node: GraphNode
    hops: int
    relation_type: str


class GraphContextSection(TypedDict):
    """``GraphContextSectionOutput`` in the OpenAPI schema."""

    name: Literal["communities", "documents"]
    tokens: int
    items: list[GraphContextItem]


class GraphContextDropped(TypedDict):
    """``GraphContextDroppedOutput`` in the OpenAPI schema."""

    candidates: int
    tokens: int


class Seed(TypedDict):
    """``SeedOutput`` in the OpenAPI schema."""

    node_id: int
    name: str
    entity_type: str
    similarity: float
    match: Literal["name", "alias", "embedding", "passage"]


class ContextItem(TypedDict):
    """``ContextItemOutput`` in the OpenAPI schema."""

    kind: Literal[
        "turn", "summary", "memory", "knowledge", "chunk", "page", "skill", "pool", "working"
    ]
    id: Any
    score: float
    tokens: int
    text: str
    metadata: dict[str, Any]
    metadata_truncated: bool
    source: dict[str, Any]


class MemoryHitExplanation(TypedDict):
    """``MemoryHitExplanation`` in the OpenAPI schema."""

    tier: Literal["working", "short_term", "long_term", "shared"]
    tier_rank: int
    keyword_rank: int | None
    keyword_score: float | None
    vector_rank: int | None
    vector_score: float | None
    relevance: float
    fused_score: float
    fusion: str
    rrf_k: int


class Components(TypedDict):
    """``ComponentsOutput`` in the OpenAPI schema."""

    similarity: float
    importance: float
    confidence: float
    recency: float


class _RetrievalRequired(TypedDict):
    score: float | None
    vector_rank: int | None
    vector_score: float | None
    keyword_rank: int | None
    keyword_score: float | None


class Retrieval(_RetrievalRequired, total=False):
    """``RetrievalOutput`` in the OpenAPI schema."""

    graph_rank: int | None
    graph_score: float | None
    graph: GraphHitExplanation | None
    late_score: float | None


class HitExplanation(TypedDict):
    """``HitExplanation`` in the OpenAPI schema."""

    vector: StageExplanation
    keyword: StageExplanation
    graph: GraphHitExplanation | None
    fused_score: float | None
    rerank_score: float | None


class PageExplanation(TypedDict):
    """``PageExplanation`` in the OpenAPI schema."""

    vector: StageExplanation
    keyword: StageExplanation
    fused_score: float | None


class SkillExplanation(TypedDict):
    """``SkillExplanation`` in the OpenAPI schema."""

    vector: StageExplanation
    keyword: StageExplanation
    fused_score: float | None


class NodeExplanation(TypedDict):
    """``NodeExplanation`` in the OpenAPI schema."""

    vector: StageExplanation
    keyword: StageExplanation
    fused_score: float | None
    hops: int | None
    path: list[GraphPathStep]


class GraphContextItem(TypedDict):
    """``GraphContextItemOutput`` in the OpenAPI schema."""

    kind: Literal["community", "chunk"]
    id: int
    score: float
    tokens: int
    text: str
    metadata: dict[str, Any]
    metadata_truncated: bool
    source: dict[str, Any]


class GraphHitExplanation(TypedDict):
    """``GraphHitExplanation`` in the OpenAPI schema."""

    rank: int | None
    score: float | None
    seed: GraphNodeRef
    node: GraphNodeRef
    hops: int
    path: list[GraphPathStep]
    community_id: int | None
    similarity: float
    evidence: float


class StageExplanation(TypedDict):
    """``StageExplanation`` in the OpenAPI schema."""

    rank: int | None
    score: float | None


class GraphPathStep(TypedDict):
    """``GraphPathStep`` in the OpenAPI schema."""

    name: str
    relation_type: str


class _GraphNodeRefRequired(TypedDict):
    node_id: int
    name: str


class GraphNodeRef(_GraphNodeRefRequired, total=False):
    """``GraphNodeRef`` in the OpenAPI schema."""

    entity_type: str
