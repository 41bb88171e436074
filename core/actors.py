"""Who is acting: an agent (API key) or an operator's tool on one account. Selectors take one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.models import Agent, ApiKey


@dataclass(frozen=True)
class Actor:
    """The caller, reduced to what permission checks need. Build with the helpers below."""

    account_ids: frozenset[int]
    agent: Agent | None = None
    api_key: ApiKey | None = None

    @property
    def account_id(self) -> int:
        """The account writes go to: an agent's own, or the actor's only account."""
        if self.agent is not None:
            return self.agent.account_id
        if len(self.account_ids) == 1:
            return next(iter(self.account_ids))
        raise ValueError("this actor spans several accounts; name one")


def actor_for_agent(agent: Agent, api_key: ApiKey | None = None) -> Actor:
    return Actor(account_ids=frozenset({agent.account_id}), agent=agent, api_key=api_key)


def actor_for_account(account_id: int) -> Actor:
    """For operators' command-line tools acting on one account."""
    return Actor(account_ids=frozenset({account_id}))
