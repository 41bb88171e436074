"""An account holding data of every kind the export covers, built through the services."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from content.models import DailySummary
from content.services import page_create
from core import services as core_services
from core.actors import Actor, actor_for_account, actor_for_agent, actor_for_user
from core.models import Account, Agent
from core.services.accounts import account_create
from core.services.agents import agent_create, team_create
from core.services.keys import api_key_create
from memory.conversations import services as conversations
from memory.knowledge.services import SourceInput, knowledge_item_put, knowledge_relate
from memory.long_term import services as ltm
from memory.models import Conversation, MemoryContext, MemoryPool
from memory.pools.data_services import pool_data_write
from memory.pools.services import pool_create, pool_grant_set
from memory.short_term.services import short_term_put
from rag.graph.services import edge_create, node_create
from rag.services.documents import document_create
from rag.services.knowledge_bases import knowledge_base_create
from skills.services.catalog import DependencyInput, agent_skill_set, skill_create
from skills.services.proposals import proposal_reject, research_and_propose
from skills.services.usage import UsageInput, usage_record
from tests.factories import UserFactory

DOCUMENTS = (
    (
        "runbook.md",
        "# Deploy runbook\n\nDeploys go out from the release branch. Build the image, run the "
        "smoke tests, then roll out one zone at a time. Roll back when the error rate doubles."
        "\n\n## Rollback\n\nRevert to the previous image tag and page the on-call engineer.",
    ),
    (
        "glossary.md",
        "# Glossary\n\nA zone is one failure domain of the cluster. The error budget is the "
        "share of failed requests a service may spend in a month before releases stop.",
    ),
)


@dataclass
class World:
    account: Account
    alice: Agent
    bob: Agent
    key: str
    notes: MemoryContext
    conversation: Conversation

    @property
    def alice_actor(self) -> Actor:
        return actor_for_agent(self.alice)


def world_build(slug: str, marker: str, capture: Any) -> World:
    """Account ``slug``: a team, two agents (one in the team), a context shared by grant with
    versions and an archived entry, an agent's own memory, a conversation and short-term
    entries, pools (the default one too) with a grant and a bulletin event, pages, a skill with
    proposals (one rejected), usage records and so a learning profile and trust, a document
    knowledge base with two indexed documents, graph nodes with aliases and typed edges, and a
    relationship between knowledge items; every text carries ``marker``."""
    with capture(execute=True):
        account = account_create(name=f"{marker} account", slug=slug)
        tool = actor_for_account(account.pk)
        team = team_create(actor=tool, account=account, name=f"{marker} ops")
        alice = agent_create(actor=tool, account=account, name="alice", teams=[team])
        bob = agent_create(actor=tool, account=account, name="bob")
        _key_row, key = api_key_create(actor=tool, agent=alice, name=f"{marker} key")
        me = actor_for_agent(alice)
        notes = ltm.context_create(actor=me, name=f"{marker} notes", description=marker)
        ltm.context_grant(actor=me, context=notes, agent_id=bob.pk, level="read")
        first, _second, third = ltm.entries_write(
            actor=me,
            context=notes,
            items=[
                ltm.EntryInput(content=f"{marker} deploys run on Fridays at noon.", tags=["ops"]),
                ltm.EntryInput(content=f"{marker} the cat sleeps most of the day."),
                ltm.EntryInput(content=f"{marker} an old note to archive."),
            ],
        )
        ltm.entry_update(
            actor=me,
            entry=first,
            fields={"content": f"{marker} deploys run on Thursdays at noon."},
        )
        ltm.entry_archive_set(actor=me, entry=third, archived=True)
        own = ltm.agent_memory_context(actor=me)
        ltm.entries_write(
            actor=me,
            context=own,
            items=[ltm.EntryInput(content=f"{marker} alice prefers tea to coffee.")],
        )
        conversation = conversations.conversation_create(actor=me, title=f"{marker} planning")
        conversations.messages_append(
            actor=me,
            conversation=conversation,
            messages=[
                conversations.MessageInput(role="user", content=f"{marker} when is the launch?"),
                conversations.MessageInput(
                    role="assistant", content=f"{marker} the launch is on the first of June."
                ),
            ],
        )
        for content in (f"{marker} the launch is in May.", f"{marker} the launch is in June."):
            knowledge_item_put(
                actor=me,
                base="facts",
                key="launch-date",
                content=content,
                sources=[SourceInput(source_type="agent", source_id="alice")],
            )
        plan = pool_create(actor=me, pool_id="plan", data={"goal": f"{marker} ship the launch"})
        pool_grant_set(actor=me, pool=plan, agent_id=bob.pk, level="write")
        pool_data_write(
            actor=me, pool=plan, path="agent_bulletin.status", value=f"{marker} drafting"
        )
        default = MemoryPool.objects.get(account=account, pool_id="default")
        pool_data_write(actor=me, pool=default, path="note", value=f"{marker} shared note")
        plan_page = page_create(
            actor=me, title="Plan", content=f"{marker} the plan of the launch.", aliases=["P"]
        )
        page_create(
            actor=me,
            title="Launch",
            content=f"{marker} see [[Plan]] and [[Nowhere]].",
            status="published",
        )
        DailySummary.objects.create(account=account, day=date(2026, 6, 1), page=plan_page)
        deploy = skill_create(
            actor=tool,
            name=f"{marker} deploy service",
            category="deployment",
            description=f"{marker} ship a service to production safely.",
            procedure="1. build 2. test 3. roll out",
            tags=["ops"],
        )
        agent_skill_set(actor=tool, skill=deploy, agent_id=alice.pk, proficiency=0.8)
        skill_create(  # depends on deploy: a depends_on edge of the graph
            actor=tool,
            name=f"{marker} verify release",
            category="deployment",
            description=f"{marker} check a release after it is out.",
            procedure="1. smoke test 2. watch the error rate",
            dependencies=[DependencyInput(skill_id=deploy.pk, version="^1.0.0")],
        )
        short_term_put(
            actor=me, session_id="s1", key="task", value={"note": f"{marker} draft the plan"}
        )
        # Skills: proposals (one rejected with its reason), usage and what learns from it.
        research_and_propose(
            actor=tool, name=f"{marker} rollback service", category="deployment", submit=True
        )
        rejected = research_and_propose(
            actor=tool, name=f"{marker} page the on-call", category="communication", submit=True
        )
        person = UserFactory.create(is_staff=True)
        core_services.membership_grant(account=account, user=person, role="reviewer")
        proposal_reject(
            actor=actor_for_user(person), proposal=rejected, reason=f"{marker} not a skill"
        )
        usage_record(
            actor=tool,
            records=[
                UsageInput(agent_id=alice.pk, task_type="deploy", success=True, skill_id=deploy.pk),
                UsageInput(agent_id=alice.pk, task_type="deploy", success=False, duration_ms=40),
            ],
        )
        # Documents: a knowledge base of two documents of real text, indexed on commit.
        handbook = knowledge_base_create(
            actor=tool, name=f"{marker} handbook", chunk_size=128, chunk_overlap=16
        )
        for filename, text in DOCUMENTS:
            document_create(
                actor=tool, kb=handbook, data=f"{marker} {text}".encode(), filename=filename
            )
        # The graph: nodes with aliases, typed edges, and a relationship between two items.
        lind = node_create(
            actor=tool, name="Jonas Lind", entity_type="person", aliases=["Lind", "JL"]
        )
        atlas = node_create(
            actor=tool,
            name=f"{marker} Atlas",
            entity_type="project",
            description=f"{marker} the launch project",
        )
        edge_create(
            actor=tool,
            source_id=lind.pk,
            target_id=atlas.pk,
            relation_type="leads",
            weight=0.7,
            metadata={"since": "2026"},
        )
        edge_create(
            actor=tool,
            source_id=atlas.pk,
            target_id=lind.pk,
            relation_type="related_to",
            bidirectional=True,
        )
        knowledge_item_put(
            actor=me, base="facts", key="launch-owner", content=f"{marker} Jonas owns the launch."
        )
        # An item learnt from alice's conversation: private to it, its node named after it.
        knowledge_item_put(
            actor=me,
            base="facts",
            key="launch-venue",
            content=f"{marker} the launch happens in Lisbon.",
            source_context_id=conversation.context_id,
        )
        knowledge_relate(
            actor=me,
            source=("facts", "launch-owner"),
            target=("facts", "launch-date"),
            relationship_type="decides",
            strength=0.9,
        )
    return World(
        account=account,
        alice=alice,
        bob=bob,
        key=key,
        notes=notes,
        conversation=Conversation.objects.get(pk=conversation.pk),
    )
