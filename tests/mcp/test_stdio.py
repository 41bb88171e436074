"""``./engram mcp``: the official client launches it over stdio, on the test database."""

from __future__ import annotations

import json
import os
import select
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
        assert len(names) == 30 and {"memory_search", "conversation"} <= set(names), names
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


def _answer(process: subprocess.Popen[str], timeout: float = 120.0) -> dict[str, Any]:
    """The next line the server writes, decoded (waiting at most ``timeout`` seconds)."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, "the server answered nothing"
    line = process.stdout.readline()
    assert line, "the server closed its output"
    answer: dict[str, Any] = json.loads(line)
    return answer


def test_engram_mcp_answers_bad_lines_with_json_rpc_errors() -> None:
    """A line that is not JSON, or nests 1,100 levels deep, is the parse error (-32700, id
    null); JSON that is not a JSON-RPC message is -32600; the server keeps serving after each,
    and a tool's argument holding a NUL is the API's invalid_characters."""
    agent = AgentFactory.create()
    _, secret = services.api_key_create(actor=actor_for_account(agent.account_id), agent=agent)
    process = subprocess.Popen(
        [str(BASE_DIR / "engram"), "mcp"],
        env=_environment(ENGRAM_API_KEY=secret),
        cwd=BASE_DIR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdin is not None

    def send(line: str) -> None:
        assert process.stdin is not None
        process.stdin.write(line + "\n")
        process.stdin.flush()

    try:
        for line in ("this is not json", "[" * 1100 + "]" * 1100, '{"a": NaN}'):
            send(line)
            answer = _answer(process)
            assert answer["id"] is None and answer["error"]["code"] == -32700, answer
        send("[" * 67 + "]" * 67)  # one level more than a message may nest
        assert "deeper than 66 levels" in _answer(process)["error"]["message"]
        send('{"jsonrpc": "2.0", "id": 5, "method": 7}')
        invalid = _answer(process)
        assert (invalid["id"], invalid["error"]["code"]) == (5, -32600), invalid
        send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "test", "version": "1"},
                    },
                }
            )
        )
        initialized = _answer(process)
        assert initialized["id"] == 1 and initialized["result"]["serverInfo"]["name"] == "engram"
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        arguments = {"tier": "long_term", "content": "peanut\x00allergy"}
        send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "memory_write", "arguments": arguments},
                }
            )
        )
        called = _answer(process)
        assert called["id"] == 2 and called["result"]["isError"], called
        assert called["result"]["structuredContent"]["error"]["code"] == "invalid_characters"
    finally:
        process.stdin.close()
        process.wait(timeout=120)
    assert not MemoryEntry.objects.filter(context__owner=agent).exists()
