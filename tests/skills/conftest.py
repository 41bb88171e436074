from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core import services as core_services
from core.actors import Actor, actor_for_agent, actor_for_user
from skills.models import Skill
from skills.services import catalog
from tests.conftest import AuthedAgent
from tests.factories import UserFactory


@pytest.fixture
def actor(agent_client: AuthedAgent) -> Actor:
    """The agent of ``agent_client``."""
    return actor_for_agent(agent_client.agent)


@pytest.fixture
def reviewer(agent_client: AuthedAgent) -> Actor:
    """A person with the reviewer role in the agent's account."""
    user = UserFactory.create(is_staff=True)
    core_services.membership_grant(account=agent_client.agent.account, user=user, role="reviewer")
    return actor_for_user(user)


@pytest.fixture
def make_skill(reviewer: Actor) -> Callable[..., Skill]:
    """An active skill created by the reviewer."""

    def make(name: str, **kwargs: Any) -> Skill:
        kwargs.setdefault("category", "deployment")
        kwargs.setdefault("status", "active")
        return catalog.skill_create(actor=reviewer, name=name, **kwargs)

    return make


def code(response: Any) -> str:
    return str(response.json()["error"]["code"])
