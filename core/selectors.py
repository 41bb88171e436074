"""Permission-scoped reads of core data."""

from __future__ import annotations

from django.db.models import QuerySet

from core.actors import Actor
from core.errors import NotFound
from core.models import Agent, ApiKey


def agent_list(*, actor: Actor) -> QuerySet[Agent]:
    return Agent.objects.for_actor(actor).select_related("account")


def agent_get(*, actor: Actor, agent_id: int) -> Agent:
    agent = agent_list(actor=actor).filter(pk=agent_id).first()
    if agent is None:
        raise NotFound("No such agent.", code="agent_not_found")
    return agent


def api_key_list(*, actor: Actor, agent_id: int | None = None) -> QuerySet[ApiKey]:
    keys = ApiKey.objects.filter(agent__account_id__in=actor.account_ids).select_related("agent")
    if agent_id is not None:
        keys = keys.filter(agent_id=agent_id)
    return keys


def api_key_get(*, actor: Actor, prefix: str) -> ApiKey:
    key = api_key_list(actor=actor).filter(prefix=prefix).first()
    if key is None:
        raise NotFound("No such API key.", code="api_key_not_found")
    return key
