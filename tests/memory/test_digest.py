"""Memory's lines in the daily summary pages (``memory/digest.py``, a ``core.digests`` hook):
counts per context of the entries promoted, written, revised and archived that day, never
their text; private contexts counted together, never named."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from content.services import summaries
from core.digests import DigestItem
from memory import digest
from memory.long_term import services as ltm
from memory.maintenance.services import consolidation
from memory.models import MemoryEntry
from tests.conftest import AuthedAgent
from tests.memory.test_consolidation import context_of, stm, write

pytestmark = pytest.mark.django_db


def test_memory_reports_promotions_writes_revisions_and_archives_per_context(
    agent_client: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    from core.actors import actor_for_agent

    account = agent_client.agent.account_id
    today = timezone.localdate()
    stm(agent_client, "deploy", "billing deploys on fridays", reads=3)
    assert consolidation.consolidation_promote(account_id=account)["promoted"] == 1
    # Every agent of the account reads "notes": it is named; "old" and the agent's own memory
    # are private, counted together without their names.
    notes = ltm.context_create(
        actor=actor_for_agent(agent_client.agent), name="notes", scope="account"
    )
    first = write(agent_client, notes, "The office is in Lisbon.")
    write(agent_client, notes, "Standup at nine.")
    ltm.entry_update(
        actor=actor_for_agent(agent_client.agent), entry=first, fields={"content": "In Porto."}
    )
    stale = write(agent_client, context_of(agent_client, "old"), "Forgotten.")
    MemoryEntry.objects.filter(pk=stale.pk).update(
        created_at=timezone.now() - dt.timedelta(days=40), archived_at=timezone.now()
    )

    items = digest.daily_digest(account_id=account, day=today)

    section = "Long-term memory"
    assert items == [
        DigestItem(section=section, text="context notes: 2 written, 1 revised", count=3),
        DigestItem(
            section=section,
            text="2 private contexts: 1 promoted from short-term memory, 1 archived",
            count=2,
        ),
    ]
    assert digest.daily_digest(account_id=account, day=today - dt.timedelta(days=1)) == []

    with django_capture_on_commit_callbacks(execute=True):
        outcome = summaries.daily_summary_write(account_id=account, day=today)
    assert outcome.page is not None
    content = outcome.page.content
    assert "## Long-term memory (5)" in content
    assert "- context notes: 2 written, 1 revised" in content
    for text in ("Lisbon", "Porto", "Standup", "fridays", "Forgotten", "context old"):
        assert text not in content
    assert agent_client.agent.name not in content
