"""Tenancy across the whole API, walked from the OpenAPI schema.

An intruder account owns data of every kind (tests/support/world.py). For every operation in
the schema, the caller (an admin key of another account that has data too, so every query really
runs) names the intruder's ids, then ids that do not exist, then its own: the first two must
answer exactly alike (status and body, ids aside) and change nothing of the intruder's; the
third must succeed, so the first two cannot pass for a malformed request. No response may
show any of the intruder's data. An operation the schema lists without a case here fails.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from content.models import Article, Page
from core import services
from core.actors import actor_for_account
from core.models import Agent, ApiKey, PortabilityJob, Team
from memory.models import (
    Conversation,
    Extraction,
    KnowledgeItem,
    KnowledgeSource,
    KnowledgeStore,
    MaintenanceJob,
    MemoryAccessLog,
    MemoryContext,
    MemoryContextGrant,
    MemoryEntry,
    MemoryMaintenanceReport,
    MemoryPool,
    MemoryPoolEvent,
    MemoryPoolGrant,
    MemorySnapshot,
    PendingChange,
    ShortTermEntry,
    WorkingMemorySnapshot,
)
from memory.redis_store import memory_redis
from memory.working import store as working_redis
from memory.working.selectors import read_session
from rag.models import (
    Chunk,
    Document,
    GraphEdge,
    GraphNode,
    GraphScope,
    KnowledgeBase,
    SearchQuery,
)
from skills.models import (
    AgentSkill,
    AgentTrust,
    LearningProfile,
    Skill,
    SkillConflict,
    SkillProposal,
    SkillScope,
    SkillUsage,
    SkillVersion,
    TaskAssignment,
)
from tests.support.world import SharedWorld, Side, build_side, shared_world

pytestmark = pytest.mark.django_db

OWN, INTRUDER = "OWNQX", "INTRUDERQX"
MISSING_ID = 987_654_321
MISSING_PREFIX = "zzzzzzzzzzzz"


@dataclass(frozen=True)
class Target:
    """The ids a request names: the intruder's, the caller's own, or ones that do not exist."""

    kb_id: int
    document_id: int
    agent_id: int
    key_prefix: str
    # Memory names (chosen by agents, not ids): a session, a key in it, a pool, a workflow run.
    session_id: str
    memory_key: str
    pool_id: str
    run_id: str
    # Long-term memory ids, and the context's name (unique per account, chosen by agents).
    context_id: int
    entry_id: int
    snapshot_id: int
    context_name: str
    # Knowledge graph ids, and a node's name (unique per account and entity type).
    node_id: int
    other_node_id: int
    edge_id: int
    node_name: str
    # Pages: a page's id, and a title (unique per account, chosen by authors).
    page_id: int
    page_title: str
    # Skills: ids (errors name none), and a skill's name (unique per account).
    skill_id: int
    other_skill_id: int
    skill_name: str
    version_id: int
    proposal_id: int
    proposal_name: str
    task_id: int
    conversation_id: int
    pending_change_id: int
    # Knowledge items: a base's name (unique per account, chosen by agents); its item's key is
    # ``memory_key``.
    knowledge_base: str
    # A maintenance report (a dry run of the side's context).
    report_id: int
    # A maintenance job (the side's agent's dry run of its context).
    job_id: int
    # An export (succeeded) and an import (failed) of the side's account.
    export_job_id: int
    import_job_id: int

    @classmethod
    def of(cls, side: Side) -> Target:
        return cls(
            side.kb.pk,
            side.document.pk,
            side.agent.pk,
            side.key.prefix,
            side.session_id,
            side.memory_key,
            side.pool_id,
            side.run_id,
            side.ltm_context.pk,  # type: ignore[union-attr]
            side.ltm_entry.pk,  # type: ignore[union-attr]
            side.ltm_snapshot.pk,  # type: ignore[union-attr]
            side.context_name,
            side.graph_node.pk,  # type: ignore[union-attr]
            side.graph_other_node.pk,  # type: ignore[union-attr]
            side.graph_edge.pk,  # type: ignore[union-attr]
            side.node_name,
            side.page.pk,  # type: ignore[union-attr]
            side.page_title,
            side.skill.pk,  # type: ignore[union-attr]
            side.other_skill.pk,  # type: ignore[union-attr]
            side.skill_name,
            side.skill_version.pk,  # type: ignore[union-attr]
            side.proposal.pk,  # type: ignore[union-attr]
            side.proposal_name,
            side.task.pk,  # type: ignore[union-attr]
            side.conversation.pk,  # type: ignore[union-attr]
            side.pending_change.pk,  # type: ignore[union-attr]
            side.knowledge_base_name,
            side.maintenance_report.pk,  # type: ignore[union-attr]
            side.maintenance_job.pk,  # type: ignore[union-attr]
            side.export_job.pk,  # type: ignore[union-attr]
            side.import_job.pk,  # type: ignore[union-attr]
        )

    @classmethod
    def missing(cls) -> Target:
        return cls(
            MISSING_ID,
            MISSING_ID + 1,
            MISSING_ID + 2,
            MISSING_PREFIX,
            f"s{MISSING_ID + 3}",
            f"k{MISSING_ID + 4}",
            f"pool-{MISSING_ID + 5}",
            f"run-{MISSING_ID + 6}",
            MISSING_ID + 7,
            MISSING_ID + 8,
            MISSING_ID + 9,
            f"ltm-{MISSING_ID + 10}",
            MISSING_ID + 11,
            MISSING_ID + 12,
            MISSING_ID + 13,
            f"node-{MISSING_ID + 14}",
            MISSING_ID + 15,
            f"page-{MISSING_ID + 16}",
            MISSING_ID + 17,
            MISSING_ID + 18,
            f"skill-{MISSING_ID + 19}",
            MISSING_ID + 20,
            MISSING_ID + 21,
            f"proposal-{MISSING_ID + 22}",
            MISSING_ID + 23,
            MISSING_ID + 24,
            MISSING_ID + 26,
            f"kb-{MISSING_ID + 25}",
            MISSING_ID + 26,
            MISSING_ID + 27,
            MISSING_ID + 28,
            MISSING_ID + 29,
        )

    def values(self) -> set[str]:
        """What ``normalised`` masks: the names and ids an answer may echo (graph errors name
        no ids)."""
        names = {self.session_id, self.memory_key, self.pool_id, self.run_id, self.context_name}
        names.add(self.knowledge_base)
        ids = {self.kb_id, self.document_id, self.agent_id, self.context_id, self.entry_id}
        ids |= {self.snapshot_id, self.conversation_id, self.pending_change_id}
        return names | {self.key_prefix} | {str(i) for i in ids}

    @property
    def names(self) -> dict[str, Any]:
        """Path parameters of the memory operations."""
        return {
            "session_id": self.session_id,
            "key": self.memory_key,
            "pool_id": self.pool_id,
            "run_id": self.run_id,
            "agent_id": self.agent_id,
            "step": "plan",
            "tool": "search",
            "path": "note",
            "context_id": self.context_id,
            "entry_id": self.entry_id,
            "snapshot_id": self.snapshot_id,
            "node_id": self.node_id,
            "edge_id": self.edge_id,
            "page_id": self.page_id,
            "skill_id": self.skill_id,
            "version_id": self.version_id,
            "proposal_id": self.proposal_id,
            "task_id": self.task_id,
            "conversation_id": self.conversation_id,
            "change_id": self.pending_change_id,
            "base": self.knowledge_base,
            "report_id": self.report_id,
            "job_id": self.job_id,
        }


# path (a suffix after the path's prefix, or every path parameter by name), body, query
Request = tuple[str | dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]


@dataclass(frozen=True)
class Case:
    """How to call an operation. ``build`` gets a target when the request names ids (then it is
    made three times: intruder, missing, own); otherwise None, and it is made once."""

    build: Callable[[Target | None], Request]
    names_ids: bool = True
    # Made once, naming the intruder's own names (a session, a key, a pool id): names are the
    # caller's to choose in its own namespace, so this must succeed and change nothing of the
    # intruder's (like creating a knowledge base with the intruder's name).
    intruder_names: bool = False
    # The status the own call answers when not 2xx: an installation-wide operation whose
    # success needs a state the world does not build (an embedding migration under way).
    expected: int | None = None


def _graph_retrieve(target: Target | None) -> Request:
    body: dict[str, Any] = {"query": f"{INTRUDER}NODE city river harbour"}
    if target is not None:
        body["knowledge_base_ids"] = [target.kb_id]
    return "", body, None


def _search(filters: bool) -> Callable[[Target | None], Request]:
    def build(target: Target | None) -> Request:
        body: dict[str, Any] = {"query": f"{INTRUDER}CHUNK tomatoes basil"}
        if target is not None:
            body["filters"] = {"knowledge_base_ids": [target.kb_id]}
        return "", body, None

    return build


CASES: dict[str, Case] = {
    "me_retrieve": Case(lambda t: ("", None, None), names_ids=False),
    "agents_list": Case(lambda t: ("", None, None), names_ids=False),
    "agents_retrieve": Case(lambda t: (f"/{t.agent_id}", None, None)),  # type: ignore[union-attr]
    "keys_list": Case(lambda t: ("", None, {"agent_id": t.agent_id})),  # type: ignore[union-attr]
    "keys_create": Case(
        lambda t: ("", {"agent_id": t.agent_id, "scopes": ["read"]}, None)  # type: ignore[union-attr]
    ),
    "keys_revoke": Case(lambda t: (f"/{t.key_prefix}", None, None)),  # type: ignore[union-attr]
    "rag_kb_list": Case(lambda t: ("", None, None), names_ids=False),
    # Names are unique per account: taking the intruder's name must work (a 409 would leak it).
    "rag_kb_create": Case(lambda t: ("", {"name": f"{INTRUDER}KB"}, None), names_ids=False),
    "rag_kb_retrieve": Case(lambda t: (f"/{t.kb_id}", None, None)),  # type: ignore[union-attr]
    "rag_kb_update": Case(lambda t: (f"/{t.kb_id}", {"description": "changed"}, None)),  # type: ignore[union-attr]
    "rag_kb_delete": Case(lambda t: (f"/{t.kb_id}", None, None)),  # type: ignore[union-attr]
    "rag_kb_status": Case(lambda t: (f"/{t.kb_id}", {"status": "paused"}, None)),  # type: ignore[union-attr]
    "rag_documents_list": Case(lambda t: (f"/{t.kb_id}", None, None)),  # type: ignore[union-attr]
    "rag_documents_create": Case(lambda t: (f"/{t.kb_id}", {"text": "injected"}, None)),  # type: ignore[union-attr]
    "rag_document_retrieve": Case(lambda t: (f"/{t.document_id}", None, None)),  # type: ignore[union-attr]
    "rag_document_delete": Case(lambda t: (f"/{t.document_id}", None, None)),  # type: ignore[union-attr]
    "rag_document_reprocess": Case(lambda t: (f"/{t.document_id}", {"force": True}, None)),  # type: ignore[union-attr]
    "rag_search": Case(_search(filters=True)),
    "rag_query": Case(_search(filters=True)),
    "rag_agentic": Case(
        lambda t: (
            "",
            {"query": "tomatoes basil garden", "knowledge_base_ids": [t.kb_id]},  # type: ignore[union-attr]
            None,
        )
    ),
    "rag_analytics": Case(lambda t: ("", None, None), names_ids=False),
    "rag_queries_list": Case(lambda t: ("", None, None), names_ids=False),
}


def _named(
    body: dict[str, Any] | None = None, query: dict[str, Any] | None = None
) -> Callable[[Target | None], Request]:
    """A memory operation: every path parameter from the target's names."""

    def build(target: Target | None) -> Request:
        assert target is not None
        return target.names, body, query

    return build


