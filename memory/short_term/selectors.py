"""Short-term memory reads (the read that counts an access is a service: it writes)."""

from __future__ import annotations

from django.db.models import QuerySet
from django.utils import timezone

from core.actors import Actor
from memory import names
from memory.agents import acting_agent
from memory.models import ShortTermEntry


def short_term_list(
    *, actor: Actor, session_id: str, memory_type: str | None = None
) -> QuerySet[ShortTermEntry]:
    """The calling agent's live entries of one session (listing counts no access)."""
    agent = acting_agent(actor)
    names.check_session_id(session_id)
    entries = ShortTermEntry.objects.filter(
        agent=agent, session_id=session_id, expires_at__gt=timezone.now()
    )
    if memory_type:
        entries = entries.filter(memory_type=memory_type)
    return entries
