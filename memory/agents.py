"""Who a memory belongs to: working and short-term memory are an agent's own, in its own
namespace; people and tools have none. Shared by the tiers' services and selectors."""

from __future__ import annotations

from core.actors import Actor
from core.errors import NotFound, PermissionDenied
from core.models import Agent
from memory import names
from memory.working import store as wr


def acting_agent(actor: Actor) -> Agent:
    """Working and short-term memory are an agent's own: people and tools have none."""
    if actor.agent is None:
        raise PermissionDenied(
            "This memory belongs to agents: call with an agent's API key.",
            code="agent_required",
        )
    return actor.agent


def session_of(actor: Actor, session_id: str) -> wr.Namespace:
    agent = acting_agent(actor)
    names.check_session_id(session_id)
    return wr.session_namespace(agent.account_id, agent.pk, session_id)


def agent_in_account(actor: Actor, agent_id: int) -> Agent:
    """Another agent of the caller's account (a foreign or unknown id: 404 alike)."""
    agent = Agent.objects.filter(account_id=acting_agent(actor).account_id, pk=agent_id).first()
    if agent is None:
        raise NotFound("No such agent.", code="agent_not_found")
    return agent