def _names(body: dict[str, Any] | None = None) -> Case:
    return Case(_named(body), names_ids=False, intruder_names=True)


def _pool_create(target: Target | None) -> Request:
    assert target is not None
    return "", {"pool_id": target.pool_id}, None


def _context_create(target: Target | None) -> Request:
    assert target is not None
    return "", {"name": target.context_name}, None


def _pending_changes(target: Target | None) -> Request:
    assert target is not None
    return "", None, {"context_id": target.context_id}


def _grant_create(target: Target | None) -> Request:
    assert target is not None
    return target.names, {"agent_id": target.agent_id, "level": "read"}, None


def _node_create(target: Target | None) -> Request:
    assert target is not None
    return "", {"name": target.node_name, "entity_type": "place"}, None


def _long_term_search(filters: bool) -> Callable[[Target | None], Request]:
    def build(target: Target | None) -> Request:
        body: dict[str, Any] = {"query": f"{INTRUDER}LTM deploy Fridays office"}
        if target is not None:
            body["filters"] = {"context_ids": [target.context_id]}
        return "", body, None

    return build


VALUE = {"value": {"n": 1}, "ttl": 60}
CASES.update(
    {
        # Working memory: an agent's own namespace. Reads of the intruder's names find
        # nothing (like missing ones); writes under them write the caller's own entries.
        "memory_working_store": _names(VALUE),
        "memory_working_retrieve": Case(_named()),
        "memory_working_remove": Case(_named()),
        "memory_working_exists": Case(_named()),
        "memory_working_keys": Case(_named()),
        "memory_working_clear": Case(_named()),
        "memory_working_task_state_store": _names(VALUE),
        "memory_working_task_state_retrieve": Case(_named()),
        "memory_working_step_store": _names(VALUE),
        "memory_working_step_retrieve": Case(_named()),
        "memory_working_tool_state_store": _names(VALUE),
        "memory_working_tool_state_retrieve": Case(_named()),
        "memory_working_conversation_store": _names({"messages": [{"role": "user"}]}),
        "memory_working_conversation_retrieve": Case(_named()),
        "memory_working_conversation_append": _names({"message": {"role": "user"}}),
        "memory_working_scratch_pad_store": _names({"content": "notes"}),
        "memory_working_scratch_pad_retrieve": Case(_named()),
        "memory_working_scratch_pad_append": _names({"content": " more"}),
        "memory_working_persist": Case(_named()),
        "memory_working_load": Case(_named({})),
        # Sharing names an agent: another account's answers like a missing one.
        "memory_working_share": Case(_named(VALUE)),
        "memory_working_inbox_list": Case(lambda t: ("", None, None), names_ids=False),
        "memory_working_inbox_retrieve": Case(_named()),
        # Short-term memory: the same, in PostgreSQL.
        "memory_short_term_put": _names({"value": {"n": 1}, "memory_type": "observation"}),
        "memory_short_term_put_batch": _names(
            {"entries": [{"key": "batched", "value": {"n": 2}, "memory_type": "observation"}]}
        ),
        "memory_short_term_get": Case(_named()),
        "memory_short_term_delete": Case(_named()),
        "memory_short_term_refresh": Case(_named({"ttl": 120})),
        "memory_short_term_list": Case(_named()),
        # Pools: ids unique per account; another account's answers like a missing one.
        "memory_pools_list": Case(lambda t: ("", None, None), names_ids=False),
        "memory_pools_create": Case(_pool_create, names_ids=False, intruder_names=True),
        "memory_pool_retrieve": Case(_named()),
        "memory_pool_update": Case(_named({"name": "renamed", "public_read": True})),
        "memory_pool_delete": Case(_named()),
        "memory_pool_stats": Case(_named()),
        "memory_pool_data_root_read": Case(_named()),
        "memory_pool_data_root_write": Case(_named({"value": {"replaced": True}})),
        "memory_pool_data_root_merge": Case(_named({"value": {"merged": True}})),
        "memory_pool_data_read": Case(_named()),
        "memory_pool_data_write": Case(_named({"value": "changed", "expected_version": 3})),
        "memory_pool_data_merge": Case(_named({"value": {"a": 1}})),
        "memory_pool_data_delete": Case(_named()),
        "memory_pool_grants_list": Case(_named()),
        "memory_pool_grant_set": Case(_named({"level": "read"})),
        "memory_pool_grant_revoke": Case(_named()),
        "memory_pool_events": Case(_named()),
        "memory_workflow_run_expire": Case(_named()),
        # The router: sessions and keys are the caller's own names; searching, reading and
        # counting the intruder's find nothing, like missing ones.
        # The session-scoped tiers: long-term hits are the caller's own either way, and each
        # search keeps them recent (their recency moves between the two calls compared).
        "memory_search": Case(
            lambda t: (
                "",
                {
                    "query": "note",
                    "tiers": ["working", "short_term"],
                    "filters": {"session_id": t.session_id},  # type: ignore[union-attr]
                },
                None,
            )
        ),
        "memory_read": Case(
            lambda t: ("", {"key": t.memory_key, "session_id": t.session_id}, None)  # type: ignore[union-attr]
        ),
        "memory_write": Case(
            lambda t: (
                "",
                {"key": t.memory_key, "value": 1, "tier": "short_term", "session_id": t.session_id},  # type: ignore[union-attr]
                None,
            ),
            names_ids=False,
            intruder_names=True,
        ),
        "memory_stats": Case(lambda t: ("", None, {"session_id": t.session_id})),  # type: ignore[union-attr]
        "memory_consolidate": Case(lambda t: ("", {}, None), names_ids=False),
        # Cluster maintenance: a foreign context or report answers like a missing one.
        "memory_maintenance_run": Case(
            lambda t: ("", {"dry_run": True, "context_ids": [t.context_id]}, None)  # type: ignore[union-attr]
        ),
        "memory_maintenance_reports_list": Case(lambda t: ("", None, None), names_ids=False),
        "memory_maintenance_report_retrieve": Case(_named()),
        "memory_maintenance_job_retrieve": Case(_named()),
        # Export and import (core.portability): always the caller's own account; a foreign
        # job answers like a missing one, its archive too.
        "portability_export": Case(lambda t: ("", {"with_vectors": False}, None), names_ids=False),
        # The installation's embedding generations: models and counts, no account's data.
        "embeddings_status": Case(lambda t: ("", None, None), names_ids=False),
        # No next model is configured here: 409 next_model_not_configured, and nothing to cut
        # over to, roll back to or drop (tests/core/test_embedding_generations.py acts).
        "embeddings_start": Case(
            lambda t: ("", {"auto_cutover": False}, None), names_ids=False, expected=409
        ),
        "embeddings_cutover": Case(lambda t: ("", None, None), names_ids=False, expected=409),
        "embeddings_rollback": Case(lambda t: ("", None, None), names_ids=False, expected=409),
        "embeddings_drop": Case(lambda t: ("", None, None), names_ids=False, expected=404),
        "portability_export_retrieve": Case(lambda t: ({"job_id": t.export_job_id}, None, None)),  # type: ignore[union-attr]
        "portability_export_download": Case(
            lambda t: ({"job_id": t.export_job_id}, None, None)  # type: ignore[union-attr]
        ),
        "portability_import": Case(
            lambda t: ("", {"archive_base64": "bm90IGFuIGFyY2hpdmU="}, None), names_ids=False
        ),
        "portability_import_retrieve": Case(lambda t: ({"job_id": t.import_job_id}, None, None)),  # type: ignore[union-attr]
        # Memory tools of agent runs: runs are the caller's own names; related items are ids.
        "memory_tools_write": Case(
            lambda t: (
                "",
                {
                    "text": "The crane schedule changes every spring with the harbour tides",
                    "related": [{"kind": "entry", "id": t.entry_id}],  # type: ignore[union-attr]
                },
                None,
            )
        ),
        "memory_tools_search": Case(
            lambda t: ("", {"query": f"{INTRUDER}TOOL release train Thursday"}, None),
            names_ids=False,
        ),
        "memory_tools_related": Case(
            lambda t: ("", {"related": [{"kind": "entry", "id": t.entry_id}]}, None)  # type: ignore[union-attr]
        ),
        "memory_tools_summarised_search": Case(
            lambda t: ("", {"query": f"{INTRUDER}TOOL release train Thursday"}, None),
            names_ids=False,
        ),
        "memory_run_retrieve": Case(_named()),
        # Conversations: ids answer like missing ones; user ids are the caller's own terms.
        "memory_conversations_list": Case(
            lambda t: ("", None, {"user_id": f"{INTRUDER}USER"}), names_ids=False
        ),
        "memory_conversation_create": Case(
            lambda t: ("", {"title": "mine", "user_id": "someone"}, None), names_ids=False
        ),
        "memory_conversation_retrieve": Case(_named()),
        "memory_conversation_update": Case(_named({"title": "changed", "summary_every": 3})),
        "memory_conversation_delete": Case(_named()),
        "memory_conversation_messages_list": Case(_named(query={"last": 5})),
        "memory_conversation_messages_add": Case(
            _named({"messages": [{"role": "user", "content": "injected"}]})
        ),
        "memory_conversation_turn_add": Case(
            _named({"user_input": "injected", "agent_response": "injected"})
        ),
        "memory_conversation_summaries_list": Case(_named()),
        "memory_conversation_summarize": Case(_named({"start_turn": 1, "end_turn": 2})),
        "memory_conversation_extract": Case(_named({"from_turn": 1, "to_turn": 2})),
        "memory_conversation_extractions_list": Case(_named()),
        # Context assembly: a foreign conversation is a missing one; no store of the
        # intruder's contributes to the context of a query naming its marker.
        "memory_context": Case(
            lambda t: (
                "",
                {
                    "query": "moved to Porto; deploys on Fridays; tomatoes and basil",
                    "conversation_id": t.conversation_id,  # type: ignore[union-attr]
                    "token_budget": 32000,
                },
                None,
            )
        ),
        # Long-term memory: context names are unique per account, ids answer like missing.
        "memory_contexts_list": Case(lambda t: ("", None, None), names_ids=False),
        "memory_contexts_create": Case(_context_create, names_ids=False, intruder_names=True),
        "memory_context_retrieve": Case(_named()),
        "memory_context_update": Case(_named({"description": "changed", "metadata": {}})),
        "memory_context_delete": Case(_named()),
        "memory_context_archive": Case(_named()),
        "memory_context_unarchive": Case(_named()),
        "memory_context_grants_list": Case(_named()),
        "memory_context_grant_create": Case(_grant_create),
        "memory_context_grant_revoke": Case(_named()),
        "memory_context_snapshots_list": Case(_named()),
        "memory_context_snapshot_create": Case(_named({"name": "snap"})),
        "memory_snapshot_restore": Case(_named()),
        "memory_context_entries_list": Case(_named(query={"include_archived": "true"})),
        "memory_context_entry_create": Case(_named({"content": "injected"})),
        "memory_context_entries_batch": Case(_named({"entries": [{"content": "injected"}]})),
        "memory_entry_create": Case(
            lambda t: ("", {"content": "injected", "context": t.context_id}, None)  # type: ignore[union-attr]
        ),
        "memory_entries_batch": Case(
            lambda t: (
                "",
                {"context": t.context_id, "entries": [{"content": "injected"}]},  # type: ignore[union-attr]
                None,
            )
        ),
        "memory_context_access_log": Case(_named()),
        "memory_pending_changes_list": Case(_pending_changes),
        "memory_pending_change_retrieve": Case(_named()),
        "maintenance_rot_report": Case(lambda t: ("", None, None), names_ids=False),
        "memory_entry_retrieve": Case(_named()),
        "memory_entry_update": Case(_named({"content": "changed", "importance": 0.1})),
        "memory_entry_delete": Case(_named()),
        "memory_entry_versions": Case(_named()),
        "memory_entry_importance": Case(_named({"delta": 0.3})),
        "memory_entry_archive": Case(_named({})),
        "memory_entry_unarchive": Case(_named({})),
        "memory_long_term_search": Case(_long_term_search(filters=True)),
        # Knowledge graph: node names are unique per account, ids answer like missing.
        "graph_nodes_list": Case(lambda t: ("", None, None), names_ids=False),
        # Graph RAG: knowledge base ids answer like missing ones; the rest reads the caller's.
        "rag_graph_retrieve": Case(_graph_retrieve),
        "rag_graph_context": Case(
            lambda t: ("", {"query": f"{INTRUDER}NODE city river harbour"}, None),
            names_ids=False,
        ),
        "rag_graph_communities_list": Case(lambda t: ("", None, None), names_ids=False),
        "rag_graph_communities_compute": Case(lambda t: ("", {"seed": 1}, None), names_ids=False),
        "graph_node_create": Case(_node_create, names_ids=False, intruder_names=True),
        "graph_node_retrieve": Case(_named()),
        "graph_node_update": Case(_named({"description": "changed", "aliases": ["x"]})),
        "graph_node_delete": Case(_named()),
        "graph_node_neighbors": Case(_named(query={"hops": 2})),
        "graph_path": Case(
            lambda t: ("", None, {"from": t.node_id, "to": t.other_node_id})  # type: ignore[union-attr]
        ),
        "graph_edge_create": Case(
            lambda t: (
                "",
                {"source_id": t.node_id, "target_id": t.other_node_id, "relation_type": "near"},  # type: ignore[union-attr]
                None,
            )
        ),
        "graph_edge_delete": Case(_named()),
    }
)


