"""Who is acting: an agent (API key), a person (a Django user with memberships and roles), or an
operator's command-line tool acting on one account. Every service and selector takes one.

People's rights come from their roles in each account (``Membership``):

- owner: everything in the account;
- operator: knowledge bases, documents, reprocessing, job runs;
- author: content and knowledge-base documents;
- reviewer: read everything in the account, plus the review queues.

Agents act inside their own account with their key's scopes (checked by the API's permission
class before a service runs). A superuser has every role in every account.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.errors import PermissionDenied

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    from core.models import Agent, ApiKey

OWNER = "owner"
REVIEWER = "reviewer"
AUTHOR = "author"
OPERATOR = "operator"
ROLES = (OWNER, REVIEWER, AUTHOR, OPERATOR)

# What each kind of write needs. Owners always qualify (``Actor.has_role``).
MANAGE_KNOWLEDGE_BASES = frozenset({OPERATOR})
WRITE_DOCUMENTS = frozenset({OPERATOR, AUTHOR})
WRITE_CONTENT = frozenset({AUTHOR})
WRITE_GRAPH = frozenset({OPERATOR, AUTHOR})
REVIEW = frozenset({REVIEWER})
MANAGE_ACCOUNT = frozenset({OWNER})
READ = frozenset(ROLES)

# Installation-wide operations (schedules, job runs) belong to superusers and this group.
INSTALLATION_OPERATORS_GROUP = "Installation operators"


@dataclass(frozen=True)
class Actor:
    """The caller, reduced to what permission checks need. Build with the helpers below."""

    account_ids: frozenset[int]
    agent: Agent | None = None
    api_key: ApiKey | None = None
    user: AbstractBaseUser | None = None
    # People only: the roles held in each account.
    roles: Mapping[int, frozenset[str]] = field(default_factory=dict)
    is_superuser: bool = False

    @property
    def account_id(self) -> int:
        """The account writes go to: an agent's own, or the actor's only account."""
        if self.agent is not None:
            return self.agent.account_id
        if len(self.account_ids) == 1:
            return next(iter(self.account_ids))
        raise ValueError("this actor spans several accounts; name one")

    @property
    def user_id(self) -> int | None:
        return self.user.pk if self.user is not None else None

    @property
    def agent_id(self) -> int | None:
        return self.agent.pk if self.agent is not None else None

    def has_role(self, account_id: int | None, roles: Iterable[str]) -> bool:
        """May this actor act in ``account_id`` with one of ``roles``? Owners always may."""
        if account_id is None or account_id not in self.account_ids:
            return False
        if self.user is None or self.is_superuser:
            return True  # an agent in its own account, a command-line tool, a superuser
        held = self.roles.get(account_id, frozenset())
        return OWNER in held or bool(held & frozenset(roles))

    def require(self, account_id: int | None, roles: Iterable[str]) -> None:
        """Raise 403 unless ``has_role``. Callers have scoped their reads already, so a foreign
        account never reaches here as anything but a missing object."""
        if not self.has_role(account_id, roles):
            wanted = sorted({OWNER, *roles})
            raise PermissionDenied(
                f"This needs one of the roles {', '.join(wanted)} in the account.",
                code="role_required",
                details={"roles": wanted},
            )

    def require_scope(self, scope: str) -> None:
        """Raise 403 ``insufficient_scope`` unless an agent's API key has ``scope`` (``admin``
        implies the others). People and tools have no keys: their roles decide instead. The
        API's permission class checks the same before a view runs; services that need more
        than the method implies check it themselves."""
        key = self.api_key
        if self.agent is None or key is None or key.has_scope(scope):
            return
        raise PermissionDenied(
            f"This API key lacks the '{scope}' scope.",
            code="insufficient_scope",
            details={"required_scope": scope, "key_scopes": list(key.scopes)},
        )

    def accounts_with(self, roles: Iterable[str]) -> frozenset[int]:
        """The accounts where this actor holds one of ``roles`` (or owns)."""
        wanted = frozenset(roles)
        return frozenset(a for a in self.account_ids if self.has_role(a, wanted))

    def __str__(self) -> str:
        if self.agent is not None:
            return f"agent {self.agent}"
        if self.user is not None:
            return f"user {self.user}"
        return f"tool on account(s) {sorted(self.account_ids)}"


def actor_for_agent(agent: Agent, api_key: ApiKey | None = None) -> Actor:
    return Actor(account_ids=frozenset({agent.account_id}), agent=agent, api_key=api_key)


def actor_for_account(account_id: int) -> Actor:
    """For operators' command-line tools and the system acting on one account."""
    return Actor(account_ids=frozenset({account_id}))


def actor_for_user(user: AbstractBaseUser | AnonymousUser) -> Actor:
    """A person: their memberships' roles per account; a superuser sees every account.

    Inactive or anonymous users get an actor with no account at all.
    """
    from core.models import Account, Membership

    if not user.is_authenticated or not user.is_active:
        return Actor(account_ids=frozenset())
    if getattr(user, "is_superuser", False):
        ids = frozenset(Account.objects.values_list("id", flat=True))
        return Actor(account_ids=ids, user=user, is_superuser=True)
    roles: dict[int, set[str]] = {}
    for account_id, role in Membership.objects.filter(
        user_id=user.pk, account__is_active=True
    ).values_list("account_id", "role"):
        roles.setdefault(account_id, set()).add(role)
    return Actor(
        account_ids=frozenset(roles),
        user=user,
        roles={account: frozenset(held) for account, held in roles.items()},
    )


def is_installation_operator(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Superusers and members of the installation operators group run schedules and jobs."""
    if not user.is_authenticated or not user.is_active:
        return False
    if getattr(user, "is_superuser", False):
        return True
    return bool(user.groups.filter(name=INSTALLATION_OPERATORS_GROUP).exists())  # type: ignore[attr-defined]
