"""``pip install ./clients/python`` into a fresh virtual environment of its own (Python 3.10 when
one is found, as the package promises 3.10+), then that environment's Python drives a live server
with the installed package; and README's quick start, run as written."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core import services
from core.actors import actor_for_account
from tests.clients.conftest import CLIENT
from tests.factories import AgentFactory

pytestmark = [pytest.mark.django_db(transaction=True)]

ROOT = CLIENT.parents[1]
SCRIPT = """
import sys
import engram_client
from engram_client import Engram, NotFoundError

assert "site-packages" in engram_client.__file__, engram_client.__file__
with Engram() as client:
    chat = client.conversations.create(title="from a venv")
    client.conversations.messages.add(chat["id"], messages=[{"role": "user", "content": "hi"}])
    assert [m["content"] for m in client.conversations.messages.list(chat["id"])] == ["hi"]
    try:
        client.pages.retrieve(999999999)
    except NotFoundError as error:
        assert error.status == 404
    print("ok", sys.version_info[:2], client.agents.me()["name"])
"""


def _key() -> tuple[Any, str]:
    agent = AgentFactory.create()
    _, secret = services.api_key_create(
        actor=actor_for_account(agent.account_id), agent=agent, scopes=["read", "write"]
    )
    return agent, secret


def _uv() -> str | None:
    return shutil.which("uv") or next(
        (str(p) for p in [Path.home() / ".local" / "bin" / "uv"] if p.exists()), None
    )


def _make_venv(target: Path) -> Path:
    """A virtual environment with the package installed from its source directory: uv (offline
    first, then from PyPI for the build backend), else ``python -m venv`` and pip."""
    uv = _uv()
    python = target / "bin" / "python"
    if uv is None:
        subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", str(CLIENT)], check=True)
        return python
    found = subprocess.run(
        [uv, "python", "find", "3.10"], capture_output=True, text=True, check=False
    ).stdout.strip()
    interpreter = found or sys.executable
    subprocess.run([uv, "venv", "-q", "--python", interpreter, str(target)], check=True)
    install = [uv, "pip", "install", "-q", "--python", str(python), str(CLIENT)]
    if subprocess.run([*install, "--offline"], capture_output=True, check=False).returncode:
        subprocess.run(install, check=True, timeout=240)
    return python


@pytest.mark.slow
def test_pip_install_in_a_fresh_venv_then_drive_a_live_server(
    live_server: Any, tmp_path: Path
) -> None:
    agent, secret = _key()
    python = _make_venv(tmp_path / "venv")
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "ENGRAM_URL": live_server.url,
        "ENGRAM_API_KEY": secret,
    }
    done = subprocess.run(
        [str(python), "-c", SCRIPT],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tmp_path,  # not the clone: the installed package, not the source tree
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok (3, 1") and agent.name in done.stdout
    version = subprocess.run(
        [str(python), "-c", "import sys; print(sys.version_info >= (3, 10))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.strip() == "True"


def test_the_readme_quick_start_runs_as_written(
    live_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Python client", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1 and len(blocks[0].strip().splitlines()) <= 12
    _, secret = _key()
    monkeypatch.setenv("ENGRAM_URL", live_server.url)
    monkeypatch.setenv("ENGRAM_API_KEY", secret)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(blocks[0], "README.md", "exec"), {})  # noqa: S102 - the README's own code
    assert "Lisbon" in printed.getvalue()
