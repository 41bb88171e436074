"""Who is acting: an agent (API key) or a person (admin, session). Selectors take one of these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

    from core.models import Agent, ApiKey


@dataclass(frozen=True)
class Actor:
    """The caller, reduced to what permission checks need. Build with the helpers below."""

    account_ids: frozenset[int]
    agent: Agent | None = None
    user: User | None = None
    api_key: ApiKey | None = None
    roles: dict[int, frozenset[str]] = field(default_factory=dict)

    @property
    def account_id(self) -> int:
        """The account writes go to: an agent's own, or a person's only account."""
        if self.agent is not None:
            return self.agent.account_id
        if len(self.account_ids) == 1:
            return next(iter(self.account_ids))
        raise ValueError("this actor spans several accounts; name one")

    def can_access_account(self, account_id: int) -> bool:
        return account_id in self.account_ids

    def has_role(self, account_id: int, role: str) -> bool:
        roles = self.roles.get(account_id, frozenset())
        return role in roles or "owner" in roles


def actor_for_agent(agent: Agent, api_key: ApiKey | None = None) -> Actor:
    return Actor(account_ids=frozenset({agent.account_id}), agent=agent, api_key=api_key)


def actor_for_account(account_id: int) -> Actor:
    """For operators' command-line tools acting on one account."""
    return Actor(account_ids=frozenset({account_id}), roles={account_id: frozenset({"owner"})})


def actor_for_user(user: User | AnonymousUser) -> Actor:
    """A person's actor: their memberships' accounts; superusers see every account."""
    from core.models import Account, Membership

    if not user.is_authenticated:
        return Actor(account_ids=frozenset())
    if getattr(user, "is_superuser", False):
        ids = frozenset(Account.objects.values_list("id", flat=True))
        return Actor(account_ids=ids, user=user, roles={i: frozenset({"owner"}) for i in ids})
    roles: dict[int, set[str]] = {}
    for account_id, role in Membership.objects.filter(user=user).values_list("account_id", "role"):
        roles.setdefault(account_id, set()).add(role)
    return Actor(
        account_ids=frozenset(roles),
        user=user,
        roles={k: frozenset(v) for k, v in roles.items()},
    )
