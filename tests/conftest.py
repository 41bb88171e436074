from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from core import services
from core.actors import actor_for_account
from core.models import Agent, ApiKey
from tests.factories import AgentFactory


@dataclass
class AuthedAgent:
    agent: Agent
    key: ApiKey
    secret: str
    client: APIClient


@pytest.fixture
def make_agent_client(db: None) -> Callable[..., AuthedAgent]:
    """Build an agent (in a new account unless one is given) and a client using its key."""

    def make(
        *, scopes: tuple[str, ...] = ("read", "write"), agent: Agent | None = None, **kw: object
    ) -> AuthedAgent:
        agent = agent or AgentFactory.create(**kw)
        key, secret = services.api_key_create(
            actor=actor_for_account(agent.account_id), agent=agent, scopes=scopes
        )
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return AuthedAgent(agent=agent, key=key, secret=secret, client=client)

    return make


@pytest.fixture
def agent_client(make_agent_client: Callable[..., AuthedAgent]) -> AuthedAgent:
    return make_agent_client()


@pytest.fixture
def other_agent_client(make_agent_client: Callable[..., AuthedAgent]) -> AuthedAgent:
    """An agent in a different account: tenancy tests prove it sees nothing of ``agent_client``."""
    return make_agent_client()
