"""Who calls a tool: the API's keys, scopes and rate limits, unchanged.

The endpoint authenticates each HTTP request with the API's own authentication class
(``Authorization: Bearer eng_...`` or ``X-API-Key``, the same per-process key cache and
credentials generation) before the MCP SDK sees it, and counts it with the API's own throttle
in the budget of the scope it needs (``registry.route_of_message``: a tool call counts as its
tool's scope, anything else as a read). That scope is asked for only once the key is known
(the body is decoded then, not for an anonymous caller). The outcome travels with the request
as a ``Caller``; a tool call the throttle refused answers a ``throttled`` tool error.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from django.http import HttpRequest
from rest_framework.request import Request

from core.actors import Actor, actor_for_agent
from core.authentication import ApiKeyAuthentication
from core.errors import NotAuthenticated
from core.mcp.registry import Scope
from core.models import ApiKey
from core.throttling import ApiKeyThrottle


@dataclass(frozen=True)
class Caller:
    """An authenticated request: its actor, its key, and how long to wait when it was over the
    key's rate limit (None: within it)."""

    actor: Actor
    key: ApiKey
    throttled_for: float | None = None


# The caller of the HTTP request being served (set by the endpoint's view for the SDK's
# handlers, which run inside that request).
CALLER: ContextVar[Caller | None] = ContextVar("mcp_caller", default=None)


class _Operation:
    """What the API's authentication and throttle read of a view: the scope it needs (asked
    of ``scope`` when first read, once the key is known)."""

    def __init__(self, scope: Scope | Callable[[], Scope]) -> None:
        self._scope = scope

    @functools.cached_property
    def required_scope(self) -> Scope:
        return self._scope() if callable(self._scope) else self._scope


def authenticate(request: HttpRequest, scope: Scope | Callable[[], Scope]) -> Caller:
    """The caller of ``request``, counted in the rate limit of ``scope`` (or of what
    ``scope()`` answers, asked only once the key matched). Raises what the API raises (401
    ``not_authenticated``, ``invalid_api_key``, ``key_revoked``, ...)."""
    operation = _Operation(scope)
    wrapped = Request(request, parser_context={"view": operation})
    found = ApiKeyAuthentication().authenticate(wrapped)
    if found is None:
        raise NotAuthenticated("Authentication credentials were not provided.")
    agent, key = found
    wrapped.user = agent  # type: ignore[assignment]  # an agent, as the API's requests have
    wrapped.auth = key
    throttle = ApiKeyThrottle()
    allowed = throttle.allow_request(wrapped, operation)
    return Caller(actor_for_agent(agent, key), key, None if allowed else throttle.wait() or 1.0)


def authenticate_key(secret: str, scope: Scope) -> Caller:
    """``authenticate`` for a key held by this process (the stdio server's)."""
    request = HttpRequest()
    request.method = "POST"
    request.META["HTTP_AUTHORIZATION"] = f"Bearer {secret}"
    return authenticate(request, scope)
