"""Permission-scoped reads of core data."""

from __future__ import annotations

from core.actors import Actor
from core.errors import NotFound
from core.models import Agent, JobRun


def agent_get(*, actor: Actor, agent_id: int) -> Agent:
    agent = Agent.objects.for_actor(actor).select_related("account").filter(pk=agent_id).first()
    if agent is None:
        raise NotFound("No such agent.", code="agent_not_found")
    return agent


def agent_list(*, actor: Actor) -> list[Agent]:
    return list(Agent.objects.for_actor(actor).select_related("account").order_by("name"))


def job_run_latest(*, job: str) -> JobRun | None:
    return JobRun.objects.filter(job=job).order_by("-started_at").first()
