"""An agent run's memory-tool counters in Redis (seed 004's run dependencies): memories written,
memories checked (returned by its searches) and searches, with the search budget
(``MEMORY_RUN_MAX_SEARCHES``) enforced atomically, so processes serving one run share it.

A run is the calling agent's own (keys carry account and agent); its counters expire
``MEMORY_RUN_TTL_SECONDS`` after the last use. Redis down: 503 ``memory_unavailable``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings

from core.errors import NotFound, Throttled
from core.models import Agent
from memory import names
from memory.redis_store import memory_redis, redis_prefix, working_memory_available

WRITTEN, CHECKED, SEARCHES = "memories_written", "memories_checked", "searches"

# Count one search unless the budget is spent: the new count, or -(count + 1) when refused.
_SEARCH = """
local n = tonumber(redis.call('HGET', KEYS[1], 'searches') or '0')
if n >= tonumber(ARGV[1]) then return -(n + 1) end
n = redis.call('HINCRBY', KEYS[1], 'searches', 1)
redis.call('HSETNX', KEYS[1], 'started_at', ARGV[3])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
return n
"""


def _key(agent: Agent, run_id: str) -> str:
    names.check_run_id(run_id)
    return f"{redis_prefix()}:run:{agent.account_id}:{agent.pk}:{run_id}"


def _now() -> str:
    return datetime.now(UTC).isoformat()


def search_count(agent: Agent, run_id: str) -> int:
    """Count a search of the run, or raise 429 ``search_budget_exhausted`` when it has made
    ``MEMORY_RUN_MAX_SEARCHES`` already (nothing counted then)."""
    limit = int(settings.MEMORY_RUN_MAX_SEARCHES)
    with working_memory_available():
        client = memory_redis()
        result = int(
            client.eval(
                _SEARCH, 1, _key(agent, run_id), limit, settings.MEMORY_RUN_TTL_SECONDS, _now()
            )
        )
    if result < 0:
        raise Throttled(
            f"This run has made its {limit} memory searches.",
            code="search_budget_exhausted",
            details={"run_id": run_id, "searches": -result - 1, "max_searches": limit},
        )
    return result


def add(agent: Agent, run_id: str, field: str, amount: int = 1) -> None:
    """Add to one of the run's counters (memories written, memories checked)."""
    key = _key(agent, run_id)
    with working_memory_available():
        pipe = memory_redis().pipeline(transaction=True)
        pipe.hincrby(key, field, amount)
        pipe.hsetnx(key, "started_at", _now())
        pipe.expire(key, settings.MEMORY_RUN_TTL_SECONDS)
        pipe.execute()


@dataclass(frozen=True)
class RunReport:
    run_id: str
    memories_written: int
    memories_checked: int
    searches: int
    max_searches: int
    started_at: str
    expires_in: int


def run_report(agent: Agent, run_id: str) -> RunReport:
    """The run's counters; 404 ``run_not_found`` for a run this agent never used (or one that
    expired, or another agent's)."""
    key = _key(agent, run_id)
    with working_memory_available():
        pipe = memory_redis().pipeline(transaction=True)
        pipe.hgetall(key)
        pipe.ttl(key)
        raw, ttl = pipe.execute()
    if not raw:
        raise NotFound("No such run.", code="run_not_found")
    values = {k.decode(): v.decode() for k, v in raw.items()}
    return RunReport(
        run_id=run_id,
        memories_written=int(values.get(WRITTEN, 0)),
        memories_checked=int(values.get(CHECKED, 0)),
        searches=int(values.get(SEARCHES, 0)),
        max_searches=int(settings.MEMORY_RUN_MAX_SEARCHES),
        started_at=values.get("started_at", ""),
        expires_in=max(0, int(ttl)),
    )
