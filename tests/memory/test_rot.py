"""Rot across stores: the report lists every kind (broken wikilinks, linked pages unchanged for N
days, documents built by another embedding model or chunker, memories a newer fact invalidated,
unused skills, knowledge items whose sources were deleted), each with a suggested action, only
of the caller's account while an intruder owns rot of every kind; N is bounded; the admin page
and the daily summary section."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from content import services as content_services
from content.models import Page
from core import services as core_services
from core.actors import actor_for_account, actor_for_agent, actor_for_user
from core.errors import NotFound, ValidationFailed
from memory import digest
from memory.knowledge import services as knowledge_services
from memory.long_term import services as ltm
from memory.maintenance.selectors import rot
from rag import services as rag_services
from rag.models import Chunk, Document, KnowledgeBase
from skills.models import Skill
from skills.services import catalog as skill_services
from tests.conftest import AuthedAgent
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/maintenance/rot"
OLD = timedelta(days=200)


@dataclass
class Rotten:
    broken: Page
    stale: Page
    other_model: Document
    other_chunker: Document
    invalidated: int
    superseded: int
    skill: Skill
    orphan: int


def rotten(authed: AuthedAgent, marker: str, capture: Any) -> Rotten:
    """Rot of every kind in ``authed``'s account (and fresh data that is not rot)."""
    account = authed.agent.account_id
    tool = actor_for_account(account)
    agent = actor_for_agent(authed.agent)
    with capture(execute=True):
        broken = content_services.page_create(
            actor=tool, title=f"{marker} notes", content="See [[Nowhere At All]] and [[Target]]."
        )
        stale = content_services.page_create(actor=tool, title="Target", content="The target.")
        content_services.page_create(actor=tool, title=f"{marker} fresh", content="Unlinked.")
        gone = content_services.page_create(actor=tool, title=f"{marker} gone", content="x")
    Page.objects.filter(pk=stale.pk).update(updated_at=timezone.now() - OLD)
    kb = rag_services.knowledge_base_create(actor=tool, name=f"{marker}-kb")
    kb2 = rag_services.knowledge_base_create(actor=tool, name=f"{marker}-kb2")
    documents = []
    for base in (kb, kb, kb2):
        with capture(execute=True):
            document = rag_services.document_create(
                actor=tool, kb=base, data=f"# {marker}\n\nSome text.".encode(), filename="a.md"
            )
        documents.append(Document.objects.defer("original").get(pk=document.pk))
    other_model, fresh_doc, other_chunker = documents
    assert fresh_doc.status == "indexed" and fresh_doc.indexed_chunker == "v1:markdown:256:32"
    Chunk.objects.filter(document=other_model).update(embedding_model="old-model-v0")
    KnowledgeBase.objects.filter(pk=kb2.pk).update(chunk_size=128)

    context = ltm.context_create(actor=agent, name=f"{marker}-ctx")
    message, linked, fresh = ltm.entries_write(
        actor=agent,
        context=context,
        items=[
            ltm.EntryInput(content=f"{marker} I moved to Porto."),
            ltm.EntryInput(content=f"{marker} the office is in Lisbon."),
            ltm.EntryInput(content=f"{marker} nothing changed."),
        ],
    )
    source = knowledge_services.SourceInput("conversation_message", str(message.pk), 0.9)
    moved = knowledge_services.knowledge_item_put(
        actor=agent, base="facts", key="home", content="Porto", sources=[source]
    ).item
    office = knowledge_services.knowledge_item_put(
        actor=agent, base="facts", key="office", content="Lisbon"
    ).item
    ltm.entry_update(
        actor=agent,
        entry=linked,
        fields={"metadata": {"related": [{"kind": "knowledge_item", "id": office.pk}]}},
    )
    knowledge_services.knowledge_item_put(
        actor=agent,
        base="facts",
        key="still",
        content="True",
        sources=[knowledge_services.SourceInput("conversation_message", str(fresh.pk))],
    )
    knowledge_services.knowledge_item_invalidate(actor=agent, item=moved)
    knowledge_services.knowledge_item_put(actor=agent, base="facts", key="office", content="Porto")

    skill = skill_services.skill_create(actor=agent, name=f"{marker}-skill", category="testing")
    skill_services.skill_create(actor=agent, name=f"{marker}-new-skill", category="testing")
    Skill.objects.filter(pk=skill.pk).update(created_at=timezone.now() - OLD)

    orphan = knowledge_services.knowledge_item_put(
        actor=agent,
        base="facts",
        key="orphan",
        content="From a page.",
        sources=[knowledge_services.SourceInput("page", str(gone.pk))],
    ).item
    content_services.page_delete(actor=tool, page=gone)
    return Rotten(
        broken, stale, other_model, other_chunker, message.pk, linked.pk, skill, orphan.pk
    )


