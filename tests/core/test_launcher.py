"""``make run`` end to end: start, serve, Ctrl-C, restart with data intact, recover from kill -9."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from config.env import BASE_DIR

pytestmark = [pytest.mark.slow, pytest.mark.embedded]

KEY_RE = re.compile(r"agent API key\s+:\s+(eng_\S+)")
ADMIN_RE = re.compile(r"admin login\s+:\s+admin / (\S+)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Running:
    def __init__(self, data_dir: Path, port: int) -> None:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
        }
        env.update(
            ENGRAM_DATA_DIR=str(data_dir),
            ENGRAM_PORT=str(port),
            ENGRAM_ENV="development",
            WEB_CONCURRENCY="1",
            CELERY_WORKER_CONCURRENCY="1",
            LOG_FORMAT="console",
        )
        self.log_path = data_dir.parent / f"{data_dir.name}-launcher-{time.monotonic_ns()}.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "config.launcher"],
            cwd=BASE_DIR,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.base = f"http://127.0.0.1:{port}"

    def output(self) -> str:
        return self.log_path.read_text()

    def wait_ready(self, timeout: float = 180) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.output()[-3000:]
            if "[engram] Engram is up" not in self.output():
                time.sleep(0.5)  # an orphan of an earlier run may still answer on the port
                continue
            try:
                with urllib.request.urlopen(f"{self.base}/readyz", timeout=10) as response:
                    return json.loads(response.read())
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        raise AssertionError("not ready in time:\n" + self.output()[-3000:])

    def get(self, path: str, key: str) -> tuple[int, dict]:
        request = urllib.request.Request(
            f"{self.base}{path}", headers={"Authorization": f"Bearer {key}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def stop(self, sig: int = signal.SIGINT) -> int:
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=90)
        self.log.close()
        return code


def admin_login(base: str, username: str, password: str) -> str:
    """Log in through the admin's own form (CSRF cookie and token) and return the landing page."""
    import http.cookiejar
    import urllib.parse

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{base}/admin/login/", timeout=10).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    form = urllib.parse.urlencode(
        {
            "csrfmiddlewaretoken": token,
            "username": username,
            "password": password,
            "next": "/admin/",
        }
    ).encode()
    request = urllib.request.Request(
        f"{base}/admin/login/?next=/admin/", data=form, headers={"Referer": f"{base}/admin/login/"}
    )
    return opener.open(request, timeout=10).read().decode()


def _engram_processes(data_dir: Path, port: int) -> list[str]:
    found = []
    for proc in psutil.process_iter(["cmdline", "environ"]):
        try:
            cmd = " ".join(proc.info["cmdline"] or [])
            env = proc.info["environ"] or {}
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if str(data_dir) in cmd or env.get("ENGRAM_DATA_DIR") == str(data_dir):
            found.append(f"{proc.pid} {cmd}")
    return found


def test_run_serve_stop_restart_and_recover_from_kill_9(embedded_data_dir: Path) -> None:
    data_dir = embedded_data_dir
    port = _free_port()

    first = Running(data_dir, port)
    ready = first.wait_ready()
    assert ready["status"] == "ok", ready
    assert all(component["ok"] for component in ready["components"].values())
    key = KEY_RE.search(first.output()).group(1)  # type: ignore[union-attr]
    assert ADMIN_RE.search(first.output())
    status, me = first.get("/api/v1/me", key)
    assert status == 200 and me["name"] == "demo-agent"
    with urllib.request.urlopen(f"{first.base}/api/docs/", timeout=10) as response:
        assert response.status == 200
    password = ADMIN_RE.search(first.output()).group(1)  # type: ignore[union-attr]
    assert "Site administration" in admin_login(first.base, "admin", password)
    assert first.stop(signal.SIGINT) == 0
    time.sleep(0.5)
    assert _engram_processes(data_dir, port) == []

    # Restart: the data survived, first-start credentials are not printed again.
    second = Running(data_dir, port)
    second.wait_ready()
    assert "already set up" in second.output() and not KEY_RE.search(second.output())
    assert second.get("/api/v1/me", key)[0] == 200

    # kill -9 the launcher: its children and servers are orphaned; the next start cleans up.
    os.kill(second.proc.pid, signal.SIGKILL)
    second.proc.wait()
    second.log.close()
    assert _engram_processes(data_dir, port) != []
    third = Running(data_dir, port)
    third.wait_ready()
    assert third.get("/api/v1/me", key)[0] == 200
    assert third.stop(signal.SIGTERM) == 0
    time.sleep(0.5)
    assert _engram_processes(data_dir, port) == []
