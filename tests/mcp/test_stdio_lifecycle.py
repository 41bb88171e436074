"""``./engram mcp`` stops the embedded servers it started when its client goes: by closing the
server's input, or by a SIGTERM or SIGHUP (what desktop clients send when they quit)."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.db import connection

from config.embedded import EmbeddedServices
from config.env import BASE_DIR
from core import services
from core.actors import actor_for_account
from tests.factories import AgentFactory

pytestmark = [pytest.mark.slow, pytest.mark.embedded, pytest.mark.django_db(transaction=True)]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A data directory of its own (short: unix socket paths), whose servers are stopped and
    removed afterwards whatever happened."""
    path = Path(tempfile.mkdtemp(prefix="eng-mcp-", dir="/tmp"))
    yield path
    EmbeddedServices(path).stop_all()
    shutil.rmtree(path, ignore_errors=True)


def _serving(data_dir: Path) -> subprocess.Popen[str]:
    """``./engram mcp`` on the test database, with no Redis configured: it starts the embedded
    Valkey in ``data_dir`` itself. Returned once it has answered ``initialize``."""
    agent = AgentFactory.create()
    _, secret = services.api_key_create(actor=actor_for_account(agent.account_id), agent=agent)
    url = urlsplit(os.environ["DATABASE_URL"])
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "CELERY_BROKER_URL"}}
    env.update(
        DATABASE_URL=url._replace(path=f"/{connection.settings_dict['NAME']}").geturl(),
        ENGRAM_DATA_DIR=str(data_dir),
        ENGRAM_API_KEY=secret,
    )
    process = subprocess.Popen(
        [str(BASE_DIR / "engram"), "mcp"],
        env=env,
        cwd=BASE_DIR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(INITIALIZE) + "\n")
    process.stdin.flush()
    ready, _, _ = select.select([process.stdout], [], [], 120)
    assert ready, "the server answered nothing"
    answer: dict[str, Any] = json.loads(process.stdout.readline())
    assert answer["result"]["serverInfo"]["name"] == "engram", answer
    assert EmbeddedServices(data_dir).valkey.is_running()
    return process


@pytest.mark.parametrize("how", ["eof", "SIGTERM", "SIGHUP"])
def test_the_servers_it_started_stop_when_its_client_goes(data_dir: Path, how: str) -> None:
    process = _serving(data_dir)
    assert process.stdin is not None
    if how == "eof":
        process.stdin.close()
    else:
        process.send_signal(getattr(signal, how))
    process.wait(timeout=60)
    assert not EmbeddedServices(data_dir).valkey.is_running()
    assert not list((data_dir / "run" / "leases").glob("*"))
