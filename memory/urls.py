"""The memory tiers' routes, mounted at /api/v1/memory/ (docs/memory.md, docs/api.md).

Session ids, keys and pool ids start with a letter or a digit (memory/names.py), so the
operations whose path segment starts with ``_`` can never be taken for a key or a session.
"""

from django.urls import path

from memory.context.apis import context, router, tools
from memory.conversations import apis as conversations
from memory.conversations.extraction import apis as extractions
from memory.converters import register
from memory.long_term import apis as long_term
from memory.maintenance.apis import changes
from memory.maintenance.apis import reports as maintenance_reports
from memory.pools import apis as pools
from memory.short_term import apis as short_term
from memory.working import apis as working

register()

urlpatterns = [
    # --- the router across tiers, and consolidation ----------------------------------------
    path("search", router.MemorySearchApi.as_view(), name="memory-search"),
    path("read", router.MemoryReadApi.as_view(), name="memory-read"),
    path("write", router.MemoryWriteApi.as_view(), name="memory-write"),
    path("stats", router.MemoryStatsApi.as_view(), name="memory-stats"),
    path("consolidate", router.MemoryConsolidateApi.as_view(), name="memory-consolidate"),
    # --- cluster maintenance ----------------------------------------------------------------
    path("maintenance", maintenance_reports.MaintenanceRunApi.as_view(), name="memory-maintenance"),
    path(
        "maintenance/jobs/<id:job_id>",
        maintenance_reports.MaintenanceJobApi.as_view(),
        name="memory-maintenance-job",
    ),
    path(
        "maintenance/reports",
        maintenance_reports.MaintenanceReportListApi.as_view(),
        name="memory-maintenance-reports",
    ),
    path(
        "maintenance/reports/<id:report_id>",
        maintenance_reports.MaintenanceReportDetailApi.as_view(),
        name="memory-maintenance-report",
    ),
    # --- memory tools for agent runs --------------------------------------------------------
    path("tools/write", tools.ToolWriteApi.as_view(), name="memory-tools-write"),
    path("tools/search", tools.ToolSearchApi.as_view(), name="memory-tools-search"),
    path("tools/related", tools.ToolRelatedApi.as_view(), name="memory-tools-related"),
    path(
        "tools/summarised-search",
        tools.ToolSummarisedSearchApi.as_view(),
        name="memory-tools-summarised-search",
    ),
    path("runs/<memory_run:run_id>", tools.RunApi.as_view(), name="memory-run"),
    path("context", context.ContextApi.as_view(), name="memory-context"),
    # --- conversations ----------------------------------------------------------------------
    path(
        "conversations",
        conversations.ConversationListCreateApi.as_view(),
        name="conversations",
    ),
    path(
        "conversations/<id:conversation_id>",
        conversations.ConversationDetailApi.as_view(),
        name="conversation",
    ),
    path(
        "conversations/<id:conversation_id>/messages",
        conversations.ConversationMessagesApi.as_view(),
        name="conversation-messages",
    ),
    path(
        "conversations/<id:conversation_id>/turns",
        conversations.ConversationTurnsApi.as_view(),
        name="conversation-turns",
    ),
    path(
        "conversations/<id:conversation_id>/summaries",
        conversations.ConversationSummariesApi.as_view(),
        name="conversation-summaries",
    ),
    path(
        "conversations/<id:conversation_id>/extract",
        extractions.ConversationExtractApi.as_view(),
        name="conversation-extract",
    ),
    path(
        "conversations/<id:conversation_id>/extractions",
        extractions.ConversationExtractionsApi.as_view(),
        name="conversation-extractions",
    ),
    # --- working memory (Redis) ------------------------------------------------------------
    path("working/_inbox", working.WorkingInboxApi.as_view(), name="working-inbox"),
    path(
        "working/_inbox/<id:agent_id>/<memory_key:key>",
        working.WorkingInboxEntryApi.as_view(),
        name="working-inbox-entry",
    ),
    path(
        "working/_share/<id:agent_id>/<memory_key:key>",
        working.WorkingShareApi.as_view(),
        name="working-share",
    ),
    path(
        "working/<memory_session:session_id>",
        working.WorkingSessionApi.as_view(),
        name="working-session",
    ),
    path(
        "working/<memory_session:session_id>/_task-state",
        working.WorkingTaskStateApi.as_view(),
        name="working-task-state",
    ),
    path(
        "working/<memory_session:session_id>/_steps/<memory_key:step>",
        working.WorkingStepApi.as_view(),
        name="working-step",
    ),
    path(
        "working/<memory_session:session_id>/_tools/<memory_key:tool>",
        working.WorkingToolStateApi.as_view(),
        name="working-tool-state",
    ),
    path(
        "working/<memory_session:session_id>/_conversation",
        working.WorkingConversationApi.as_view(),
        name="working-conversation",
    ),
    path(
        "working/<memory_session:session_id>/_conversation/messages",
        working.WorkingConversationAppendApi.as_view(),
        name="working-conversation-append",
    ),
    path(
        "working/<memory_session:session_id>/_scratch-pad",
        working.WorkingScratchPadApi.as_view(),
        name="working-scratch-pad",
    ),
    path(
        "working/<memory_session:session_id>/_scratch-pad/append",
        working.WorkingScratchPadAppendApi.as_view(),
        name="working-scratch-pad-append",
    ),
    path(
        "working/<memory_session:session_id>/_persist",
        working.WorkingPersistApi.as_view(),
        name="working-persist",
    ),
    path(
        "working/<memory_session:session_id>/_load",
        working.WorkingLoadApi.as_view(),
        name="working-load",
    ),
    path(
        "working/<memory_session:session_id>/<memory_key:key>",
        working.WorkingKeyApi.as_view(),
        name="working-key",
    ),
    path(
        "working/<memory_session:session_id>/<memory_key:key>/exists",
        working.WorkingExistsApi.as_view(),
        name="working-exists",
    ),
    # --- short-term memory (PostgreSQL) ----------------------------------------------------
    path(
        "short-term/<memory_session:session_id>",
        short_term.ShortTermSessionApi.as_view(),
        name="short-term-session",
    ),
    path(
        "short-term/<memory_session:session_id>/_batch",
        short_term.ShortTermBatchApi.as_view(),
        name="short-term-batch",
    ),
    path(
        "short-term/<memory_session:session_id>/<memory_key:key>",
        short_term.ShortTermKeyApi.as_view(),
        name="short-term-key",
    ),
    path(
        "short-term/<memory_session:session_id>/<memory_key:key>/refresh",
        short_term.ShortTermRefreshApi.as_view(),
        name="short-term-refresh",
    ),
    # --- shared pools ----------------------------------------------------------------------
    path("pools", pools.PoolListCreateApi.as_view(), name="pool-list"),
    path("pools/<memory_pool:pool_id>", pools.PoolDetailApi.as_view(), name="pool-detail"),
    path("pools/<memory_pool:pool_id>/stats", pools.PoolStatsApi.as_view(), name="pool-stats"),
    path("pools/<memory_pool:pool_id>/data", pools.PoolDataApi.as_view(), name="pool-data"),
    path(
        "pools/<memory_pool:pool_id>/data/<memory_path:path>",
        pools.PoolDataPathApi.as_view(),
        name="pool-data-path",
    ),
    path(
        "pools/<memory_pool:pool_id>/grants",
        pools.PoolGrantListApi.as_view(),
        name="pool-grants",
    ),
    path(
        "pools/<memory_pool:pool_id>/grants/<id:agent_id>",
        pools.PoolGrantApi.as_view(),
        name="pool-grant",
    ),
    path("pools/<memory_pool:pool_id>/events", pools.PoolEventsApi.as_view(), name="pool-events"),
    path(
        "workflow-runs/<memory_run:run_id>/expire",
        pools.WorkflowRunExpireApi.as_view(),
        name="workflow-run-expire",
    ),
    # --- long-term memory (PostgreSQL + pgvector) -----------------------------------------
    path("pending-changes", changes.PendingChangeListApi.as_view(), name="pending-changes"),
    path(
        "pending-changes/<id:change_id>",
        changes.PendingChangeDetailApi.as_view(),
        name="pending-change",
    ),
    path("contexts", long_term.ContextListCreateApi.as_view(), name="ltm-contexts"),
    path("contexts/<id:context_id>", long_term.ContextDetailApi.as_view(), name="ltm-context"),
    path(
        "contexts/<id:context_id>/archive",
        long_term.ContextArchiveApi.as_view(),
        name="ltm-context-archive",
    ),
    path(
        "contexts/<id:context_id>/unarchive",
        long_term.ContextUnarchiveApi.as_view(),
        name="ltm-context-unarchive",
    ),
    path(
        "contexts/<id:context_id>/grants",
        long_term.ContextGrantListCreateApi.as_view(),
        name="ltm-context-grants",
    ),
    path(
        "contexts/<id:context_id>/grants/<id:agent_id>",
        long_term.ContextGrantApi.as_view(),
        name="ltm-context-grant",
    ),
    path(
        "contexts/<id:context_id>/snapshots",
        long_term.ContextSnapshotListCreateApi.as_view(),
        name="ltm-context-snapshots",
    ),
    path(
        "contexts/<id:context_id>/entries",
        long_term.ContextEntryListCreateApi.as_view(),
        name="ltm-context-entries",
    ),
    path(
        "contexts/<id:context_id>/entries/batch",
        long_term.ContextEntryBatchApi.as_view(),
        name="ltm-context-entries-batch",
    ),
    path(
        "contexts/<id:context_id>/access-log",
        long_term.ContextAccessLogApi.as_view(),
        name="ltm-context-access-log",
    ),
    path(
        "snapshots/<id:snapshot_id>/restore",
        long_term.SnapshotRestoreApi.as_view(),
        name="ltm-snapshot-restore",
    ),
    path("entries", long_term.EntryCreateApi.as_view(), name="ltm-entries"),
    path("entries/batch", long_term.EntryBatchCreateApi.as_view(), name="ltm-entries-batch"),
    path("entries/<id:entry_id>", long_term.EntryDetailApi.as_view(), name="ltm-entry"),
    path(
        "entries/<id:entry_id>/versions",
        long_term.EntryVersionsApi.as_view(),
        name="ltm-entry-versions",
    ),
    path(
        "entries/<id:entry_id>/importance",
        long_term.EntryImportanceApi.as_view(),
        name="ltm-entry-importance",
    ),
    path(
        "entries/<id:entry_id>/archive",
        long_term.EntryArchiveApi.as_view(),
        name="ltm-entry-archive",
    ),
    path(
        "entries/<id:entry_id>/unarchive",
        long_term.EntryUnarchiveApi.as_view(),
        name="ltm-entry-unarchive",
    ),
    path("long-term/search", long_term.LongTermSearchApi.as_view(), name="ltm-search"),
]
