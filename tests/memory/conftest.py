from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from core.actors import Actor, actor_for_agent
from memory.conversations import services as conversations_services
from memory.models import Conversation
from memory.redis_store import memory_redis, redis_prefix
from tests.conftest import AuthedAgent
from tests.factories import AgentFactory


@pytest.fixture(scope="session", autouse=True)
def _fresh_working_memory() -> Iterator[None]:
    """This worker's memory keys from an earlier run are gone (a recreated test database hands
    out the same agent ids again). Only this worker's own prefix is touched."""
    client = memory_redis()
    keys = list(client.scan_iter(match=f"{redis_prefix()}:*", count=1000))
    if keys:
        client.delete(*keys)
    yield


@dataclass
class Clock:
    """``timezone.now`` under the test's control (PostgreSQL-side expiry compares with it)."""

    now: datetime

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    frozen = Clock(timezone.now())
    monkeypatch.setattr(timezone, "now", lambda: frozen.now)
    return frozen


@pytest.fixture
def teammate(
    agent_client: AuthedAgent, make_agent_client: Callable[..., AuthedAgent]
) -> AuthedAgent:
    """A second agent in ``agent_client``'s account."""
    return make_agent_client(agent=AgentFactory.create(account=agent_client.agent.account))


@pytest.fixture
def actor(agent_client: AuthedAgent) -> Actor:
    return actor_for_agent(agent_client.agent)


def code(response: Any) -> str:
    body = response.json()
    assert set(body) == {"error"}, body
    return str(body["error"]["code"])


def conversation_of(authed: AuthedAgent, lines: list[tuple[str, str]]) -> Conversation:
    """A conversation of the agent's, one message per (speaker, text), each with its LoCoMo-style
    ``metadata.dia_id``; no rolling summaries."""
    actor = actor_for_agent(authed.agent)
    conversation = conversations_services.conversation_create(
        actor=actor, title="chat", summary_every=0
    )
    conversations_services.messages_append(
        actor=actor,
        conversation=conversation,
        messages=[
            conversations_services.MessageInput(
                "user", text, name, metadata={"dia_id": f"D1:{n}", "n": n}
            )
            for n, (name, text) in enumerate(lines, start=1)
        ],
    )
    return conversation
