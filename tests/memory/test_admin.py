"""The memory admin writes through the services: the pool's JSON editor with compare-and-set,
grants, short-term entries; lists take a bounded number of queries."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from core import services as core_services
from core.actors import actor_for_agent
from core.models import AuditEvent
from memory.models import MemoryEntry, MemoryPool, MemoryPoolGrant, ShortTermEntry
from memory.pools import data_services as pool_data_services
from memory.pools import services as pool_services
from memory.short_term import services as short_term_services
from tests.conftest import AuthedAgent
from tests.factories import AgentFactory, UserFactory

pytestmark = pytest.mark.django_db


def person(authed: AuthedAgent, role: str) -> Any:
    user = UserFactory.create(is_staff=True)
    core_services.membership_grant(account=authed.agent.account, user=user, role=role)
    client = Client()
    client.force_login(user)
    return user, client


def pool_form(pool: MemoryPool, **changes: Any) -> dict[str, Any]:
    grants = list(MemoryPoolGrant.objects.filter(pool=pool))
    form = {
        "name": pool.name,
        "scope": pool.scope,
        "public_read": "on" if pool.public_read else "",
        "data": json.dumps(pool.data),
        "retention_policy": json.dumps(pool.retention_policy),
        "expires_at_0": "",
        "expires_at_1": "",
        "persist_across_executions": "",
        "change_policy": pool.change_policy,
        "loaded_version": pool.version,
        "grants-TOTAL_FORMS": str(len(grants)),
        "grants-INITIAL_FORMS": str(len(grants)),
        "grants-MIN_NUM_FORMS": "0",
        "grants-MAX_NUM_FORMS": "1000",
    }
    for i, grant in enumerate(grants):
        form |= {
            f"grants-{i}-id": grant.pk,
            f"grants-{i}-pool": pool.pk,
            f"grants-{i}-agent": grant.agent_id,
            f"grants-{i}-level": grant.level,
        }
    return form | changes


def test_operators_edit_pool_data_without_undoing_agents_writes(
    agent_client: AuthedAgent,
) -> None:
    actor = actor_for_agent(agent_client.agent)
    pool = pool_services.pool_create(actor=actor, pool_id="ops", data={"a": 1})
    operator, client = person(agent_client, "operator")
    url = reverse("admin:memory_memorypool_change", args=[pool.pk])
    page = client.get(url)
    assert page.status_code == 200 and 'name="loaded_version"' in page.content.decode()

    # An agent writes while the person edits: saving the stale form is refused.
    stale = pool_form(pool, data=json.dumps({"a": 2}))
    pool_data_services.pool_data_write(actor=actor, pool=pool, path="b", value=True)
    refused = client.post(url, stale)
    assert refused.status_code == 200 and "The pool changed since that version" in (
        refused.content.decode()
    )
    assert MemoryPool.objects.get(pk=pool.pk).data == {"a": 1, "b": True}

    fresh = MemoryPool.objects.get(pk=pool.pk)
    saved = client.post(url, pool_form(fresh, data=json.dumps({"a": 2}), name="Ops"))
    assert saved.status_code == 302
    stored = MemoryPool.objects.get(pk=pool.pk)
    assert (stored.data, stored.name, stored.version) == ({"a": 2}, "Ops", fresh.version + 2)
    events = AuditEvent.objects.filter(user=operator).values_list("action", flat=True)
    assert set(events) == {"memory.pool.data.write", "memory.pool.update"}


def test_grants_inline_goes_through_the_service(agent_client: AuthedAgent) -> None:
    actor = actor_for_agent(agent_client.agent)
    pool = pool_services.pool_create(actor=actor, pool_id="team", pool_type="team_shared")
    grantee = AgentFactory.create(account=agent_client.agent.account)
    outsider = AgentFactory.create()
    _, client = person(agent_client, "owner")
    url = reverse("admin:memory_memorypool_change", args=[pool.pk])
    form = pool_form(pool)
    form |= {
        "grants-TOTAL_FORMS": "1",
        "grants-0-pool": pool.pk,
        "grants-0-agent": outsider.pk,
        "grants-0-level": "write",
    }
    refused = client.post(url, form)
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    assert not MemoryPoolGrant.objects.exists()
    saved = client.post(url, form | {"grants-0-agent": grantee.pk})
    assert saved.status_code == 302
    grant = MemoryPoolGrant.objects.get()
    assert (grant.agent_id, grant.level) == (grantee.pk, "write")
    assert MemoryPool.objects.get(pk=pool.pk).version == 2
    assert AuditEvent.objects.filter(action="memory.pool.grant").exists()


def test_short_term_entries_are_edited_and_refreshed_through_services(
    agent_client: AuthedAgent,
) -> None:
    actor = actor_for_agent(agent_client.agent)
    entry, _ = short_term_services.short_term_put(
        actor=actor, session_id="s1", key="k", value={"v": 1}, ttl=100
    )
    _, reviewer = person(agent_client, "reviewer")
    _, operator = person(agent_client, "operator")
    url = reverse("admin:memory_shorttermentry_change", args=[entry.pk])
    form = {"memory_type": "reflection", "value": json.dumps({"v": 2})}
    assert reviewer.post(url, form).status_code == 403
    assert operator.post(url, form).status_code == 302
    stored = ShortTermEntry.objects.get(pk=entry.pk)
    assert (stored.value, stored.memory_type) == ({"v": 2}, "reflection")
    update = AuditEvent.objects.get(action="memory.short_term.update")
    assert update.changes == {"memory_type": "reflection", "value": "(changed)"}

    ShortTermEntry.objects.filter(pk=entry.pk).update(ttl_seconds=5000)
    changelist = reverse("admin:memory_shorttermentry_changelist")
    operator.post(changelist, {"action": "refresh_ttl", "_selected_action": [entry.pk]})
    refreshed = ShortTermEntry.objects.get(pk=entry.pk)
    assert refreshed.expires_at > stored.expires_at
    assert (
        operator.post(
            reverse("admin:memory_shorttermentry_delete", args=[entry.pk]), {"post": "yes"}
        ).status_code
        == 302
    )
    assert not ShortTermEntry.objects.filter(pk=entry.pk).exists()


def test_memory_changelists_take_a_bounded_number_of_queries(
    agent_client: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    actor = actor_for_agent(agent_client.agent)
    _, client = person(agent_client, "reviewer")

    def add(n: int) -> None:
        for i in range(n):
            short_term_services.short_term_put(actor=actor, session_id="s", key=f"k{i}", value=i)
            pool = pool_services.pool_create(actor=actor, pool_id=f"p{i}-{n}")
            pool_data_services.pool_data_write(
                actor=actor, pool=pool, path="agent_bulletin.x", value=i
            )

    def queries() -> list[int]:
        counts = []
        for name in ("shorttermentry", "memorypool", "memorypoolevent"):
            with CaptureQueriesContext(connection) as captured:
                assert client.get(reverse(f"admin:memory_{name}_changelist")).status_code == 200
            counts.append(len(captured.captured_queries))
        return counts

    add(2)
    few = queries()
    add(25)
    assert queries() == few


def test_a_non_finite_number_typed_in_the_admin_is_a_form_error(agent_client: AuthedAgent) -> None:
    actor = actor_for_agent(agent_client.agent)
    pool = pool_services.pool_create(actor=actor, pool_id="ops", data={"a": 1})
    entry, _ = short_term_services.short_term_put(actor=actor, session_id="s", key="k", value=1)
    _, client = person(agent_client, "operator")
    pool_url = reverse("admin:memory_memorypool_change", args=[pool.pk])
    response = client.post(pool_url, pool_form(pool, data='{"a": NaN}'))
    assert (
        response.status_code == 200 and "JSON has no NaN or Infinity." in response.content.decode()
    )
    entry_url = reverse("admin:memory_shorttermentry_change", args=[entry.pk])
    response = client.post(entry_url, {"memory_type": "observation", "value": "[Infinity]"})
    assert (
        response.status_code == 200 and "JSON has no NaN or Infinity." in response.content.decode()
    )
    assert MemoryPool.objects.get(pk=pool.pk).data == {"a": 1}
    assert ShortTermEntry.objects.get(pk=entry.pk).value == 1


def test_run_consolidation_now_shows_the_report(agent_client: AuthedAgent) -> None:
    actor = actor_for_agent(agent_client.agent)
    entry, _ = short_term_services.short_term_put(
        actor=actor, session_id="s1", key="k", value="kept fact"
    )
    for _ in range(3):
        short_term_services.short_term_read(actor=actor, session_id="s1", key="k")
    _, reviewer = person(agent_client, "reviewer")
    _, operator = person(agent_client, "operator")
    changelist = reverse("admin:memory_shorttermentry_changelist")
    form = {"action": "run_consolidation", "_selected_action": [entry.pk]}
    reviewer.post(changelist, form)
    assert not MemoryEntry.objects.exists()  # reviewers may not run it
    page = operator.post(changelist, form, follow=True)
    assert page.status_code == 200
    assert "promote: candidates 1, promoted 1" in page.content.decode()
    assert MemoryEntry.objects.get().metadata["key"] == "k"


def test_long_term_entry_admin_shows_history_and_saves_versions(agent_client: AuthedAgent) -> None:
    from memory.long_term import services as ltm

    actor = actor_for_agent(agent_client.agent)
    context = ltm.context_create(actor=actor, name="notes")
    (first,) = ltm.entries_write(
        actor=actor, context=context, items=[ltm.EntryInput(content="The office is in Lisbon.")]
    )
    second = ltm.entry_update(actor=actor, entry=first, fields={"content": "It is in Porto."})
    _, reader = person(agent_client, "reviewer")
    changelist = reverse("admin:memory_memoryentry_changelist")
    assert reader.get(changelist).status_code == 403  # operators and owners only
    user, operator = person(agent_client, "operator")
    listed = operator.get(changelist).content.decode()
    assert "It is in Porto." in listed and "Lisbon" not in listed  # current versions only
    page = operator.get(reverse("admin:memory_memoryentry_change", args=[second.pk]))
    assert page.status_code == 200
    assert "The office is in Lisbon." in page.content.decode()  # the history
    data = {
        "content": "It is in Faro.",
        "data": "null",
        "entry_type": second.entry_type,
        "source": second.source,
        "memory_type": second.memory_type,
        "tags": "",
        "metadata": "{}",
        "occurred_at_0": "",
        "occurred_at_1": "",
        "importance": second.importance,
        "confidence": second.confidence,
    }
    response = operator.post(reverse("admin:memory_memoryentry_change", args=[second.pk]), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    current = MemoryEntry.objects.get(lineage=first.lineage, is_current=True)
    assert (current.version, current.content) == (3, "It is in Faro.")
    assert AuditEvent.objects.filter(action="memory.entry.update", user=user).exists()


def test_long_term_snapshot_restore_action(agent_client: AuthedAgent) -> None:
    from memory.long_term import services as ltm
    from memory.models import MemorySnapshot

    actor = actor_for_agent(agent_client.agent)
    context = ltm.context_create(actor=actor, name="notes")
    (entry,) = ltm.entries_write(
        actor=actor, context=context, items=[ltm.EntryInput(content="Deploys on Tuesdays.")]
    )
    snapshot = ltm.snapshot_create(actor=actor, context=context, name="before")
    ltm.entry_update(actor=actor, entry=entry, fields={"content": "Deploys on Fridays."})
    _, operator = person(agent_client, "operator")
    response = operator.post(
        reverse("admin:memory_memorysnapshot_changelist"),
        {"action": "restore", "_selected_action": [snapshot.pk]},
    )
    assert response.status_code == 302
    current = MemoryEntry.objects.get(lineage=entry.lineage, is_current=True)
    assert current.content == "Deploys on Tuesdays." and current.version == 3
    assert MemorySnapshot.objects.filter(pk=snapshot.pk).exists()


def test_run_consolidation_now_for_a_context_with_its_report(agent_client: AuthedAgent) -> None:
    from memory.long_term import services as ltm

    actor = actor_for_agent(agent_client.agent)
    chosen = ltm.context_create(actor=actor, name="chosen")
    other = ltm.context_create(actor=actor, name="other")
    for context in (chosen, other):
        for _ in range(2):
            ltm.entries_write(
                actor=actor,
                context=context,
                items=[ltm.EntryInput(content="The staging database runs on port 5433.")],
            )
    _, reviewer = person(agent_client, "reviewer")
    _, operator = person(agent_client, "operator")
    changelist = reverse("admin:memory_memorycontext_changelist")

    def archived() -> dict[str, int]:
        return {
            c.name: MemoryEntry.objects.filter(context=c, archived_at__isnull=False).count()
            for c in (chosen, other)
        }

    preview = {"action": "preview_consolidation", "_selected_action": [chosen.pk]}
    page = operator.post(changelist, preview, follow=True).content.decode()
    assert "Consolidation of chosen would change: dedup: pairs 1, merged 1" in page
    assert archived() == {"chosen": 0, "other": 0}
    run = {"action": "run_consolidation", "_selected_action": [chosen.pk]}
    reviewer.post(changelist, run)
    assert archived() == {"chosen": 0, "other": 0}  # reviewers may not run it
    page = operator.post(changelist, run, follow=True).content.decode()
    assert "Consolidation of chosen changed: dedup: pairs 1, merged 1" in page
    assert archived() == {"chosen": 1, "other": 0}  # only the selected context
