"""Two accounts with data of every kind and a staff user per role in each: the "intruder with
data" fixture of the admin and API tenancy tests. Every object's text carries its account's
marker, so a test can assert that a foreign account's marker never appears in any response.
Apps that add kinds of data add them to ``build_side``."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import redis
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import TestCase

from content import services as content_services
from content.models import Article, Page
from core import services
from core.actors import ROLES, actor_for_account, actor_for_agent, actor_for_user
from core.audit import audit_record
from core.models import (
    Account,
    Agent,
    ApiKey,
    AuditEvent,
    Membership,
    PortabilityJob,
    Team,
)
from core.portability import jobs as portability_jobs
from memory.context.services import tools as memory_tools
from memory.conversations import services as conversation_services
from memory.conversations.extraction import services as extraction_services
from memory.knowledge import services as knowledge_services
from memory.long_term import services as ltm_services
from memory.maintenance.services import changes as change_services
from memory.maintenance.services import cluster_maintenance
from memory.maintenance.services import jobs as maintenance_jobs
from memory.models import (
    Conversation,
    Extraction,
    KnowledgeItem,
    KnowledgeStore,
    MaintenanceJob,
    MemoryAccessLog,
    MemoryContext,
    MemoryEntry,
    MemoryMaintenanceReport,
    MemoryPool,
    MemoryPoolEvent,
    MemorySnapshot,
    PendingChange,
    ShortTermEntry,
)
from memory.pools import data_services as pool_data_services
from memory.pools import services as pool_services
from memory.short_term import services as short_term_services
from memory.working import services as working_services
from rag import services as rag_services
from rag.graph.services import nodes as graph_services
from rag.graph.services.communities import communities_compute
from rag.models import (
    Chunk,
    Document,
    GraphCommunity,
    GraphEdge,
    GraphNode,
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
    SkillUsage,
    SkillVersion,
    TaskAssignment,
)
from skills.services import catalog as skill_services
from skills.services import conflicts as conflict_services
from skills.services import learning as learning_services
from skills.services import proposals as proposal_services
from skills.services import usage as usage_services
from skills.services import versions as version_services
from tests.factories import AccountFactory, UserFactory

PASSWORD = "correct horse battery staple"

T = TypeVar("T")


@dataclass
class Side:
    marker: str
    account: Account
    users: dict[str, User]
    team: Team
    agent: Agent
    key: ApiKey
    kb: KnowledgeBase
    document: Document
    chunk: Chunk
    query: SearchQuery
    audit: AuditEvent
    membership: Membership
    objects: dict[str, Any] = field(default_factory=dict)
    # Memory: names without the marker (requests name them; answers may echo them), values
    # with it. The working-memory session holds ``memory_key``, a task state and a scratch
    # pad, and was persisted; the agent shared ``memory_key`` with itself.
    session_id: str = ""
    memory_key: str = ""
    pool_id: str = ""
    run_id: str = ""
    short_term: ShortTermEntry | None = None
    pool: MemoryPool | None = None
    pool_event: MemoryPoolEvent | None = None
    # Long-term memory: a context (named without the marker) with two entries (one updated
    # to a second version), a grant to the side's agent, a snapshot and an access log row.
    context_name: str = ""
    ltm_context: MemoryContext | None = None
    ltm_entry: MemoryEntry | None = None
    ltm_snapshot: MemorySnapshot | None = None
    # A pending change (review before change) of the context: archive its older entry (the
    # reason carries the marker).
    pending_change: PendingChange | None = None
    # A cluster maintenance report: a dry run over the side's context.
    maintenance_report: MemoryMaintenanceReport | None = None
    # A maintenance job the side's agent asked for (a dry run of its context), completed.
    maintenance_job: MaintenanceJob | None = None
    # A conversation (user id and title with the marker) with two messages (metadata with the
    # marker) and a summary.
    conversation: Conversation | None = None
    # Knowledge items: a base named without the marker holding the item ``memory_key`` (two
    # versions with sources; its content carries the marker), related to a second item.
    knowledge_base_name: str = ""
    knowledge_base: KnowledgeStore | None = None
    knowledge_item: KnowledgeItem | None = None
    # Knowledge graph: a node named without the marker (requests name it; its description
    # carries the marker), a node named with it, and a bidirectional edge between them.
    node_name: str = ""
    graph_node: GraphNode | None = None
    graph_other_node: GraphNode | None = None
    graph_edge: GraphEdge | None = None
    graph_community: GraphCommunity | None = None
    # Pages: "Harbour Notes" (the same title on both sides; its alias carries the marker) is
    # linked from a page named without the marker and mentioned, unlinked, by one named with
    # it; a draft article (never shown by the API) carries the marker, a published one not.
    page_title: str = ""
    page: Page | None = None
    linking_page: Page | None = None
    mentioning_page: Page | None = None
    draft_article: Article | None = None
    article: Article | None = None
    # Skills: one named without the marker (requests name it; its description carries the
    # marker), one named with it that depends on the first, and the side's agent assigned to it.
    skill_name: str = ""
    skill: Skill | None = None
    other_skill: Skill | None = None
    agent_skill: AgentSkill | None = None
    skill_version: SkillVersion | None = None
    # A draft proposal named without the marker, and an approved one with a sub-proposal.
    proposal_name: str = ""
    proposal: SkillProposal | None = None
    # An open task assigned to the side's agent.
    task: TaskAssignment | None = None
    # An export of the account (succeeded: its archive can be downloaded) and an import of a
    # file that is not an archive (failed), both run by the Celery task.
    export_job: PortabilityJob | None = None
    import_job: PortabilityJob | None = None


def build_side(marker: str, capture_on_commit: Callable[..., Any]) -> Side:
    lower = marker.lower()
    account = AccountFactory.create(name=f"{marker}ACCOUNT", slug=lower)
    tool = actor_for_account(account.pk)
    users: dict[str, User] = {}
    for role in ROLES:
        user = UserFactory.create(username=f"{lower}-{role}", is_staff=True)
        services.membership_grant(account=account, user=user, role=role)
        users[role] = user
    team = services.team_create(actor=tool, account=account, name=f"{marker}TEAM")
    agent = services.agent_create(actor=tool, account=account, name=f"{marker}AGENT", teams=[team])
    key, _ = services.api_key_create(actor=tool, agent=agent, name=f"{marker}KEY")
    kb = rag_services.knowledge_base_create(actor=tool, name=f"{marker}KB")
    with capture_on_commit(execute=True):
        document = rag_services.document_create(
            actor=tool,
            kb=kb,
            data=f"# Garden\n\n{marker}CHUNK notes about tomatoes and basil.".encode(),
            filename="garden.md",
            title=f"{marker}DOC",
        )
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.error
    rag_services.search_run(actor=actor_for_agent(agent), query=f"{marker}QUERY tomatoes")
    audit = audit_record(
        actor=tool,
        action="test.marker",
        account_id=account.pk,
        target_type="test",
        target_id=f"{marker}AUDIT",
    )
    memory = _memory(marker, account, agent, capture_on_commit)
    knowledge_graph = _graph(marker, account, agent)
    knowledge = _knowledge(marker, agent, memory["memory_key"])
    pages = _content(marker, account, agent, capture_on_commit)
    skills = _skills(marker, account, agent, users)
    with capture_on_commit(execute=True):
        export_job = portability_jobs.export_job_enqueue(actor=tool)
        import_job = portability_jobs.import_job_enqueue(
            actor=tool, upload=SimpleUploadedFile("a.tar.gz", f"{marker}ARCHIVE".encode())
        )
    side = Side(
        marker=marker,
        account=account,
        users=users,
        team=team,
        agent=agent,
        key=key,
        kb=kb,
        document=Document.objects.defer("original").get(pk=document.pk),
        chunk=Chunk.objects.get(document=document),
        query=SearchQuery.objects.get(account=account),
        audit=audit,
        membership=Membership.objects.get(user=users["reviewer"], account=account),
        **memory,
        **knowledge_graph,
        **knowledge,
        **pages,
        **skills,
        export_job=PortabilityJob.objects.get(pk=export_job.pk, status="succeeded"),
        import_job=PortabilityJob.objects.get(pk=import_job.pk, status="failed"),
    )
    side.objects = {
        "core.account": side.account,
        "core.team": side.team,
        "core.agent": side.agent,
        "core.apikey": side.key,
        "core.auditevent": side.audit,
        "core.portabilityjob": side.export_job,
        "rag.knowledgebase": side.kb,
        "rag.document": side.document,
        "rag.chunk": side.chunk,
        "rag.searchquery": side.query,
        "memory.shorttermentry": side.short_term,
        "memory.memorypool": side.pool,
        "memory.memorypoolevent": side.pool_event,
        "memory.memorycontext": side.ltm_context,
        "memory.memoryentry": side.ltm_entry,
        "memory.memorysnapshot": side.ltm_snapshot,
        "memory.pendingchange": side.pending_change,
        "memory.memorymaintenancereport": side.maintenance_report,
        "memory.maintenancejob": side.maintenance_job,
        "memory.memoryaccesslog": MemoryAccessLog.objects.get(account=account),
        "memory.conversation": side.conversation,
        "memory.extraction": Extraction.objects.filter(account=account).first(),
        "memory.knowledgestore": side.knowledge_base,
        "memory.knowledgeitem": side.knowledge_item,
        "rag.graphnode": side.graph_other_node,
        "rag.graphedge": side.graph_edge,
        "rag.graphcommunity": side.graph_community,
        "content.page": side.mentioning_page,
        "content.article": side.draft_article,
        "skills.skill": side.other_skill,
        "skills.skillversion": side.skill_version,
        "skills.skillproposal": side.proposal,
        "skills.skillconflict": SkillConflict.objects.filter(account=account).first(),
        "skills.skillusage": SkillUsage.objects.filter(account=account).first(),
        "skills.learningprofile": LearningProfile.objects.filter(account=account).first(),
        "skills.taskassignment": side.task,
        "skills.agenttrust": AgentTrust.objects.get(account=account),
    }
    return side


def _content(
    marker: str, account: Account, agent: Agent, capture_on_commit: Callable[..., Any]
) -> dict[str, Any]:
    actor = actor_for_agent(agent)
    page_title = f"page-{account.pk}"
    staff = actor_for_user(UserFactory.create(username=f"{marker.lower()}-staff", is_staff=True))
    with capture_on_commit(execute=True):
        page = content_services.page_create(
            actor=actor,
            title="Harbour Notes",
            content=f"{marker}PAGETEXT tides and moorings.",
            aliases=[f"{marker}ALIAS"],
            status="published",
        )
        linking = content_services.page_create(
            actor=actor, title=page_title, content=f"{marker}LINK see [[Harbour Notes]]."
        )
        mentioning = content_services.page_create(
            actor=actor, title=f"{marker}PAGE", content="The harbour notes say little."
        )
        draft = content_services.article_save(
            actor=staff,
            article=None,
            fields={"title": f"{marker}DRAFT", "content": f"{marker}ARTICLE", "status": "draft"},
        )
        article = content_services.article_save(
            actor=staff,
            article=None,
            fields={
                "title": f"article-{account.pk}",
                "content": "Tides for everyone.",
                "status": "published",
            },
        )
    return {
        "page_title": page_title,
        "page": Page.objects.get(pk=page.pk),
        "linking_page": Page.objects.get(pk=linking.pk),
        "mentioning_page": Page.objects.get(pk=mentioning.pk),
        "draft_article": draft,
        "article": Article.objects.get(pk=article.pk),
    }


def _skills(marker: str, account: Account, agent: Agent, users: dict[str, User]) -> dict[str, Any]:
    reviewer = actor_for_user(users["reviewer"])
    skill_name = f"skill-{account.pk}"
    base = skill_services.skill_create(
        actor=reviewer,
        account_id=account.pk,
        name=skill_name,
        category="deployment",
        status="active",
        description=f"{marker}SKILLDESC deploy a service to the cluster.",
        procedure=f"{marker}PROCEDURE helm upgrade.",
    )
    other = skill_services.skill_create(
        actor=reviewer,
        account_id=account.pk,
        name=f"{marker}SKILL",
        category="testing",
        status="active",
        description="Smoke-test a deployed service.",
        dependencies=[skill_services.DependencyInput(base.pk, "^1.0.0")],
    )
    assignment = skill_services.agent_skill_set(
        actor=reviewer, skill=other, agent_id=agent.pk, proficiency=0.7
    )
    # An A/B test on the first skill, and usage of both.
    variant = version_services.version_create(
        actor=reviewer,
        skill=base,
        version="1.1.0",
        change_type="experimental",
        content=f"{marker}VARIANT helm upgrade --atomic.",
        traffic={"1.0.0": 0.5, "1.1.0": 0.5},
    )
    usage_services.usage_record(
        actor=actor_for_agent(agent),
        records=[
            usage_services.UsageInput(
                agent_id=agent.pk, skill_id=base.pk, task_type="deployment", success=True
            ),
            usage_services.UsageInput(
                agent_id=agent.pk, skill_id=other.pk, task_type="testing", success=False
            ),
        ],
    )
    # Proposals: a draft (named without the marker), and one approved with a sub-proposal.
    proposal_name = f"proposal-{account.pk}"
    draft = proposal_services.research_and_propose(
        actor=actor_for_agent(agent),
        name=proposal_name,
        description=f"{marker}PROPOSAL roll back a failed release.",
        category="deployment",
    )
    approved = proposal_services.research_and_propose(
        actor=actor_for_agent(agent),
        name=f"{marker}APPROVED canary release",
        category="deployment",
        dependencies=[f"{marker}MISSING traffic split"],
        submit=True,
    )
    proposal_services.proposal_approve(actor=reviewer, proposal=approved, reason=f"{marker}WHY")
    # A task assigned to the agent (open), and one it completed.
    task = learning_services.task_assign(
        actor=actor_for_agent(agent), title=f"{marker}TASK ship it", task_type="deployment"
    )
    done = learning_services.task_assign(
        actor=actor_for_agent(agent), title=f"{marker}DONE review", task_type="code_review"
    )
    learning_services.task_complete(actor=actor_for_agent(agent), assignment=done, success=True)
    # A draft named almost like the marker skill: the scan finds a naming conflict.
    skill_services.skill_create(
        actor=actor_for_agent(agent), name=f"{marker}SKILLS", category="testing"
    )
    conflict_services.conflicts_scan(account_id=account.pk)
    return {
        "task": TaskAssignment.objects.get(pk=task.pk),
        "proposal_name": proposal_name,
        "proposal": SkillProposal.objects.get(pk=draft.pk),
        "skill_name": skill_name,
        "skill": Skill.objects.get(pk=base.pk),
        "other_skill": Skill.objects.get(pk=other.pk),
        "agent_skill": AgentSkill.objects.get(pk=assignment.pk),
        "skill_version": SkillVersion.objects.get(pk=variant.pk),
    }


def _graph(marker: str, account: Account, agent: Agent) -> dict[str, Any]:
    actor = actor_for_agent(agent)
    node_name = f"node-{account.pk}"
    place = graph_services.node_create(
        actor=actor,
        name=node_name,
        entity_type="place",
        aliases=[f"{marker}ALIAS"],
        description=f"{marker}GRAPH a harbour on the coast.",
    )
    city = graph_services.node_create(
        actor=actor, name=f"{marker}NODE", entity_type="place", description="A city by the river."
    )
    edge = graph_services.edge_create(
        actor=actor,
        source_id=city.pk,
        target_id=place.pk,
        relation_type="located_in",
        bidirectional=True,
        metadata={"note": f"{marker}EDGE"},
    )
    port = graph_services.node_create(
        actor=actor, name=f"{marker}PORT", entity_type="place", description="A port by the sea."
    )
    for source in (place, city):
        graph_services.edge_create(
            actor=actor, source_id=port.pk, target_id=source.pk, relation_type="near"
        )
    # Its graph has communities too (Leiden over the nodes above and the document's entities).
    communities_compute(account_id=account.pk)
    return {
        "node_name": node_name,
        "graph_community": GraphCommunity.objects.filter(members__node=city).first(),
        "graph_node": GraphNode.objects.get(pk=place.pk),
        "graph_other_node": GraphNode.objects.get(pk=city.pk),
        "graph_edge": GraphEdge.objects.get(pk=edge.pk),
    }


def _memory(
    marker: str, account: Account, agent: Agent, capture_on_commit: Callable[..., Any]
) -> dict[str, Any]:
    """Data of every memory tier: working memory (Redis), short-term entry, pool with a
    bulletin event, bound to a workflow run."""
    actor = actor_for_agent(agent)
    session_id, key = f"s{account.pk}", f"k{account.pk}"
    pool_id, run_id = f"pool-{account.pk}", f"run-{account.pk}"
    note = {"note": f"{marker}WM"}
    working_services.working_store(actor=actor, session_id=session_id, key=key, value=note)
    working_services.working_state_store(
        actor=actor, session_id=session_id, kind="task_state", value=note
    )
    working_services.working_scratch_pad_store(
        actor=actor, session_id=session_id, content=f"{marker}PAD"
    )
    for kind, name in (("step", "plan"), ("tool_state", "search")):
        working_services.working_state_store(
            actor=actor, session_id=session_id, kind=kind, name=name, value=note
        )
    working_services.working_persist(actor=actor, session_id=session_id)
    working_services.working_share(actor=actor, agent_id=agent.pk, key=key, value=note)
    entry, _ = short_term_services.short_term_put(
        actor=actor, session_id=session_id, key=key, value={"note": f"{marker}STM"}
    )
    pool = pool_services.pool_create(
        actor=actor,
        pool_id=pool_id,
        name=f"{marker}POOL",
        data={"note": f"{marker}DATA"},
        workflow_run_id=run_id,
        workflow_kind="blackboard",
    )
    with capture_on_commit(execute=True):
        pool_data_services.pool_data_write(
            actor=actor, pool=pool, path="agent_bulletin.note", value=f"{marker}EVENT"
        )
    pool_services.pool_grant_set(actor=actor, pool=pool, agent_id=agent.pk, level="write")
    context_name = f"ltm-{account.pk}"
    context = ltm_services.context_create(
        actor=actor, name=context_name, description=f"{marker}LTMCTX", metadata={"m": marker}
    )
    first, _ = ltm_services.entries_write(
        actor=actor,
        context=context,
        items=[
            ltm_services.EntryInput(content=f"{marker}LTM notes about the deploy on Fridays."),
            ltm_services.EntryInput(content=f"{marker}LTM the office is in Lisbon.", tags=[marker]),
        ],
    )
    current = ltm_services.entry_update(
        actor=actor, entry=first, fields={"content": f"{marker}LTM deploys happen on Fridays."}
    )
    ltm_services.context_grant(actor=actor, context=context, agent_id=agent.pk, level="write")
    snapshot = ltm_services.snapshot_create(actor=actor, context=context, name=f"{marker}SNAP")
    ltm_services.entries_accessed(actor=actor, entries=[current], action="read")
    ltm_services.access_flush()  # reads are buffered until a flush applies them
    pending = change_services.change_submit(
        actor=actor,
        account_id=account.pk,
        kind="rot_archive",
        context=context,
        policy="review",
        payload={"context_id": context.pk, "entry_ids": [current.pk]},
        before={"entries": [{"id": current.pk, "content": current.content}]},
        after={"entries": [], "archived": [current.pk]},
        reason=f"{marker}CHANGE the entry went stale",
    ).change
    report = cluster_maintenance.maintenance_run(
        account_id=account.pk, trigger="command", dry_run=True, context_ids=[context.pk]
    )
    with capture_on_commit(execute=True):
        job = maintenance_jobs.maintenance_job_enqueue(
            actor=actor, trigger="api", dry_run=True, context_ids=[context.pk]
        )
    # A memory written through the memory tools in a run, linked to an entry, and a search.
    written = memory_tools.memory_tool_write(
        actor=actor,
        text=f"{marker}TOOL the release train leaves every second Thursday afternoon",
        related=[{"kind": "entry", "id": current.pk}],
        run_id=run_id,
    )
    assert written.written, written
    memory_tools.memory_tool_search(actor=actor, query="release train", run_id=run_id)
    conversation = conversation_services.conversation_create(
        actor=actor, title=f"{marker}CONV", user_id=f"{marker}USER", summary_every=0
    )
    conversation_services.messages_append(
        actor=actor,
        conversation=conversation,
        messages=[
            conversation_services.MessageInput(
                "user", f"{marker}MSG I moved to Porto in May.", "Ana", metadata={"m": marker}
            ),
            conversation_services.MessageInput("assistant", f"{marker}MSG Porto is lovely."),
        ],
    )
    conversation_services.summary_create(actor=actor, conversation=conversation)
    # Extraction: a fact (``ana.moved_to``), entities (Ana, Porto, May) and a relation.
    made = extraction_services.extraction_run(actor=actor, conversation=conversation)
    assert made.counts["facts"] >= 1, made.counts
    return {
        "conversation": Conversation.objects.get(pk=conversation.pk),
        "session_id": session_id,
        "memory_key": key,
        "pool_id": pool_id,
        "run_id": run_id,
        "short_term": ShortTermEntry.objects.get(pk=entry.pk),
        "pool": MemoryPool.objects.get(pk=pool.pk),
        "pool_event": MemoryPoolEvent.objects.get(pool=pool),
        "context_name": context_name,
        "ltm_context": MemoryContext.objects.get(pk=context.pk),
        "ltm_entry": MemoryEntry.objects.get(pk=current.pk),
        "ltm_snapshot": MemorySnapshot.objects.get(pk=snapshot.pk),
        "pending_change": PendingChange.objects.get(pk=pending.pk),  # type: ignore[union-attr]
        "maintenance_report": MemoryMaintenanceReport.objects.get(pk=report.pk),
        "maintenance_job": MaintenanceJob.objects.get(pk=job.pk, status="completed"),
    }


def _knowledge(marker: str, agent: Agent, key: str) -> dict[str, Any]:
    actor = actor_for_agent(agent)
    name = f"kb-{agent.account_id}"
    store = knowledge_services.store_create(
        actor=actor, name=name, knowledge_type="procedural", description=f"{marker}KNOWBASE"
    )
    source = knowledge_services.SourceInput("agent", f"{marker}SOURCE", 0.5)
    for content in (f"{marker}KNOW the tide turns at noon", f"{marker}KNOW tides turn at one"):
        item = knowledge_services.knowledge_item_put(
            actor=actor, base=name, key=key, content=content, sources=[source]
        ).item
    knowledge_services.knowledge_item_put(
        actor=actor, base=name, key="harbour", content=f"{marker}KNOW the harbour closes"
    )
    knowledge_services.knowledge_relate(
        actor=actor, source=(name, key), target=(name, "harbour"), relationship_type="near"
    )
    return {
        "knowledge_base_name": name,
        "knowledge_base": KnowledgeStore.objects.get(pk=store.pk),
        "knowledge_item": KnowledgeItem.objects.defer("embedding").get(pk=item.pk),
    }


# What each role may do with each model in its own account: v(iew) a(dd) c(hange) d(elete).
RIGHTS: dict[str, dict[str, str]] = {
    "core.account": {"owner": "vc", "reviewer": "v", "author": "v", "operator": "v"},
    "core.team": {"owner": "vacd", "reviewer": "v", "author": "v", "operator": "v"},
    "core.agent": {"owner": "vacd", "reviewer": "v", "author": "v", "operator": "v"},
    "core.apikey": {"owner": "vacd", "reviewer": "", "author": "", "operator": ""},
    "core.auditevent": {"owner": "v", "reviewer": "", "author": "", "operator": ""},
    "core.portabilityjob": {"owner": "v", "reviewer": "", "author": "", "operator": ""},
    "rag.knowledgebase": {"owner": "vacd", "reviewer": "v", "author": "v", "operator": "vacd"},
    "rag.document": {"owner": "vacd", "reviewer": "v", "author": "vacd", "operator": "vacd"},
    "rag.chunk": {"owner": "v", "reviewer": "v", "author": "v", "operator": "v"},
    "rag.searchquery": {"owner": "v", "reviewer": "v", "author": "v", "operator": "v"},
    "memory.shorttermentry": {"owner": "vcd", "reviewer": "v", "author": "v", "operator": "vcd"},
    "memory.memorypool": {"owner": "vacd", "reviewer": "v", "author": "v", "operator": "vacd"},
    "memory.memorypoolevent": {"owner": "v", "reviewer": "v", "author": "v", "operator": "v"},
    # Long-term memory: what agents remember is for operators (and owners) only.
    "memory.memorycontext": {"owner": "vacd", "reviewer": "", "author": "", "operator": "vacd"},
    "memory.memoryentry": {"owner": "vcd", "reviewer": "", "author": "", "operator": "vcd"},
    "memory.memorysnapshot": {"owner": "v", "reviewer": "", "author": "", "operator": "v"},
    "memory.memoryaccesslog": {"owner": "v", "reviewer": "", "author": "", "operator": "v"},
    # The review queue: owners and operators read it and decide through its actions and its
    # decision buttons, never by editing the form.
    "memory.pendingchange": {"owner": "v", "reviewer": "", "author": "", "operator": "v"},
    # Maintenance reports: read-only; operators (and owners) undo a run through an action.
    "memory.memorymaintenancereport": {
        "owner": "v",
        "reviewer": "",
        "author": "",
        "operator": "v",
    },
    # Maintenance jobs: read-only, for operators (and owners).
    "memory.maintenancejob": {"owner": "v", "reviewer": "", "author": "", "operator": "v"},
    "memory.conversation": {"owner": "vd", "reviewer": "", "author": "", "operator": "vd"},
    "memory.extraction": {
        "owner": "vd",
        "reviewer": "",
        "author": "",
        "operator": "vd",
    },
    # Knowledge items: everyone in the account reads; operators (and owners) write.
    "memory.knowledgestore": {"owner": "vacd", "reviewer": "v", "author": "v", "operator": "vacd"},
    "memory.knowledgeitem": {"owner": "vc", "reviewer": "v", "author": "v", "operator": "vc"},
    # The knowledge graph: authors and operators write, everyone reads.
    "rag.graphnode": {"owner": "vacd", "reviewer": "v", "author": "vacd", "operator": "vacd"},
    "rag.graphedge": {"owner": "vad", "reviewer": "v", "author": "vad", "operator": "vad"},
    # Communities are derived: everyone reads; the recompute action is the operators'.
    "rag.graphcommunity": {"owner": "v", "reviewer": "v", "author": "v", "operator": "v"},
    # Pages: authors (and owners) write, everyone reads. Articles are global: superusers and
    # the installation operators group manage them, no account role does.
    "content.page": {"owner": "vacd", "reviewer": "v", "author": "vacd", "operator": "v"},
    "content.article": {"owner": "", "reviewer": "", "author": "", "operator": ""},
    # Skills: reviewers (and owners) write, everyone reads.
    "skills.skill": {"owner": "vac", "reviewer": "vac", "author": "v", "operator": "v"},
    # Versions: read by every role; reviewers (and owners) activate them through an action.
    "skills.skillversion": {"owner": "v", "reviewer": "v", "author": "v", "operator": "v"},
    # The review queue and conflicts: read by every role; reviewers (and owners) decide through
    # actions, never by editing the form.
    "skills.skillproposal": {"owner": "v", "reviewer": "v", "author": "v", "operator": "v"},
    "skills.skillconflict": {"owner": "v", "reviewer": "v", "author": "v", "operator": "v"},
    "skills.skillusage": {"owner": "v", "reviewer": "v", "author": "v", "operator": "v"},
    "skills.learningprofile": {"owner": "v", "reviewer": "v", "author": "v", "operator": "v"},
    "skills.taskassignment": {"owner": "v", "reviewer": "v", "author": "v", "operator": "v"},
    "skills.agenttrust": {"owner": "v", "reviewer": "v", "author": "v", "operator": "v"},
}

# What a model's changelist shows of the own object (the chunk list shows its document).
LIST_MARKER = {
    "core.account": "ACCOUNT",
    "core.team": "TEAM",
    "core.agent": "AGENT",
    "core.apikey": "KEY",
    "core.auditevent": "AUDIT",
    "core.portabilityjob": "ACCOUNT",
    "rag.knowledgebase": "KB",
    "rag.document": "DOC",
    "rag.chunk": "DOC",
    "rag.searchquery": "QUERY",
    "memory.shorttermentry": "STM",
    "memory.memorypool": "POOL",
    "memory.memorypoolevent": "EVENT",
    "memory.memorycontext": "LTMCTX",
    "memory.memoryentry": "LTM",
    "memory.memorysnapshot": "SNAP",
    "memory.memoryaccesslog": "LTM",
    "memory.pendingchange": "CHANGE",
    "memory.memorymaintenancereport": "ACCOUNT",
    "memory.maintenancejob": "ACCOUNT",
    "memory.conversation": "CONV",
    "memory.extraction": "CONV",
    "memory.knowledgestore": "KNOWBASE",
    "memory.knowledgeitem": "KNOW",
    "rag.graphnode": "NODE",
    "rag.graphedge": "NODE",
    "rag.graphcommunity": "NODE",
    "content.page": "PAGE",
    "content.article": "DRAFT",
    "skills.skill": "SKILL",
    "skills.skillversion": "SKILL",
    "skills.skillproposal": "MISSING",  # the queue: the submitted sub-proposal
    "skills.skillconflict": "SKILL",
    "skills.skillusage": "AGENT",
    "skills.learningprofile": "AGENT",
    "skills.taskassignment": "TASK",
    "skills.agenttrust": "AGENT",
}


# --- One world per module and worker ----------------------------------------------------------
#
# Building a side costs seconds (a document indexed, a graph's communities, memory of every
# tier, skills...). A module whose cases all start from the same world builds it once and shares
# it: ``shared_world`` builds it inside an outer transaction that stays open for the module;
# each case's own transaction (pytest-django's ``db``) is then a savepoint inside it, rolled back
# after the case, so every case starts from the world as it was built. What the world keeps in
# Redis (working memory, the access buffer, the cache's rate-limit counters and key cache) is
# outside that transaction: ``SharedWorld.fresh`` puts this worker's keys back as they were
# after the build before each case. Each case gets its own deep copy of the Python objects, so a
# case that changes one in place cannot hand the change to the next.


def _worker_redis() -> list[redis.Redis]:
    """The Redis servers holding this worker's keys: working memory's and the cache's."""
    from core.redis_client import cache_redis
    from memory.redis_store import memory_redis

    clients = [memory_redis()]
    cached = cache_redis()
    if cached is not None and cached[0] is not clients[0]:
        clients.append(cached[0])
    return clients


