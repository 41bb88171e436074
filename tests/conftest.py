from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from rest_framework.test import APIClient

from core import services
from core.actors import actor_for_account
from core.models import Agent, ApiKey
from tests.factories import AgentFactory
from tests.support import embedder


@pytest.fixture(autouse=True)
def _embedder(request: pytest.FixtureRequest) -> None:
    """The stand-in embedder unless the test is marked ``real_embeddings`` (or the run sets
    ENGRAM_TEST_REAL_EMBEDDINGS=1): tests/support/embedder.py."""
    embedder.use(real=request.node.get_closest_marker("real_embeddings") is not None)


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


@pytest.fixture
def embeddings_down(settings: Any) -> Iterator[Callable[[], None]]:
    """Call it to take the embedding provider down (after the test has written what it
    needs): the OpenAI-compatible client pointed at the discard port, where nothing listens
    (a refused connection, at once). The provider is rebuilt after the test."""
    from core.embeddings import reset_embedding_provider

    def down() -> None:
        settings.EMBEDDING_PROVIDER = "openai"
        settings.EMBEDDING_MODEL = "m"
        settings.EMBEDDING_BASE_URL = "http://127.0.0.1:9/v1"
        settings.EMBEDDING_TIMEOUT = 2
        reset_embedding_provider()

    yield down
    reset_embedding_provider()


# --- CI's second phase: the tests that talk to the servers ------------------------------------

#: Fixtures through which a test reaches the database (pytest-django's, and what requests them).
_DATABASE_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback"}
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--server-tests-only",
        action="store_true",
        help="run only the tests that use the database or Redis (marked django_db, using the db "
        "fixture, or marked redis); deselect the rest (.ci/run's phase against servers over TCP)",
    )


def uses_servers(item: pytest.Item) -> bool:
    """Whether the test reaches PostgreSQL or Redis."""
    if item.get_closest_marker("django_db") or item.get_closest_marker("redis"):
        return True
    return bool(_DATABASE_FIXTURES.intersection(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--server-tests-only"):
        return
    kept = [item for item in items if uses_servers(item)]
    dropped = [item for item in items if not uses_servers(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
