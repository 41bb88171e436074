"""Review before change: the policy on contexts and pools, automatic upkeep held as pending
changes under ``review`` (dedup merges, rot archivals, decay beyond the threshold, promotions,
agents' memory-tool writes), approval and rejection by owners and operators only, audited,
expiry, outdated changes, the read-only API and its tenancy."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from core import services as core_services
from core.actors import Actor, actor_for_agent, actor_for_user
from core.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from core.models import AuditEvent
from memory import tasks
from memory.context.services import tools
from memory.long_term import services as ltm
from memory.maintenance.selectors import changes as change_selectors
from memory.maintenance.services import changes, consolidation, upkeep
from memory.models import MemoryContext, MemoryEntry, PendingChange
from tests.conftest import AuthedAgent
from tests.factories import UserFactory
from tests.memory.conftest import Clock, code

pytestmark = pytest.mark.django_db

BASE = "/api/v1/memory"


def person_actor(authed: AuthedAgent, role: str) -> Actor:
    user = UserFactory.create(is_staff=True)
    core_services.membership_grant(account=authed.agent.account, user=user, role=role)
    return actor_for_user(user)


def review_context(authed: AuthedAgent, name: str = "team-notes") -> MemoryContext:
    response = authed.client.post(
        f"{BASE}/contexts", {"name": name, "change_policy": "review"}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert response.json()["change_policy"] == "review"
    return MemoryContext.objects.get(pk=response.json()["id"])


def write(authed: AuthedAgent, context: MemoryContext, text: str, **fields: Any) -> MemoryEntry:
    (entry,) = ltm.entries_write(
        actor=actor_for_agent(authed.agent),
        context=context,
        items=[ltm.EntryInput(content=text, **fields)],
    )
    return entry


def duplicates(authed: AuthedAgent, context: MemoryContext) -> tuple[MemoryEntry, MemoryEntry]:
    kept = write(authed, context, "The staging database runs on port 5433.", importance=0.8)
    twin = write(authed, context, "The staging database runs on port 5433.", importance=0.3)
    return kept, twin


def live(entry: MemoryEntry) -> bool:
    return MemoryEntry.objects.filter(
        pk=entry.pk, is_current=True, archived_at__isnull=True
    ).exists()


# --- the policy ------------------------------------------------------------------------------


def test_contexts_and_pools_take_a_change_policy(agent_client: AuthedAgent) -> None:
    client = agent_client.client
    created = client.post(f"{BASE}/contexts", {"name": "plain"}, format="json").json()
    assert created["change_policy"] == "auto" and created["agent_write_policy"] == "auto"
    url = f"{BASE}/contexts/{created['id']}"
    patched = client.patch(url, {"change_policy": "review"}, format="json")
    assert patched.status_code == 200 and patched.json()["change_policy"] == "review"
    assert client.get(url).json()["change_policy"] == "review"
    bad = client.patch(url, {"change_policy": "sometimes"}, format="json")
    assert bad.status_code == 400
    assert (
        client.post(
            f"{BASE}/contexts", {"name": "x", "change_policy": 3}, format="json"
        ).status_code
        == 400
    )
    assert AuditEvent.objects.filter(
        action="memory.context.update", changes__change_policy="review"
    ).exists()

    pool = client.post(
        f"{BASE}/pools", {"pool_id": "ops", "change_policy": "review"}, format="json"
    )
    assert pool.status_code == 201 and pool.json()["change_policy"] == "review"
    back = client.patch(f"{BASE}/pools/ops", {"change_policy": "auto"}, format="json")
    assert back.status_code == 200 and back.json()["change_policy"] == "auto"
    assert (
        client.patch(f"{BASE}/pools/ops", {"change_policy": "x"}, format="json").status_code == 400
    )


# --- dedup under review, approve -------------------------------------------------------------


def test_a_dedup_merge_waits_for_review_then_applies_when_approved(
    agent_client: AuthedAgent,
) -> None:
    context = review_context(agent_client)
    kept, twin = duplicates(agent_client, context)
    account = agent_client.agent.account_id

    counts = upkeep.consolidation_dedup(account_id=account)
    assert counts["merged"] == 0 and counts["pending"] == 1
    assert live(kept) and live(twin)  # agents see the current data until approved
    change = PendingChange.objects.get()
    assert change.kind == "dedup_merge" and change.status == "pending"
    assert change.context_id == context.pk and "near-duplicates" in change.reason
    assert [m["id"] for m in change.members] == [kept.pk, twin.pk]
    assert change.members[0]["kept"] is True
    assert change.after["archived"] == [twin.pk]
    diff = change_selectors.change_diff(change)
    assert f'-      "id": {twin.pk},' in diff

    # Running again proposes nothing new: the merge waits already.
    assert upkeep.consolidation_dedup(account_id=account).get("pending", 0) == 0
    assert PendingChange.objects.count() == 1

    # The agents' read-only queue shows it, with before, after and the diff.
    listed = agent_client.client.get(f"{BASE}/pending-changes").json()
    assert [c["id"] for c in listed["results"]] == [change.pk]
    shown = listed["results"][0]
    assert shown["status"] == "pending" and shown["kind"] == "dedup_merge"
    assert shown["before"]["entries"][1]["id"] == twin.pk and shown["diff"].startswith("--- before")
    detail = agent_client.client.get(f"{BASE}/pending-changes/{change.pk}")
    assert detail.status_code == 200 and detail.json()["members"] == change.members

    operator = person_actor(agent_client, "operator")
    done = changes.change_approve(actor=operator, change=change)
    assert done.status == "approved" and done.result == {"merged": 1, "survivor_id": kept.pk}
    assert live(kept) and not live(twin)
    twin_now = MemoryEntry.objects.get(pk=twin.pk)
    assert twin_now.metadata["merged_into"] == kept.pk  # readable, archived, not lost
    assert MemoryEntry.objects.get(pk=kept.pk).metadata["absorbed"] == [twin.pk]
    approve = AuditEvent.objects.get(action="memory.change.approve")
    assert approve.user_id == operator.user_id and approve.target_id == str(change.pk)
    assert AuditEvent.objects.filter(action="memory.change.propose").count() == 1

    with pytest.raises(Conflict) as again:
        changes.change_approve(actor=operator, change=change)
    assert again.value.code == "change_not_pending"
    assert upkeep.consolidation_dedup(account_id=account) == {
        "pairs": 0,
        "merged": 0,
        "kept_distinct": 0,
    }


def test_auto_applies_directly(agent_client: AuthedAgent) -> None:
    context = ltm.context_create(actor=actor_for_agent(agent_client.agent), name="auto")
    _, twin = duplicates(agent_client, context)
    counts = upkeep.consolidation_dedup(account_id=agent_client.agent.account_id)
    assert counts["merged"] == 1 and "pending" not in counts
    assert not live(twin) and PendingChange.objects.count() == 0


# --- reject, roles, expiry, outdated -----------------------------------------------------------


def test_a_rejection_needs_a_reason_and_is_not_proposed_again(agent_client: AuthedAgent) -> None:
    context = review_context(agent_client)
    kept, twin = duplicates(agent_client, context)
    account = agent_client.agent.account_id
    upkeep.consolidation_dedup(account_id=account)
    change = PendingChange.objects.get()
    owner = person_actor(agent_client, "owner")

    for reason in ("", "   "):
        with pytest.raises(ValidationFailed) as refused:
            changes.change_reject(actor=owner, change=change, reason=reason)
        assert refused.value.code == "reason_required"
    with pytest.raises(ValidationFailed):
        changes.change_reject(actor=owner, change=change, reason="x" * 2001)
    done = changes.change_reject(actor=owner, change=change, reason="They differ by region.")
    assert done.status == "rejected" and done.decision_reason == "They differ by region."
    assert live(kept) and live(twin)
    event = AuditEvent.objects.get(action="memory.change.reject")
    assert event.changes["reason"] == "They differ by region." and event.user_id == owner.user_id

    upkeep.consolidation_dedup(account_id=account)
    assert PendingChange.objects.count() == 1 and live(twin)
    with pytest.raises(Conflict):
        changes.change_approve(actor=owner, change=change)


def test_only_owners_and_operators_of_the_account_decide(
    agent_client: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    context = review_context(agent_client)
    duplicates(agent_client, context)
    upkeep.consolidation_dedup(account_id=agent_client.agent.account_id)
    change = PendingChange.objects.get()

    admin_agent = actor_for_agent(agent_client.agent)
    for actor in (
        admin_agent,
        person_actor(agent_client, "author"),
        person_actor(agent_client, "reviewer"),
    ):
        with pytest.raises(PermissionDenied):
            changes.change_approve(actor=actor, change=change)
        with pytest.raises(PermissionDenied):
            changes.change_reject(actor=actor, change=change, reason="no")
    stranger = person_actor(other_agent_client, "owner")
    with pytest.raises(PermissionDenied):
        changes.change_approve(actor=stranger, change=change)
    # The stranger's queue never shows it; a reviewer of the account does not see the queue.
    assert not change_selectors.pending_changes_for(stranger).exists()
    with pytest.raises(NotFound):
        change_selectors.pending_change_get(stranger, change.pk)
    assert not change_selectors.pending_changes_for(person_actor(agent_client, "author")).exists()
    assert PendingChange.objects.get().status == "pending"


def test_pending_changes_expire_and_are_never_applied(
    agent_client: AuthedAgent, clock: Clock, settings: Any
) -> None:
    settings.MEMORY_PENDING_CHANGE_TTL_DAYS = 2
    context = review_context(agent_client)
    kept, twin = duplicates(agent_client, context)
    other = write(agent_client, context, "Invoices go out on the first of the month.")
    other_twin = write(agent_client, context, "Invoices go out on the first of the month.")
    upkeep.consolidation_dedup(account_id=agent_client.agent.account_id)
    first, second = PendingChange.objects.order_by("pk")
    assert first.expires_at == pytest.approx(
        clock.now + timedelta(days=2), abs=timedelta(seconds=1)
    )

    clock.advance(days=2, seconds=1)
    operator = person_actor(agent_client, "operator")
    with pytest.raises(Conflict) as late:
        changes.change_approve(actor=operator, change=first)
    assert late.value.code == "change_expired"
    assert PendingChange.objects.get(pk=first.pk).status == "expired"
    assert live(kept) and live(twin)

    assert changes.pending_changes_expire(dry_run=True) == {"expired": 1}
    assert tasks.expire_pending_changes.apply().get() == {"expired": 1}
    assert PendingChange.objects.get(pk=second.pk).status == "expired"
    assert live(other) and live(other_twin)
    assert AuditEvent.objects.filter(action="memory.change.expire").exists()
    with pytest.raises(Conflict) as decided:
        changes.change_reject(actor=operator, change=second, reason="late")
    assert decided.value.code == "change_not_pending"


def test_an_outdated_change_fails_without_applying(agent_client: AuthedAgent) -> None:
    context = review_context(agent_client)
    kept, twin = duplicates(agent_client, context)
    upkeep.consolidation_dedup(account_id=agent_client.agent.account_id)
    change = PendingChange.objects.get()
    # An agent changes the twin meanwhile (a new version: the old one is history).
    ltm.entry_update(
        actor=actor_for_agent(agent_client.agent),
        entry=twin,
        fields={"content": "Staging moved to port 6543."},
    )
    done = changes.change_approve(actor=person_actor(agent_client, "operator"), change=change)
    assert done.status == "failed" and done.error.startswith("change_outdated")
    assert (
        live(kept)
        and MemoryEntry.objects.get(lineage=twin.lineage, is_current=True).archived_at is None
    )
    assert AuditEvent.objects.filter(action="memory.change.fail").exists()


def test_many_are_decided_at_once_each_on_its_own(agent_client: AuthedAgent) -> None:
    context = review_context(agent_client)
    duplicates(agent_client, context)
    write(agent_client, context, "Invoices go out on the first of the month.")
    write(agent_client, context, "Invoices go out on the first of the month.")
    upkeep.consolidation_dedup(account_id=agent_client.agent.account_id)
    first, second = PendingChange.objects.order_by("pk")
    owner = person_actor(agent_client, "owner")
    changes.change_reject(actor=owner, change=second, reason="keep both")
    with pytest.raises(ValidationFailed):
        changes.changes_decide(actor=owner, changes=[first], approve=False, reason="")
    with pytest.raises(ValidationFailed):
        changes.changes_decide(actor=owner, changes=[], approve=True)
    decisions = changes.changes_decide(actor=owner, changes=[first, second], approve=True)
    assert [(d.change_id, d.status, d.code) for d in decisions] == [
        (first.pk, "approved", ""),
        (second.pk, "rejected", "change_not_pending"),
    ]


# --- the other automatic changes ---------------------------------------------------------------


def test_rot_archivals_wait_for_review(agent_client: AuthedAgent, settings: Any) -> None:
    settings.MEMORY_RECENCY_HALF_LIFE_DAYS = 30
    context = review_context(agent_client)
    stale = write(agent_client, context, "ancient trivia", importance=0.0)
    fresh = write(agent_client, context, "new trivia", importance=0.0)
    MemoryEntry.objects.filter(pk=stale.pk).update(created_at=timezone.now() - timedelta(days=300))
    account = agent_client.agent.account_id
    assert upkeep.consolidation_rot(account_id=account) == {"archived": 0, "pending": 1}
    assert upkeep.consolidation_rot(account_id=account) == {"archived": 0}  # held already
    change = PendingChange.objects.get(kind="rot_archive")
    assert change.payload["entry_ids"] == [stale.pk] and live(stale)
    assert change.before["entries"][0]["staleness"] > 0.9
    done = changes.change_approve(actor=person_actor(agent_client, "operator"), change=change)
    assert done.result == {"archived": 1, "skipped": 0}
    assert not live(stale) and live(fresh)


def test_only_decay_beyond_the_threshold_waits_for_review(
    agent_client: AuthedAgent, settings: Any
) -> None:
    settings.MEMORY_IMPORTANCE_HALF_LIFE_DAYS = 30
    settings.MEMORY_REVIEW_DECAY_THRESHOLD = 0.2
    context = review_context(agent_client)
    big = write(agent_client, context, "old memory", importance=0.8)  # 0.8 -> 0.2
    small = write(agent_client, context, "newer memory", importance=0.8)  # 0.8 -> ~0.67
    now = timezone.now()
    MemoryEntry.objects.filter(pk=big.pk).update(created_at=now - timedelta(days=60))
    MemoryEntry.objects.filter(pk=small.pk).update(created_at=now - timedelta(days=8))
    account = agent_client.agent.account_id

    assert upkeep.consolidation_decay(account_id=account, dry_run=True) == {
        "decayed": 1,
        "dry_run": 1,
        "pending": 1,
    }
    assert upkeep.consolidation_decay(account_id=account) == {"decayed": 1, "pending": 1}
    values = dict(MemoryEntry.objects.values_list("pk", "importance"))
    assert values[big.pk] == 0.8 and values[small.pk] == pytest.approx(
        0.8 * 0.5 ** (8 / 30), rel=1e-3
    )
    change = PendingChange.objects.get(kind="importance_decay")
    assert change.payload["entries"][0]["id"] == big.pk
    assert change.after["entries"][0]["importance"] == pytest.approx(0.2, rel=1e-3)
    upkeep.consolidation_decay(account_id=account)
    assert PendingChange.objects.filter(kind="importance_decay").count() == 1

    changes.change_approve(actor=person_actor(agent_client, "owner"), change=change)
    assert MemoryEntry.objects.get(pk=big.pk).importance == pytest.approx(0.2, rel=1e-3)


def test_promotions_wait_for_review_in_an_agents_own_memory(agent_client: AuthedAgent) -> None:
    client = agent_client.client
    assert client.put(
        f"{BASE}/short-term/s1/deploy", {"value": "fridays"}, format="json"
    ).status_code in (200, 201)
    for _ in range(3):
        client.get(f"{BASE}/short-term/s1/deploy")
    own = ltm.agent_memory_context(actor=actor_for_agent(agent_client.agent))
    assert (
        client.patch(
            f"{BASE}/contexts/{own.pk}", {"change_policy": "review"}, format="json"
        ).status_code
        == 200
    )
    account = agent_client.agent.account_id
    counts = consolidation.consolidation_promote(account_id=account)
    assert counts == {"candidates": 1, "promoted": 0, "pending": 1}
    assert consolidation.consolidation_promote(account_id=account)["promoted"] == 0
    assert PendingChange.objects.count() == 1 and not MemoryEntry.objects.exists()
    change = PendingChange.objects.get(kind="promotion")
    assert change.after["entries"][0]["content"] == "deploy: fridays"
    done = changes.change_approve(actor=person_actor(agent_client, "operator"), change=change)
    assert done.result == {"promoted": 1, "skipped": 0}
    entry = MemoryEntry.objects.get()
    assert entry.context_id == own.pk and entry.metadata["key"] == "deploy"
    assert consolidation.consolidation_promote(account_id=account)["promoted"] == 0


def test_agent_writes_through_the_memory_tools_can_wait_for_review(
    agent_client: AuthedAgent,
) -> None:
    actor = actor_for_agent(agent_client.agent)
    own = ltm.agent_memory_context(actor=actor)
    response = agent_client.client.patch(
        f"{BASE}/contexts/{own.pk}", {"agent_write_policy": "review"}, format="json"
    )
    assert response.json()["agent_write_policy"] == "review"
    text = "Deployments of the billing service happen on Fridays after the freeze."
    out = agent_client.client.post(f"{BASE}/tools/write", {"text": text}, format="json").json()
    assert out["written"] is False and out["reason"] == tools.PENDING_REVIEW
    assert out["memory"] is None and not MemoryEntry.objects.exists()
    change = PendingChange.objects.get(pk=out["pending_change_id"])
    assert change.kind == "agent_write" and change.agent_id == agent_client.agent.pk
    done = changes.change_approve(actor=person_actor(agent_client, "operator"), change=change)
    entry = MemoryEntry.objects.get(pk=done.result["entry_id"])
    assert entry.author_id == agent_client.agent.pk and entry.context_id == own.pk
    assert entry.metadata["written_by"] == "memory_tools"


# --- the API: filters, bad input, tenancy --------------------------------------------------------


def test_the_queue_filters_and_is_tenant_scoped(
    agent_client: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    mine = review_context(agent_client)
    duplicates(agent_client, mine)
    theirs = review_context(other_agent_client, "their-notes")
    duplicates(other_agent_client, theirs)
    for authed in (agent_client, other_agent_client):
        upkeep.consolidation_dedup(account_id=authed.agent.account_id)
    own_change = PendingChange.objects.get(account_id=agent_client.agent.account_id)
    intruder_change = PendingChange.objects.get(account_id=other_agent_client.agent.account_id)

    client = agent_client.client

    def ids(query: str) -> list[int]:
        response = client.get(f"{BASE}/pending-changes{query}")
        assert response.status_code == 200, response.json()
        return [c["id"] for c in response.json()["results"]]

    assert ids("") == [own_change.pk]
    assert ids("?status=pending&kind=dedup_merge") == [own_change.pk]
    assert ids(f"?context_id={mine.pk}") == [own_change.pk]
    assert ids(f"?context_id={theirs.pk}") == []
    assert ids("?status=approved") == [] and ids("?kind=rot_archive") == []
    for bad in ("?status=done", "?kind=nope", "?context_id=x", "?context_id=0", "?colour=red"):
        assert client.get(f"{BASE}/pending-changes{bad}").status_code == 400, bad
    assert client.get(f"{BASE}/pending-changes?page_size=0").status_code == 400
    missing = client.get(f"{BASE}/pending-changes/{intruder_change.pk}")
    assert missing.status_code == 404 and code(missing) == "pending_change_not_found"
    assert client.get(f"{BASE}/pending-changes/999999999").json() == missing.json()
    # Read-only for agents: no method decides.
    assert (
        client.post(f"{BASE}/pending-changes/{own_change.pk}", {}, format="json").status_code == 405
    )
    assert client.patch(f"{BASE}/pending-changes", {}, format="json").status_code == 405


def test_an_agent_sees_the_changes_of_contexts_it_may_read(
    agent_client: AuthedAgent, teammate: AuthedAgent
) -> None:
    private = review_context(agent_client)  # scope agent: only its owner reads it
    duplicates(agent_client, private)
    upkeep.consolidation_dedup(account_id=agent_client.agent.account_id)
    change = PendingChange.objects.get()
    assert teammate.client.get(f"{BASE}/pending-changes").json()["results"] == []
    assert teammate.client.get(f"{BASE}/pending-changes/{change.pk}").status_code == 404
    ltm.context_grant(
        actor=actor_for_agent(agent_client.agent),
        context=private,
        agent_id=teammate.agent.pk,
        level="read",
    )
    listed = teammate.client.get(f"{BASE}/pending-changes").json()["results"]
    assert [c["id"] for c in listed] == [change.pk]


def test_the_admin_queue_decides_one_or_many(agent_client: AuthedAgent) -> None:
    from django.test import Client
    from django.urls import reverse

    context = review_context(agent_client)
    duplicates(agent_client, context)
    write(agent_client, context, "Invoices go out on the first of the month.")
    write(agent_client, context, "Invoices go out on the first of the month.")
    write(agent_client, context, "The VPN gateway restarts every Sunday night.")
    write(agent_client, context, "The VPN gateway restarts every Sunday night.")
    upkeep.consolidation_dedup(account_id=agent_client.agent.account_id)
    first, second, third = PendingChange.objects.order_by("pk")
    user = UserFactory.create(is_staff=True)
    core_services.membership_grant(account=agent_client.agent.account, user=user, role="operator")
    client = Client()
    client.force_login(user)
    page = client.get(reverse("admin:memory_pendingchange_change", args=[first.pk]))
    assert page.status_code == 200 and "approve-change" in page.content.decode()
    assert 'name="_save"' not in page.content.decode()

    decide = reverse("admin:memory_pendingchange_decide", args=[first.pk])
    client.post(decide, {"_reject": "1", "reason": ""})
    assert PendingChange.objects.get(pk=first.pk).status == "pending"
    client.post(decide, {"_reject": "1", "reason": "Both are needed."})
    assert PendingChange.objects.get(pk=first.pk).decision_reason == "Both are needed."

    changelist = reverse("admin:memory_pendingchange_changelist")
    asked = client.post(changelist, {"action": "reject_selected", "_selected_action": [second.pk]})
    assert asked.status_code == 200 and "reject_form" in asked.content.decode()
    client.post(
        changelist,
        {
            "action": "reject_selected",
            "_selected_action": [second.pk],
            "_reject": "1",
            "reason": "Not now.",
        },
    )
    assert PendingChange.objects.get(pk=second.pk).status == "rejected"
    client.post(
        changelist, {"action": "approve_selected", "_selected_action": [third.pk, first.pk]}
    )
    assert PendingChange.objects.get(pk=third.pk).status == "approved"
    assert PendingChange.objects.get(pk=first.pk).status == "rejected"
    assert client.get(reverse("admin:memory_rot_report")).status_code == 200
