"""The Python client library lives in clients/python (a package of its own); the suite imports
it from its source tree, exactly as ``pip install ./clients/python`` would install it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core import services
from core.actors import actor_for_account
from tests.factories import AgentFactory

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"
if str(CLIENT / "src") not in sys.path:
    sys.path.insert(0, str(CLIENT / "src"))

from engram_client import Engram  # noqa: E402  # isort: skip - importable once on the path


def api_key(agent: Any, scopes: tuple[str, ...] = ("read", "write")) -> str:
    """A new API key of ``agent`` with ``scopes``: its secret."""
    _, secret = services.api_key_create(
        actor=actor_for_account(agent.account_id), agent=agent, scopes=list(scopes)
    )
    return secret


@pytest.fixture
def agent() -> Any:
    return AgentFactory.create()


@pytest.fixture
def client(live_server: Any, agent: Any) -> Iterator[Engram]:
    """The sync client on the live server, with ``agent``'s read and write key."""
    with Engram(base_url=live_server.url, api_key=api_key(agent)) as engram:
        yield engram
