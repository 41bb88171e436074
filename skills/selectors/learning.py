"""Learning profiles and agent ranking (seed 002; the formulas in ``skills.learning``,
docs/skills.md with worked examples).

Ranking reads, for the task type, every candidate agent's stored profile (its 100 most recent
executions as times and outcomes, kept by each usage record) and its load (open task
assignments), and scores them against the moment of the request: a handful of indexed queries
and vectorised arithmetic, however many executions the agents have.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Sum
from django.utils import timezone

from core.actors import Actor
from core.errors import NotFound
from core.models import Agent
from rag.keyword import analyze
from skills import learning
from skills.categories import CATEGORIES, keyword_votes
from skills.models import AgentTrust, LearningProfile, TaskAssignment

# Results a ranking answers with (the best); ``candidates`` says how many were scored.
RANK_RESULTS = 50
GENERAL = "general"
_SEPARATORS = re.compile(r"[_.:\-]+")


def task_type_infer(*, account_id: int, title: str, description: str) -> str:
    """The task type of a title and description: a task type the account's agents have run
    whose every word appears in them (the most specific, then the most run), else the
    category their words suggest most (``skills.categories``), else ``general``."""
    words = set(analyze(f"{title}\n{description}"))
    known = (
        LearningProfile.objects.filter(account_id=account_id)
        .values("task_type")
        .annotate(runs=Sum("total_executions"))
        .order_by()
    )
    best: tuple[int, int, str] | None = None
    for row in known:
        task_type = row["task_type"]
        terms = set(analyze(_SEPARATORS.sub(" ", task_type)))
        if terms and terms <= words:
            candidate = (len(terms), int(row["runs"] or 0), task_type)
            if (
                best is None
                or candidate[:2] > best[:2]
                or (candidate[:2] == best[:2] and candidate[2] < best[2])
            ):
                best = candidate
    if best is not None:
        return best[2]
    votes = keyword_votes([title, description])
    if votes:
        return max(CATEGORIES, key=lambda c: (votes.get(c, 0), -CATEGORIES.index(c)))
    return GENERAL


@dataclass(frozen=True)
class AgentScore:
    agent_id: int
    agent_name: str
    score: float
    expertise: float
    confidence: float
    base: float
    load: int
    capacity: int
    executions: int
    success_rate: float
    recent_success_rate: float
    trust_score: float


@dataclass
class Ranking:
    task_type: str
    inferred: bool
    use_recency: bool
    candidates: int
    results: list[AgentScore] = field(default_factory=list)
    elapsed_ms: float = 0.0

    @property
    def has_history(self) -> bool:
        return any(r.executions for r in self.results)


def agent_loads(account_id: int, agent_ids: Sequence[int] | None = None) -> dict[int, int]:
    """Open task assignments per agent."""
    open_tasks = TaskAssignment.objects.filter(
        account_id=account_id, status=TaskAssignment.Status.ASSIGNED
    )
    if agent_ids is not None:
        open_tasks = open_tasks.filter(agent_id__in=list(agent_ids))
    return dict(
        open_tasks.values("agent_id")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("agent_id", "n")
    )


def rank_agents(
    *,
    actor: Actor,
    title: str,
    description: str = "",
    task_type: str | None = None,
    use_recency: bool = False,
    agent_ids: Sequence[int] | None = None,
    limit: int = RANK_RESULTS,
    now: datetime | None = None,
    account_id: int | None = None,
) -> Ranking:
    """Score every active agent of the account (or of ``agent_ids``, all of which must be
    the account's: 404 ``agent_not_found``) for a task, best first:
    0.3 x base + 0.5 x expertise + 0.2 x confidence. Without ``task_type`` it is inferred from
    the title and description (``task_type_infer``)."""
    started = time.perf_counter()
    account_id = actor.account_id if account_id is None else account_id
    inferred = task_type is None or not task_type.strip()
    kind = (
        task_type_infer(account_id=account_id, title=title, description=description)
        if inferred
        else learning.task_type_normalise(task_type or "")
    )
    agents = Agent.objects.filter(account_id=account_id, status=Agent.Status.ACTIVE)
    if agent_ids is not None:
        wanted = set(agent_ids)
        if Agent.objects.filter(account_id=account_id, pk__in=wanted).count() != len(wanted):
            raise NotFound("No such agent.", code="agent_not_found")
        agents = agents.filter(pk__in=wanted)
    candidates = list(agents.values_list("pk", "name", "metadata"))
    ids = [pk for pk, _, _ in candidates]
    restrict = ids if agent_ids is not None else None
    profiles_query = LearningProfile.objects.filter(account_id=account_id, task_type=kind)
    if restrict is not None:
        profiles_query = profiles_query.filter(agent_id__in=restrict)
    profiles = {
        row[0]: row
        for row in profiles_query.values_list(
            "agent_id",
            "executions",
            "success_rate",
            "confidence",
            "window_times",
            "window_outcomes",
        )
    }
    loads = agent_loads(account_id, restrict)
    trust_query = AgentTrust.objects.filter(account_id=account_id)
    if restrict is not None:
        trust_query = trust_query.filter(agent_id__in=restrict)
    trusts = dict(trust_query.values_list("agent_id", "trust_score"))
    moment = (now or timezone.now()).timestamp()
    scored = []
    for agent_id, name, metadata in candidates:
        capacity = learning.capacity_of(metadata)
        load = loads.get(agent_id, 0)
        base = learning.base_score(available=True, load=load, capacity=capacity)
        profile = profiles.get(agent_id)
        if profile is None:
            executions, rate, confidence, recent = 0, 0.0, 0.0, 0.0
        else:
            _, executions, rate, confidence, times, outcomes = profile
            recent = learning.recent_success_rate(times, outcomes, moment)
        expertise = recent if use_recency else rate
        scored.append(
            AgentScore(
                agent_id=agent_id,
                agent_name=name,
                score=learning.agent_score(base=base, expertise=expertise, confidence=confidence),
                expertise=expertise,
                confidence=confidence,
                base=base,
                load=load,
                capacity=capacity,
                executions=executions,
                success_rate=rate,
                recent_success_rate=recent,
                trust_score=trusts.get(agent_id, 0.5),
            )
        )
    scored.sort(key=lambda s: (-s.score, s.load, s.agent_id))
    return Ranking(
        task_type=kind,
        inferred=inferred,
        use_recency=use_recency,
        candidates=len(scored),
        results=scored[:limit],
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def least_loaded(ranking_results: Sequence[AgentScore]) -> AgentScore | None:
    """The fallback when no candidate has history: the lowest load relative to capacity (then
    the lowest load, then the lowest id)."""
    if not ranking_results:
        return None
    return min(ranking_results, key=lambda s: (s.load / s.capacity, s.load, s.agent_id))


# --- profiles --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskTypeProfile:
    task_type: str
    executions: int
    total_executions: int
    successes: int
    success_rate: float
    recent_success_rate: float
    confidence: float
    last_execution_at: datetime | None
    learning_curve: list[learning.CurvePoint]


@dataclass(frozen=True)
class AgentProfile:
    agent: Agent
    trust_score: float
    last_active_at: datetime | None
    load: int
    capacity: int
    task_types: list[TaskTypeProfile]


def learning_profile(*, agent: Agent, now: datetime | None = None) -> AgentProfile:
    """An agent's profile per task type (most run first): rates, confidence and the learning
    curve over daily windows of its 100 most recent executions of each type."""
    moment = (now or timezone.now()).timestamp()
    task_types = []
    for profile in LearningProfile.objects.filter(agent=agent).order_by(
        "-total_executions", "task_type"
    ):
        times, outcomes = list(profile.window_times), list(profile.window_outcomes)
        task_types.append(
            TaskTypeProfile(
                task_type=profile.task_type,
                executions=profile.executions,
                total_executions=profile.total_executions,
                successes=profile.successes,
                success_rate=profile.success_rate,
                recent_success_rate=learning.recent_success_rate(times, outcomes, moment),
                confidence=profile.confidence,
                last_execution_at=profile.last_execution_at,
                learning_curve=learning.learning_curve(times, outcomes),
            )
        )
    trust = AgentTrust.objects.filter(agent=agent).first()
    return AgentProfile(
        agent=agent,
        trust_score=trust.trust_score if trust else 0.5,
        last_active_at=trust.last_active_at if trust else None,
        load=agent_loads(agent.account_id, [agent.pk]).get(agent.pk, 0),
        capacity=learning.capacity_of(agent.metadata),
        task_types=task_types,
    )


def assignment_get(*, actor: Actor, assignment_id: int) -> TaskAssignment:
    found = TaskAssignment.objects.for_actor(actor).filter(pk=assignment_id).first()
    if found is None:
        raise NotFound("No such task assignment.", code="task_not_found")
    return found
