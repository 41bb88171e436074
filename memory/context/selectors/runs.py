"""An agent run's memory-tool counters (``memory.context.run_budget``), read."""

from __future__ import annotations

from core.actors import Actor
from memory.agents import acting_agent
from memory.context import run_budget


def memory_run_get(*, actor: Actor, run_id: str) -> run_budget.RunReport:
    """The calling agent's run: memories written, memories checked, searches (404
    ``run_not_found`` for a run it never used or that expired)."""
    return run_budget.run_report(acting_agent(actor), run_id)
