"""The review queue's pages (docs/admin.md, "For operators: the review queue"): a pending
change's page highlights the statements it would archive, with what becomes of each when the
change says so (and everything escaped); bulk approve and reject from the list decide each
change through the services, skip and report what cannot be decided, and never answer 500."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from core import services as core_services
from core.actors import actor_for_agent
from core.models import AuditEvent
from memory.long_term import services as ltm
from memory.maintenance.services import changes, upkeep
from memory.models import PendingChange
from tests.conftest import AuthedAgent
from tests.factories import UserFactory
from tests.memory.test_change_archives import ABSORBED, cluster_rewrite, context_of

pytestmark = pytest.mark.django_db

TOPICS = (
    "The staging database runs on port 5433.",
    "Invoices go out on the first of the month.",
    "The VPN gateway restarts every Sunday night.",
)


def operator_client(authed: AuthedAgent) -> Client:
    user = UserFactory.create(is_staff=True)
    core_services.membership_grant(account=authed.agent.account, user=user, role="operator")
    client = Client()
    client.force_login(user)
    return client


def marks(page: str) -> list[tuple[str, str, str]]:
    """(fate, note, text) of each statement marked in the archived entries' texts."""
    texts = re.findall(r'<p class="entry-text">(.*?)</p>', page, re.S)
    return [
        (fate, note, text)
        for block in texts
        for fate, note, text in re.findall(
            r'<mark class="statement (\w+)" data-fate="\w+" title="([^"]*)">(.*?)</mark>', block
        )
    ]


def test_a_change_that_says_what_becomes_of_each_statement_shows_it(
    agent_client: AuthedAgent,
) -> None:
    actor = actor_for_agent(agent_client.agent)
    change, (kept, absorbed, other) = cluster_rewrite(
        actor, context_of(actor), with_statements=True
    )
    page = (
        operator_client(agent_client)
        .get(reverse("admin:memory_pendingchange_change", args=[change.pk]))
        .content.decode()
    )
    assert marks(page) == [
        (
            "covered",
            f"still said by memory #{kept.pk}: Lena works at Acme in Lyon",
            "Lena works at Acme",
        ),
        ("carried", "carried over into the kept memory", "is allergic to peanuts"),
        (
            "covered",
            f"still said by memory #{other.pk}: Lena drinks green tea every morning",
            "she drinks &lt;b&gt;green&lt;/b&gt; tea",
        ),
    ]
    assert f'id="archived-entry-{absorbed.pk}"' in page
    assert "<b>green</b>" not in page  # the entry's text is escaped, never markup
    assert "carried over into the kept memory; blue, still said by another memory" in page
    # The statements are listed with their fates under the text, too.
    assert "is allergic to peanuts</mark> — carried over into the kept memory</li>" in page


def test_a_change_without_the_key_highlights_every_statement_as_archived(
    agent_client: AuthedAgent,
) -> None:
    actor = actor_for_agent(agent_client.agent)
    change, _ = cluster_rewrite(actor, context_of(actor), with_statements=False)
    page = (
        operator_client(agent_client)
        .get(reverse("admin:memory_pendingchange_change", args=[change.pk]))
        .content.decode()
    )
    assert marks(page) == [
        ("archived", "would be archived", "Lena works at Acme"),
        ("archived", "would be archived", "is allergic to peanuts"),
        ("archived", "would be archived", "she drinks &lt;b&gt;green&lt;/b&gt; tea"),
    ]
    assert "all would be archived" in page
    # The marks sit in the entry's whole text, escaped.
    (text,) = re.findall(r'<p class="entry-text">(.*?)</p>', page, re.S)
    assert re.sub(r"<[^>]+>", "", text) == escape(ABSORBED)