def _knowledge_query(filters: bool) -> Callable[[Target | None], Request]:
    def build(target: Target | None) -> Request:
        body: dict[str, Any] = {"query": f"{INTRUDER}KNOW tide turns noon"}
        if target is not None:
            body["bases"] = [target.knowledge_base]
        return "", body, None

    return build


def _knowledge_relate(target: Target | None) -> Request:
    assert target is not None
    ends = [{"base": target.knowledge_base, "key": k} for k in (target.memory_key, "harbour")]
    return "", {"source": ends[0], "target": ends[1], "relationship_type": "close_to"}, None


CASES.update(
    {
        # Knowledge items: base names are unique per account; the intruder's answer like
        # missing ones, and writing under them writes the caller's own base.
        "knowledge_bases_list": Case(lambda t: ("", None, None), names_ids=False),
        "knowledge_base_create": Case(
            lambda t: ("", {"name": t.knowledge_base}, None),  # type: ignore[union-attr]
            names_ids=False,
            intruder_names=True,
        ),
        "knowledge_item_put": _names({"content": "injected", "metadata": {"a": 1}}),
        "knowledge_item_retrieve": Case(_named()),
        "knowledge_items_list": Case(_named()),
        "knowledge_item_versions": Case(_named()),
        "knowledge_item_relationships": Case(_named()),
        "knowledge_query": Case(_knowledge_query(filters=True)),
        "knowledge_relationship_create": Case(_knowledge_relate),
    }
)


