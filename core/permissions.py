from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from core.actors import Actor, actor_for_agent
from core.errors import NotAuthenticated
from core.errors import PermissionDenied as EngramPermissionDenied
from core.models import Agent, ApiKey


class HasApiKeyScope(BasePermission):
    """Authenticated agent whose key has the scope the operation needs.

    Reads need ``read``, everything else ``write``; a view can demand more with
    ``required_scope = "admin"``, or decide per request with a ``required_scope_for(request)``
    method (what the body asks for). ``admin`` implies the others.
    """

    def has_permission(self, request: Request, view: Any) -> bool:
        key = request.auth
        if not isinstance(request.user, Agent) or not isinstance(key, ApiKey):
            raise NotAuthenticated("Authentication credentials were not provided.")
        scope = getattr(view, "required_scope", None)
        scope_for = getattr(view, "required_scope_for", None)
        if scope_for is not None:
            scope = scope_for(request)
        if scope is None:
            scope = "read" if request.method in SAFE_METHODS else "write"
        if not key.has_scope(scope):
            raise EngramPermissionDenied(
                f"This API key lacks the '{scope}' scope.",
                code="insufficient_scope",
                details={"required_scope": scope, "key_scopes": list(key.scopes)},
            )
        return True


def request_actor(request: Request) -> Actor:
    """The acting agent for an authenticated API request."""
    agent = request.user
    if not isinstance(agent, Agent):
        raise NotAuthenticated("Authentication credentials were not provided.")
    key = request.auth if isinstance(request.auth, ApiKey) else None
    return actor_for_agent(agent, key)
