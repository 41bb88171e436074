"""The admin's home page: what waits for each person, by the roles they hold (docs/admin.md,
"The home page").

Each app registers the panels of its own data with ``home_panel`` (in its admin modules, so the
home knows no app's models): a panel belongs to one role and receives the accounts where the
person holds that role (every account for a superuser). Installation operators (superusers and
the installation operators group) get the installation's panels: jobs, queues, readiness.
A panel reads through its app's selectors, scoped to those accounts, and shows a few items, the
oldest first where something waits, with the count of all of them and a link to the full list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.http import HttpRequest

from core.actors import AUTHOR, OPERATOR, OWNER, REVIEWER, is_installation_operator
from core.admin_base.rules import request_actor

INSTALLATION = "installation"

# The homes, in the order they are shown, with what each is for.
ROLE_HOMES: dict[str, tuple[str, str]] = {
    REVIEWER: ("Review", "Proposals and memory changes waiting for a decision, the oldest first."),
    AUTHOR: ("Writing", "Your recent pages, and wikilinks that name no page yet."),
    OPERATOR: ("Operations", "What the account holds, how it grows, and the last maintenance."),
    OWNER: ("Account", "Agents, keys about to expire, and how the account is used."),
    INSTALLATION: (
        "Installation",
        "Failed and late jobs, queue depth and the readiness of each component.",
    ),
}

# How many items a panel lists (the count says how many there are).
PANEL_ITEMS = 8


@dataclass(frozen=True)
class HomeItem:
    """One line of a panel: what it is, where to open it, a note, and since when."""

    label: str
    url: str = ""
    note: str = ""
    since: datetime | None = None
    status: str = ""  # "ok", "warning" or "error": drawn as a word and a colour, never alone


@dataclass(frozen=True)
class HomePanel:
    title: str
    count: int | None = None
    items: list[HomeItem] = field(default_factory=list)
    more_url: str = ""
    empty: str = "Nothing here."


PanelFunction = Callable[[HttpRequest, frozenset[int]], HomePanel | None]


@dataclass(frozen=True)
class _Registered:
    role: str
    order: int
    function: PanelFunction


_PANELS: dict[str, _Registered] = {}


def home_panel(role: str, *, order: int = 50) -> Callable[[PanelFunction], PanelFunction]:
    """Register ``function(request, account_ids)`` as a panel of ``role``'s home (a role of
    ``core.actors.ROLES``, or ``INSTALLATION``). It may answer None to show nothing."""
    if role not in ROLE_HOMES:
        raise ValueError(f"unknown home role {role!r}")

    def register(function: PanelFunction) -> PanelFunction:
        key = f"{role}:{function.__module__}.{function.__qualname__}"  # one function, many homes
        _PANELS[key] = _Registered(role, order, function)
        return function

    return register


@dataclass(frozen=True)
class Home:
    role: str
    title: str
    purpose: str
    panels: list[HomePanel]


def homes_for(request: HttpRequest) -> list[Home]:
    """The homes the person sees: one per role they hold somewhere (each panel scoped to the
    accounts where they hold it), then the installation's for installation operators."""
    actor = request_actor(request)
    held: dict[str, frozenset[int]] = {}
    for role in ROLE_HOMES:
        if role == INSTALLATION:
            if is_installation_operator(request.user):
                held[role] = actor.account_ids
        elif actor.is_superuser:
            held[role] = actor.account_ids
        else:  # owners qualify for every role of their accounts (core.actors)
            accounts = frozenset(
                a for a, roles in actor.roles.items() if role in roles or OWNER in roles
            )
            if accounts:
                held[role] = accounts
    homes = []
    for role, accounts in held.items():
        registered = sorted((r for r in _PANELS.values() if r.role == role), key=lambda r: r.order)
        panels = [p for r in registered if (p := r.function(request, accounts)) is not None]
        title, purpose = ROLE_HOMES[role]
        homes.append(Home(role, title, purpose, panels))
    return homes