def _worker_patterns() -> list[str]:
    """This worker's key patterns (tests/settings_test.py gives each worker its prefix)."""
    prefixes = {str(settings.MEMORY_REDIS_PREFIX), str(settings.CACHES["default"]["KEY_PREFIX"])}
    return [f"{prefix}:*" for prefix in sorted(prefixes)]


def _redis_keys(client: redis.Redis) -> list[bytes]:
    return [
        key for pattern in _worker_patterns() for key in client.scan_iter(match=pattern, count=1000)
    ]


@dataclass
class SharedWorld(Generic[T]):
    """A world built once (``shared_world``) and how to hand each case a fresh one."""

    value: T
    #: Per Redis client: (key, its remaining time to live in ms or 0, its DUMP).
    redis_state: list[tuple[redis.Redis, list[tuple[bytes, int, bytes]]]]
    #: What ``state`` read of the world as built; every case must start from it.
    built: Any = None
    state: Callable[[T], Any] | None = None

    @classmethod
    def capture(cls, value: T, state: Callable[[T], Any] | None = None) -> SharedWorld[T]:
        saved = []
        for client in _worker_redis():
            dumped = []
            for key in _redis_keys(client):
                ttl, data = client.pttl(key), client.dump(key)
                if data is not None and ttl != -2:
                    dumped.append((key, max(int(ttl), 0), data))
            saved.append((client, dumped))
        return cls(
            value=value,
            redis_state=saved,
            built=None if state is None else state(value),
            state=state,
        )

    def fresh(self) -> T:
        """Redis as the build left it, and a copy of the world's objects for one case."""
        for client, dumped in self.redis_state:
            stale = _redis_keys(client)
            pipe = client.pipeline(transaction=False)
            if stale:
                pipe.delete(*stale)
            for key, ttl, data in dumped:
                pipe.restore(key, ttl, data, replace=True)
            pipe.execute()
        world = copy.deepcopy(self.value)
        if self.state is not None:
            # Isolation, checked: an earlier case's writes are gone (rolled back, put back).
            assert self.state(world) == self.built, "the shared world changed since its build"
        return world


