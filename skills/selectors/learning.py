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

import numpy as np
from django.db import connection
from django.db.models import Count, Sum
from django.utils import timezone

from core.actors import Actor
from core.errors import NotFound
from core.models import Agent
from rag.keyword import analyze
from skills import learning
from skills.categories import CATEGORIES, keyword_votes
from skills.models import AgentTrust, LearningProfile, TaskAssignment
from skills.tuning import TUNING

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
    # Whether any candidate ran the task type; if none did, assignment takes ``least_loaded``:
    # the lowest load relative to capacity (then the lowest load, then the lowest id).
    has_history: bool = False
    least_loaded: AgentScore | None = None
    elapsed_ms: float = 0.0


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


# Every candidate with its profile for the task type, load and trust, in one statement. The
# window is read only when recency is asked for (%(recency)s).
_CANDIDATES = """
    SELECT a.id, a.name, a.metadata -> 'max_concurrent_tasks',
           coalesce(p.executions, 0), coalesce(p.success_rate, 0), coalesce(p.confidence, 0),
           CASE WHEN %(recency)s THEN p.window END,
           coalesce(l.n, 0), coalesce(t.trust_score, 0.5)
    FROM core_agent a
    LEFT JOIN skills_learningprofile p ON p.agent_id = a.id AND p.task_type = %(kind)s
    LEFT JOIN (
        SELECT agent_id, count(*) AS n FROM skills_taskassignment
        WHERE account_id = %(account)s AND status = 'assigned' GROUP BY agent_id
    ) l ON l.agent_id = a.id
    LEFT JOIN skills_agenttrust t ON t.agent_id = a.id
    WHERE a.account_id = %(account)s AND a.status = 'active'
      AND (%(ids)s::bigint[] IS NULL OR a.id = ANY(%(ids)s::bigint[]))
"""


@dataclass(frozen=True)
class _Table:
    """Every candidate's figures as parallel arrays (vectorised scoring)."""

    ids: np.ndarray
    names: list[str]
    capacity: np.ndarray
    load: np.ndarray
    executions: np.ndarray
    rate: np.ndarray
    recent: np.ndarray
    confidence: np.ndarray
    trust: np.ndarray
    base: np.ndarray
    expertise: np.ndarray
    score: np.ndarray

    def at(self, i: int) -> AgentScore:
        return AgentScore(
            agent_id=int(self.ids[i]),
            agent_name=self.names[i],
            score=float(self.score[i]),
            expertise=float(self.expertise[i]),
            confidence=float(self.confidence[i]),
            base=float(self.base[i]),
            load=int(self.load[i]),
            capacity=int(self.capacity[i]),
            executions=int(self.executions[i]),
            success_rate=float(self.rate[i]),
            recent_success_rate=float(self.recent[i]),
            trust_score=float(self.trust[i]),
        )


def _table(
    account_id: int, kind: str, use_recency: bool, agent_ids: Sequence[int] | None, now: float
) -> _Table:
    with connection.cursor() as cursor:
        cursor.execute(
            _CANDIDATES,
            {
                "account": account_id,
                "kind": kind,
                "recency": use_recency,
                "ids": None if agent_ids is None else list(agent_ids),
            },
        )
        rows = cursor.fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    capacity = np.fromiter(
        (learning.capacity_of({"max_concurrent_tasks": r[2]}) for r in rows),
        dtype=np.float64,
        count=len(rows),
    )
    load = np.fromiter((r[7] for r in rows), dtype=np.float64, count=len(rows))
    executions = np.fromiter((r[3] for r in rows), dtype=np.int64, count=len(rows))
    rate = np.fromiter((r[4] for r in rows), dtype=np.float64, count=len(rows))
    confidence = np.fromiter((r[5] for r in rows), dtype=np.float64, count=len(rows))
    trust = np.fromiter((r[8] for r in rows), dtype=np.float64, count=len(rows))
    recent = (
        learning.recent_success_rates([r[6] for r in rows], now)
        if use_recency
        else np.zeros(len(rows))
    )
    base = np.clip(1.0 - load / capacity, 0.0, 1.0) if len(rows) else np.zeros(0)
    expertise = recent if use_recency else rate
    score = (
        TUNING.learning.weight_base * base
        + TUNING.learning.weight_expertise * expertise
        + TUNING.learning.weight_confidence * confidence
    )
    return _Table(
        ids=ids,
        names=[r[1] for r in rows],
        capacity=capacity,
        load=load,
        executions=executions,
        rate=rate,
        recent=recent,
        confidence=confidence,
        trust=trust,
        base=base,
        expertise=expertise,
        score=score,
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
    the account's: 404 ``agent_not_found``) for a task, best first (then the least loaded, then
    the lowest id): 0.3 x base + 0.5 x expertise + 0.2 x confidence. Without ``task_type`` it
    is inferred from the title and description (``task_type_infer``). ``least_loaded`` of the
    answer is the fallback when no candidate has history."""
    started = time.perf_counter()
    account_id = actor.account_id if account_id is None else account_id
    inferred = task_type is None or not task_type.strip()
    kind = (
        task_type_infer(account_id=account_id, title=title, description=description)
        if inferred
        else learning.task_type_normalise(task_type or "")
    )
    if agent_ids is not None:
        wanted = set(agent_ids)
        if Agent.objects.filter(account_id=account_id, pk__in=wanted).count() != len(wanted):
            raise NotFound("No such agent.", code="agent_not_found")
    moment = (now or timezone.now()).timestamp()
    table = _table(account_id, kind, use_recency, agent_ids, moment)
    order = np.lexsort((table.ids, table.load, -table.score))[:limit]
    fallback = None
    if len(table.ids):
        relative = table.load / table.capacity
        fallback = table.at(int(np.lexsort((table.ids, table.load, relative))[0]))
    return Ranking(
        task_type=kind,
        inferred=inferred,
        use_recency=use_recency,
        candidates=len(table.ids),
        results=[table.at(int(i)) for i in order],
        has_history=bool((table.executions > 0).any()),
        least_loaded=fallback,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
    )


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
        times_array, outcomes_array = learning.window_unpack(profile.window)
        times, outcomes = times_array.tolist(), [bool(o) for o in outcomes_array]
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
