"""The review queue's pages (docs/admin.md, "For operators: the review queue"): a pending
change's page highlights the statements it would archive, with what becomes of each when the
change says so (and everything escaped)."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from core import services as core_services
from core.actors import actor_for_agent
from memory.services import changes
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