def _page_create(target: Target | None) -> Request:
    assert target is not None
    return "", {"title": target.page_title, "content": "[[Harbour Notes]] and harbour notes"}, None


def _article(target: Target | None) -> Request:
    # Articles are global: no account owns one. A published article is everyone's; drafts
    # (the intruder's carries its marker) are no one's, and never shown.
    published = Article.objects.filter(status="published").order_by("pk").first()
    assert published is not None
    return f"/{published.pk}", None, None


def _skill_create(target: Target | None) -> Request:
    assert target is not None
    body = {"name": "injected skill", "category": "testing"}
    return "", {**body, "dependencies": [{"skill_id": target.skill_id}]}, None


def _skills_discover(target: Target | None) -> Request:
    return "", {"description": f"{INTRUDER}SKILLDESC deploy service cluster"}, None


CASES.update(
    {
        # Pages: titles are unique per account (taking the intruder's must work), ids answer
        # like missing ones; the intruder's "Harbour Notes" links and mentions never show.
        "content_pages_list": Case(lambda t: ("", None, None), names_ids=False),
        "content_page_create": Case(_page_create, names_ids=False, intruder_names=True),
        "content_page_retrieve": Case(_named()),
        "content_page_update": Case(_named({"content": "changed", "aliases": ["x"]})),
        "content_page_delete": Case(_named()),
        "content_page_backlinks": Case(_named()),
        "content_page_unlinked_mentions": Case(_named()),
        "content_page_related": Case(_named(query={"limit": 50})),
        "content_page_broken_links": Case(_named()),
        "content_page_extract_links": Case(_named()),
        "content_page_generate_embedding": Case(_named()),
        "content_page_rename": Case(_named({"title": "Renamed Notes", "rewrite_links": True})),
        "content_articles_list": Case(lambda t: ("", None, None), names_ids=False),
        "content_article_retrieve": Case(_article, names_ids=False),
        # Skills: ids answer like missing ones, in the path and in bodies (dependencies).
        "skills_list": Case(lambda t: ("", None, {"status": "active"}), names_ids=False),
        "skills_create": Case(_skill_create),
        "skill_retrieve": Case(_named()),
        "skill_update": Case(_named({"description": "changed", "tags": ["x"]})),
        "skill_context": Case(_named()),
        "skills_discover": Case(_skills_discover, names_ids=False),
        "skill_versions_list": Case(_named()),
        "skill_versions_create": Case(_named({"version": "9.0.0", "change_type": "major"})),
        "skill_version_activate": Case(_named()),
        "skill_traffic_set": Case(_named({"traffic": {"1.0.0": 1.0}})),
        "skill_proposals_create": Case(
            lambda t: ("", {"name": t.proposal_name, "description": "deploy"}, None),  # type: ignore[union-attr]
            names_ids=False,
            intruder_names=True,
        ),
        "skill_proposal_retrieve": Case(_named()),
        "skill_proposal_submit": Case(_named()),
        # Learning profiles and assignment: agents and tasks answer like missing ones.
        "agents_rank": Case(
            lambda t: ("", {"title": "deploy", "task_type": "deployment"}, None), names_ids=False
        ),
        "tasks_assign": Case(lambda t: ("", {"title": "assign", "agent_ids": [t.agent_id]}, None)),  # type: ignore[union-attr]
        "task_complete": Case(_named({"success": True})),
        "agent_learning_profile": Case(_named()),
        # Conflicts: a foreign skill id filters to nothing, like a missing one.
        "skills_conflicts_list": Case(lambda t: ("", None, {"skill_id": t.other_skill_id})),  # type: ignore[union-attr]
        "skills_usage_record": Case(
            lambda t: (
                "",
                {"agent_id": t.agent_id, "skill_id": t.skill_id, "task_type": "x", "success": True},  # type: ignore[union-attr]
                None,
            )
        ),
    }
)