def test_a_change_that_archives_nothing_shows_no_highlights(agent_client: AuthedAgent) -> None:
    actor = actor_for_agent(agent_client.agent)
    context = context_of(actor)
    submitted = changes.change_submit(
        actor=actor,
        account_id=context.account_id,
        kind="importance_decay",
        payload={
            "context_id": context.pk,
            "computed_at": timezone.now().isoformat(),
            "entries": [],
        },
        context=context,
    )
    assert submitted.change is not None
    page = (
        operator_client(agent_client)
        .get(reverse("admin:memory_pendingchange_change", args=[submitted.change.pk]))
        .content.decode()
    )
    assert 'class="statement-highlights"' not in page and "Statements archived" in page


def pending(authed: AuthedAgent) -> list[PendingChange]:
    actor = actor_for_agent(authed.agent)
    context = ltm.context_create(actor=actor, name="team-notes", change_policy="review")
    ltm.entries_write(
        actor=actor,
        context=context,
        items=[ltm.EntryInput(content=text) for text in TOPICS for _ in range(2)],
    )
    upkeep.consolidation_dedup(account_id=authed.agent.account_id)
    return list(PendingChange.objects.filter(account=authed.agent.account).order_by("pk"))


def act(client: Client, action: str, changes: list[Any], **extra: Any) -> tuple[int, list[str]]:
    response = client.post(
        reverse("admin:memory_pendingchange_changelist"),
        {"action": action, "_selected_action": [getattr(c, "pk", c) for c in changes], **extra},
        follow=True,
    )
    return response.status_code, [str(m) for m in get_messages(response.wsgi_request)]


def test_bulk_decisions_skip_and_report_what_cannot_be_decided(
    agent_client: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    first, second, third = pending(agent_client)
    foreign = pending(other_agent_client)[0]
    client = operator_client(agent_client)
    PendingChange.objects.filter(pk=third.pk).update(expires_at=timezone.now())

    status, shown = act(client, "approve_selected", [first, third, foreign])
    assert status == 200
    assert f"Approved 1 pending memory change: dedup_merge #{first.pk}." in shown
    assert any(m.startswith(f"Skipped dedup_merge #{third.pk}: This change expired") for m in shown)
    # Another account's change is not in the list: counted, never named, never decided.
    assert "Skipped 1 selected change no longer in this list." in shown
    assert [PendingChange.objects.get(pk=c.pk).status for c in (first, third, foreign)] == [
        "approved",
        "expired",
        "pending",
    ]

    # Rejecting asks for the reason on a page of its own that names what will be skipped.
    asked = client.post(
        reverse("admin:memory_pendingchange_changelist"),
        {"action": "reject_selected", "_selected_action": [first.pk, second.pk]},
    )
    assert asked.status_code == 200
    assert "Reject 1 pending change" in asked.content.decode()
    assert "(already approved (applied): skipped)" in asked.content.decode()
    status, shown = act(
        client, "reject_selected", [first, second], _reject="1", reason="Keep both."
    )
    assert status == 200
    assert f"Rejected 1 pending memory change: dedup_merge #{second.pk}." in shown
    assert any(
        m.startswith(f"Skipped dedup_merge #{first.pk}: This change is approved") for m in shown
    )
    rejected = PendingChange.objects.get(pk=second.pk)
    assert (rejected.status, rejected.decision_reason) == ("rejected", "Keep both.")
    event = AuditEvent.objects.get(action="memory.change.reject", target_id=str(second.pk))
    assert event.user is not None and event.user.is_staff

    # Nothing left to reject: said so, no page.
    status, shown = act(client, "reject_selected", [first, second])
    assert status == 200 and shown == [
        "None of the selected changes is pending: nothing to reject."
    ]


def test_bulk_decisions_are_bounded(
    agent_client: AuthedAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second, _ = pending(agent_client)
    client = operator_client(agent_client)
    monkeypatch.setattr(changes, "MAX_BULK", 1)
    for action in ("approve_selected", "reject_selected"):
        status, shown = act(client, action, [first, second], _reject="1", reason="No.")
        assert status == 200
        assert shown == ["Decide at most 1 changes at a time: nothing was decided."]
    assert {c.status for c in PendingChange.objects.filter(pk__in=[first.pk, second.pk])} == {
        "pending"
    }