def by_kind(body: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {section["kind"]: section["items"] for section in body["sections"]}


def test_the_report_lists_rot_of_every_kind_of_the_callers_account_only(
    agent_client: AuthedAgent,
    other_agent_client: AuthedAgent,
    django_capture_on_commit_callbacks: Any,
) -> None:
    mine = rotten(agent_client, "OWNQX", django_capture_on_commit_callbacks)
    theirs = rotten(other_agent_client, "INTRUDERQX", django_capture_on_commit_callbacks)

    response = agent_client.client.get(URL)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert "INTRUDERQX" not in response.content.decode()
    assert body["days"] == 90 and body["account_id"] == agent_client.agent.account_id
    found = by_kind(body)
    assert list(found) == list(rot.KINDS)
    ids = {kind: [item["id"] for item in items] for kind, items in found.items()}
    assert ids["broken_wikilink"] == [mine.broken.pk]
    assert found["broken_wikilink"][0]["data"]["targets"] == ["Nowhere At All"]
    assert ids["stale_linked_page"] == [mine.stale.pk]
    assert found["stale_linked_page"][0]["data"]["linked_from"] == 1
    assert sorted(ids["outdated_document"]) == sorted([mine.other_model.pk, mine.other_chunker.pk])
    documents = {item["id"]: item for item in found["outdated_document"]}
    assert documents[mine.other_model.pk]["data"]["chunk_models"] == ["old-model-v0"]
    assert "another" not in documents[mine.other_chunker.pk]["detail"]
    assert documents[mine.other_chunker.pk]["data"]["current_chunker"] == "v1:markdown:128:32"
    assert sorted(ids["invalidated_memory"]) == sorted([mine.invalidated, mine.superseded])
    assert ids["unused_skill"] == [mine.skill.pk]
    assert ids["orphaned_knowledge_item"] == [mine.orphan]
    # The other model's chunks, counted per space (their document is listed above too).
    assert [item["data"]["space"] for item in found["stale_vectors"]] == ["chunks"]
    assert set(found["stale_vectors"][0]["data"]["models"]) == {"old-model-v0"}
    for items in found.values():
        for item in items:
            assert item["suggested_action"] and item["detail"], item
    for section in body["sections"]:
        assert section["total"] == len(section["items"])
    assert body["total"] == 9

    # N is the caller's: with a year, the 200-day-old page and skill are not stale yet.
    year = by_kind(agent_client.client.get(URL, {"days": 365}).json())
    assert year["stale_linked_page"] == [] and year["unused_skill"] == []
    # The limit lists fewer, the totals still count everything.
    limited = agent_client.client.get(URL, {"limit": 1}).json()
    documents_section = next(s for s in limited["sections"] if s["kind"] == "outdated_document")
    assert len(documents_section["items"]) == 1 and documents_section["total"] == 2

    # The intruder's own report is its own.
    other = by_kind(other_agent_client.client.get(URL).json())
    assert [i["id"] for i in other["broken_wikilink"]] == [theirs.broken.pk]
    assert "OWNQX" not in other_agent_client.client.get(URL).content.decode()


def test_bad_input_is_a_400(agent_client: AuthedAgent) -> None:
    for query in (
        {"days": 0},
        {"days": 3651},
        {"days": "x"},
        {"limit": 0},
        {"limit": 501},
        {"colour": "red"},
    ):
        response = agent_client.client.get(URL, query)
        assert response.status_code == 400, (query, response.json())
        assert set(response.json()) == {"error"}
    with pytest.raises(ValidationFailed):
        rot.rot_report(actor=actor_for_agent(agent_client.agent), days=0)


def test_people_see_the_accounts_they_manage_in_the_admin(
    agent_client: AuthedAgent,
    other_agent_client: AuthedAgent,
    django_capture_on_commit_callbacks: Any,
) -> None:
    mine = rotten(agent_client, "OWNQX", django_capture_on_commit_callbacks)
    rotten(other_agent_client, "INTRUDERQX", django_capture_on_commit_callbacks)
    operator = UserFactory.create(is_staff=True)
    core_services.membership_grant(
        account=agent_client.agent.account, user=operator, role="operator"
    )
    client = Client()
    client.force_login(operator)
    page = client.get(reverse("admin:memory_rot_report"))
    assert page.status_code == 200
    text = page.content.decode()
    assert "OWNQX notes" in text and "Nowhere At All" in text and "INTRUDERQX" not in text
    assert reverse("admin:content_page_change", args=[mine.broken.pk]) in text
    foreign = client.get(
        reverse("admin:memory_rot_report"), {"account": other_agent_client.agent.account_id}
    )
    assert "INTRUDERQX" not in foreign.content.decode()
    assert "No such account" in foreign.content.decode()
    with pytest.raises(NotFound):
        rot.rot_report(
            actor=actor_for_user(operator), account_id=other_agent_client.agent.account_id
        )
    author = UserFactory.create(is_staff=True)
    core_services.membership_grant(account=agent_client.agent.account, user=author, role="author")
    client.force_login(author)
    assert client.get(reverse("admin:memory_rot_report")).status_code == 403


def test_the_daily_summary_has_a_rot_section_for_recent_days(
    agent_client: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    mine = rotten(agent_client, "OWNQX", django_capture_on_commit_callbacks)
    account = agent_client.agent.account_id
    items = digest.daily_digest(account_id=account, day=timezone.localdate())
    lines = [item for item in items if item.section == digest.ROT]
    assert all(item.standing for item in lines)
    assert any(item.link == mine.broken.title and "Nowhere At All" in item.text for item in lines)
    assert any(item.link == "Target" for item in lines)
    assert any(item.text.startswith("Unused skills (90 days): 1.") for item in lines)
    assert any(
        item.text.startswith("Memories a newer fact invalidated (90 days): 2.") for item in lines
    )
    assert all("OWNQX I moved" not in item.text for item in lines)  # never a memory's text
    long_ago = timezone.localdate() - dt.timedelta(days=30)
    assert all(
        i.section != digest.ROT for i in digest.daily_digest(account_id=account, day=long_ago)
    )