# Searches without filters: the intruder's text is what they look for, and must not be found.
UNFILTERED_SEARCHES = {
    "rag_search": _search(filters=False),
    "rag_query": _search(filters=False),
    "rag_agentic": lambda t: ("", {"query": "tomatoes basil garden"}, None),
    "memory_long_term_search": _long_term_search(filters=False),
    "graph_nodes_list": lambda t: ("", None, {"query": f"{INTRUDER}NODE city river"}),
    "rag_graph_retrieve": _graph_retrieve,
    "skills_discover": _skills_discover,
    "knowledge_query": _knowledge_query(filters=False),
}


def schema_operations() -> dict[str, tuple[str, str]]:
    """operationId -> (method, path) of every operation in the OpenAPI schema."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        operation["operationId"]: (method.upper(), path)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
    }


OPERATIONS = schema_operations()


def test_every_operation_in_the_schema_has_a_tenancy_case() -> None:
    assert sorted(set(OPERATIONS) - set(CASES)) == [], "add a case for each new operation"
    assert sorted(set(CASES) - set(OPERATIONS)) == []


@pytest.fixture(scope="module")
def _sides_built(
    django_db_setup: None, django_db_blocker: Any
) -> Iterator[SharedWorld[tuple[Side, Side]]]:
    """Both sides, built once per module and worker (tests/support/world.py, shared_world)."""
    with shared_world(
        django_db_blocker,
        lambda capture: (build_side(OWN, capture), build_side(INTRUDER, capture)),
        state=lambda sides: (intruder_state(sides[0]), intruder_state(sides[1])),
    ) as world:
        yield world


@pytest.fixture
def sides(_sides_built: SharedWorld[tuple[Side, Side]], db: None) -> tuple[Side, Side]:
    """The two sides as built: each case's writes are rolled back, Redis is put back."""
    return _sides_built.fresh()


