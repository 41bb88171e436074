"""``./engram mcp``: the official client launches it over stdio, on the test database."""

from __future__ import annotations

import os
import subprocess
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from django.db import connection
from mcp import Client, StdioServerParameters

from config.env import BASE_DIR
from core import services
from core.actors import actor_for_account
from memory.models import MemoryEntry
from tests.factories import AgentFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _environment(**extra: str) -> dict[str, str]:
    """This test's database and Redis (settings_test, the same cache prefix)."""
    url = urlsplit(os.environ["DATABASE_URL"])
    database = url._replace(path=f"/{connection.settings_dict['NAME']}").geturl()
    return {**os.environ, "DATABASE_URL": database, **extra}


def test_engram_mcp_lists_the_tools_and_calls_one() -> None:
    agent = AgentFactory.create()
    _, secret = services.api_key_create(actor=actor_for_account(agent.account_id), agent=agent)
    server = StdioServerParameters(
        command=str(BASE_DIR / "engram"),
        args=["mcp"],
        env=_environment(ENGRAM_API_KEY=secret),
        cwd=str(BASE_DIR),
    )

    async def session(mode: str) -> Any:
        async with Client(server, mode=mode) as client:
            listed = await client.list_tools()
            written = await client.call_tool(
                "memory_write", {"tier": "long_term", "content": f"Over stdio ({mode})."}
            )
            return client.protocol_version, [tool.name for tool in listed.tools], written

    for mode in ("auto", "legacy"):
        version, names, written = anyio.run(session, mode)
        assert len(names) >= 28 and {"memory_search", "write_memory"} <= set(names), names
        assert not written.is_error, written.content
        assert version in ("2026-07-28", "2025-11-25")
    entries = MemoryEntry.objects.filter(context__owner=agent).values_list("content", flat=True)
    assert sorted(entries) == ["Over stdio (auto).", "Over stdio (legacy)."]


@pytest.mark.parametrize(
    ("key", "message"),
    [("", "ENGRAM_API_KEY is not set"), ("eng_aaaaaaaaaaaa_nope", "(invalid_api_key)")],
)
def test_engram_mcp_refuses_to_start_without_a_valid_key(key: str, message: str) -> None:
    done = subprocess.run(
        [str(BASE_DIR / "engram"), "mcp"],
        env=_environment(ENGRAM_API_KEY=key),
        cwd=BASE_DIR,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert message in done.stderr
    assert done.stdout == ""  # stdout belongs to the protocol