@contextmanager
def shared_world(
    django_db_blocker: Any,
    build: Callable[[Callable[..., Any]], T],
    state: Callable[[T], Any] | None = None,
    *,
    real_embeddings: bool = False,
) -> Iterator[SharedWorld[T]]:
    """Build a world once (``build`` gets a ``captureOnCommitCallbacks`` like pytest-django's
    fixture) in a transaction that the module's cases run inside and that is rolled back at the
    end. Use it from a module-scoped fixture, and hand out ``fresh()`` from a function-scoped
    one that also requests ``db`` (see the section comment above). ``state``, when given, reads
    what a case could change of the world: ``fresh()`` asserts that each case starts with what
    it read right after the build. The world is embedded as the module's cases are: by the
    stand-in unless ``real_embeddings`` (tests/support/embedder.py; a module-scoped fixture runs
    before the per-test ``_embedder`` fixture that would choose)."""
    from tests.support import embedder

    embedder.use(real=real_embeddings)
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        # Like the atomic blocks of Django's TestCase: durable blocks inside stay allowed.
        outer._from_testcase = True  # type: ignore[attr-defined]
        outer.__enter__()
    try:
        with django_db_blocker.unblock():
            world = SharedWorld.capture(build(TestCase.captureOnCommitCallbacks), state)
        yield world
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