def intruder_state(side: Side) -> Any:
    """Everything of the intruder's that a request could change."""
    account = side.account.pk
    return (
        list(
            Conversation.objects.filter(account=account).values_list(
                "id", "title", "user_id", "summary", "message_count", "summary_every"
            )
        ),
        list(
            Extraction.objects.filter(account=account)
            .order_by("pk")
            .values_list("id", "decision", "fact", "knowledge_item", "graph_node")
        ),
        list(
            KnowledgeBase.objects.filter(account=account).values_list(
                "id", "name", "description", "status", "chunk_count", "total_terms"
            )
        ),
        list(
            Document.objects.filter(account=account).values_list(
                "id", "title", "status", "checksum", "indexed_at"
            )
        ),
        Chunk.objects.filter(account=account).count(),
        list(Agent.objects.filter(account=account).values_list("id", "name", "status")),
        list(
            ApiKey.objects.filter(agent__account=account).values_list(
                "prefix", "name", "revoked_at", "scopes"
            )
        ),
        list(Team.objects.filter(account=account).values_list("id", "name")),
        SearchQuery.objects.filter(account=account).count(),
        list(
            ShortTermEntry.objects.filter(account=account).values_list(
                "id", "key", "value", "memory_type", "access_count", "expires_at"
            )
        ),
        list(
            MemoryPool.objects.filter(account=account).values_list(
                "pool_id", "name", "version", "data", "public_read", "expires_at"
            )
        ),
        list(MemoryPoolGrant.objects.filter(pool__account=account).values_list("agent", "level")),
        MemoryPoolEvent.objects.filter(account=account).count(),
        list(
            WorkingMemorySnapshot.objects.filter(account=account).values_list(
                "session_id", "entries", "updated_at"
            )
        ),
        _working_memory(side),
        _long_term_memory(account),
        _knowledge_graph(account),
        _knowledge_items(account),
        _pages(account),
        _skills(account),
        list(
            PortabilityJob.objects.filter(account=account)
            .order_by("pk")
            .values_list("id", "kind", "status", "progress", "archive", "attempts")
        ),
    )


def _pages(account: int) -> Any:
    return list(
        Page.objects.filter(account=account)
        .order_by("pk")
        .values_list("id", "title", "slug", "content", "aliases", "status", "embedded_checksum")
    )


def _skills(account: int) -> Any:
    return (
        list(
            Skill.objects.filter(account=account)
            .order_by("pk")
            .values_list(
                "id", "name", "description", "status", "tags", "keyword_length", "usage_count"
            )
        ),
        list(
            SkillVersion.objects.filter(account=account)
            .order_by("pk")
            .values_list("id", "version", "is_active", "traffic_share", "success_count")
        ),
        list(SkillScope.objects.filter(account=account).values_list("skill_count", "total_terms")),
        list(
            AgentSkill.objects.filter(account=account)
            .order_by("pk")
            .values_list("agent", "skill", "proficiency", "usage_count")
        ),
        SkillUsage.objects.filter(account=account).count(),
        list(
            LearningProfile.objects.filter(account=account)
            .order_by("pk")
            .values_list("agent", "task_type", "executions", "success_rate")
        ),
        list(AgentTrust.objects.filter(account=account).values_list("agent", "trust_score")),
        list(
            SkillProposal.objects.filter(account=account)
            .order_by("pk")
            .values_list("id", "name", "status", "decision_reason", "expires_at")
        ),
        list(
            TaskAssignment.objects.filter(account=account)
            .order_by("pk")
            .values_list("id", "agent", "status", "completed_at")
        ),
        list(
            SkillConflict.objects.filter(account=account)
            .order_by("pk")
            .values_list("id", "status", "priority", "last_seen_at")
        ),
    )


def _knowledge_graph(account: int) -> Any:
    return (
        list(
            GraphNode.objects.filter(account=account)
            .order_by("pk")
            .values_list("id", "name", "aliases", "description", "mention_count", "keyword_length")
        ),
        list(
            GraphEdge.objects.filter(account=account)
            .order_by("pk")
            .values_list("id", "source", "target", "relation_type", "metadata")
        ),
        list(GraphScope.objects.filter(account=account).values_list("node_count", "total_terms")),
    )


def _knowledge_items(account: int) -> Any:
    return (
        list(
            KnowledgeStore.objects.filter(account=account)
            .order_by("pk")
            .values_list("id", "name", "description", "knowledge_type", "item_count", "total_terms")
        ),
        list(
            KnowledgeItem.objects.filter(account=account)
            .order_by("pk")
            .values_list(
                "id",
                "key",
                "version",
                "is_current",
                "content",
                "metadata",
                "valid_to",
                "graph_node",
            )
        ),
        list(
            KnowledgeSource.objects.filter(account=account)
            .order_by("pk")
            .values_list("item", "source_type", "source_id", "reliability")
        ),
    )


def _long_term_memory(account: int) -> Any:
    return (
        list(
            MemoryContext.objects.filter(account=account).values_list(
                "id", "name", "description", "metadata", "archived_at", "entry_count", "total_terms"
            )
        ),
        list(
            MemoryEntry.objects.filter(account=account)
            .order_by("pk")
            .values_list(
                "id",
                "version",
                "is_current",
                "content",
                "importance",
                "access_count",
                "last_accessed_at",
                "archived_at",
            )
        ),
        list(
            MemoryContextGrant.objects.filter(context__account=account).values_list(
                "agent", "level"
            )
        ),
        list(MemorySnapshot.objects.filter(account=account).values_list("id", "name")),
        MemoryAccessLog.objects.filter(account=account).count(),
        list(
            PendingChange.objects.filter(account=account).values_list(
                "id", "status", "decided_at", "result"
            )
        ),
        list(
            MemoryMaintenanceReport.objects.filter(account=account)
            .order_by("pk")
            .values_list("id", "status", "kept_count", "checks", "undone_at")
        ),
        list(
            MaintenanceJob.objects.filter(account=account)
            .order_by("pk")
            .values_list("id", "status", "report", "attempts")
        ),
    )


def _working_memory(side: Side) -> Any:
    """The intruder's working memory (kinds, names and values; TTLs tick on their own) and
    its inbox."""
    session = working_redis.session_namespace(side.account.pk, side.agent.pk, side.session_id)
    inbox = working_redis.inbox_namespace(side.account.pk, side.agent.pk)
    entries = [(e["name"], e["kind"], e["value"]) for e in read_session(session)]
    return entries, working_redis.index_members(memory_redis(), inbox.index)


def call(
    client: APIClient, method: str, path: str, request: Request, capture: Any
) -> tuple[int, Any, str]:
    suffix, body, query = request
    if isinstance(suffix, dict):
        url = path.format(**suffix)
    else:
        url = path.split("{", 1)[0].rstrip("/") + suffix + path_tail(path)
    with capture(execute=True):
        response = client.generic(
            method,
            url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""),
            json.dumps(body) if body is not None else "",
            content_type="application/json",
        )
    if getattr(response, "streaming", False):  # the export's download: a gzip archive
        data = b"".join(response.streaming_content)  # type: ignore[attr-defined]
        text = gzip.decompress(data).decode(errors="replace")
        return response.status_code, {"streamed_bytes": len(data)}, text
    text = response.content.decode()
    return response.status_code, (json.loads(text) if text else None), text


def path_tail(path: str) -> str:
    """What follows the path's one parameter (``/status`` of ``.../{kb_id}/status``)."""
    return path.split("}", 1)[1] if "}" in path else ""


# Fields that name things (``id``, ``kb_id``, ``document_ids``, ``key``, ``base``...): only their
# values are masked, so that a count or a version equal to an id (``2`` in a fresh database)
# stays as it is on both sides.
_NAMING_KEYS = {"id", "ids", "key", "keys", "name", "names", "prefix", "base", "bases"}


def _names_things(key: str) -> bool:
    return key in _NAMING_KEYS or key.endswith(("_id", "_ids", "_name", "_key", "_prefix"))


def _masked(value: Any, target: set[str], naming: bool) -> Any:
    if isinstance(value, dict):
        # How long each stage took (``timings_ms``) is not an answer.
        return {
            k: _masked(v, target, _names_things(k)) for k, v in value.items() if k != "timings_ms"
        }
    if isinstance(value, list):
        return [_masked(item, target, naming) for item in value]
    if naming and not isinstance(value, bool) and str(value) in target:
        return "<id>"
    if isinstance(value, str) and "\n{" in value:
        # A tool's text rendering: a summary line, then the answer's JSON.
        summary, _, rendered = value.partition("\n")
        try:
            answer = json.loads(rendered)
        except ValueError:
            return value
        return [summary, _masked(answer, target, naming)]
    return value


def normalised(body: Any, target: Target) -> str:
    """The answer as text with the target's ids masked where a field names something (a
    tool's text rendering parsed to find its fields)."""
    return json.dumps(_masked(body, target.values(), naming=False), sort_keys=True)


@pytest.mark.parametrize("operation_id", sorted(OPERATIONS))
def test_foreign_ids_answer_like_missing_ones_and_nothing_leaks(
    operation_id: str, sides: tuple[Side, Side], django_capture_on_commit_callbacks: Any
) -> None:
    own, intruder = sides
    _, secret = services.api_key_create(
        actor=actor_for_account(own.account.pk), agent=own.agent, scopes=["admin"]
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    method, path = OPERATIONS[operation_id]
    case = CASES[operation_id]
    before = intruder_state(intruder)
    seen: list[str] = []

    def run(request: Request) -> tuple[int, Any]:
        status, body, text = call(client, method, path, request, django_capture_on_commit_callbacks)
        seen.append(text)
        return status, body

    if case.intruder_names:
        status, body = run(case.build(Target.of(intruder)))
    elif case.names_ids:
        foreign_target, missing_target = Target.of(intruder), Target.missing()
        foreign = run(case.build(foreign_target))
        missing = run(case.build(missing_target))
        assert foreign[0] == missing[0], (operation_id, foreign, missing)
        assert normalised(foreign[1], foreign_target) == normalised(missing[1], missing_target)
        assert intruder_state(intruder) == before, f"{operation_id} changed the intruder's data"
        status, body = run(case.build(Target.of(own)))
    else:
        status, body = run(case.build(None))
    if case.expected is not None:
        assert status == case.expected, (operation_id, status, body)
    else:
        assert 200 <= status < 300, (operation_id, status, body)
    if operation_id in UNFILTERED_SEARCHES:
        status, body = run(UNFILTERED_SEARCHES[operation_id](None))
        if operation_id == "rag_agentic":  # its hits are its sources
            body = {**body, "results": body["sources"]}
        assert status == 200 and body["results"], "the caller's own data should be found"
        if operation_id == "memory_long_term_search":
            found = {hit["context_id"] for hit in body["results"]}
            mine = set(
                MemoryContext.objects.filter(account=own.account).values_list("pk", flat=True)
            )
            assert own.ltm_context.pk in found and found <= mine  # type: ignore[union-attr]
        elif operation_id == "knowledge_query":
            found = {hit["item"]["id"] for hit in body["results"]}
            assert own.knowledge_item.pk in found  # type: ignore[union-attr]
            assert not found & set(
                KnowledgeItem.objects.filter(account=intruder.account).values_list("pk", flat=True)
            )
        elif operation_id == "skills_discover":
            found = {hit["skill"]["id"] for hit in body["results"]}
            assert own.skill.pk in found  # type: ignore[union-attr]
            assert not found & set(
                Skill.objects.filter(account=intruder.account).values_list("pk", flat=True)
            )
        elif operation_id == "graph_nodes_list":
            found = {hit["node"]["id"] for hit in body["results"]}
            assert own.graph_other_node.pk in found  # type: ignore[union-attr]
            assert not found & set(
                GraphNode.objects.filter(account=intruder.account).values_list("pk", flat=True)
            )
        else:
            found = {hit["document_id"] for hit in body["results"]}
            assert intruder.document.pk not in found
    if operation_id == "rag_analytics":
        counted = sum(mode["queries"] for mode in body["modes"])
        assert counted == SearchQuery.objects.filter(account=own.account).count()
    assert intruder_state(intruder) == before, f"{operation_id} changed the intruder's data"
    if operation_id == "rag_kb_create":
        seen.pop()  # the caller's new knowledge base carries the name the caller chose
    for text in seen:
        assert INTRUDER not in text and INTRUDER.lower() not in text, (operation_id, text[:500])
