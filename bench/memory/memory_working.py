"""Working-memory latency through the HTTP API, on a live server.

The web server runs as ``./engram run`` runs it (gunicorn, gthread workers, config.wsgi) on the
configured or embedded PostgreSQL and Valkey, in a child process on a free port. One client
thread sends the requests one after another over one keep-alive connection, with an agent's API
key (read, write), as an agent would. Rate limits stay on, set high enough for the run.

Each round stores a key, retrieves it, asks whether it exists, lists the session's keys, appends
to the scratch pad and removes the key; --ops requests in all (a sixth per operation), after
--warmup unmeasured rounds. A time is the client's: from sending the request to having read the
whole answer.

    uv run python bench/memory/memory_working.py [--ops 6000] [--warmup 300] [--keys 20]

Prints one JSON object; docs/benchmarks.md records the figures.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import ROOT, django_session, free_port

OPERATIONS = ("store", "retrieve", "exists", "keys", "scratch_pad_append", "remove")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=6000, help="measured requests in all")
    parser.add_argument("--warmup", type=int, default=300, help="unmeasured rounds first")
    parser.add_argument("--keys", type=int, default=20, help="other live keys in the session")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (WEB_CONCURRENCY)")
    parser.add_argument(
        "--server",
        choices=("wsgi", "asgi"),
        default="wsgi",
        help="asgi: config.asgi under uvicorn workers (the serving shape docs/mcp.md weighs)",
    )
    args = parser.parse_args()
    # Before Django starts: the web server's limits (it inherits this environment).
    os.environ["API_THROTTLE_READ"] = os.environ["API_THROTTLE_WRITE"] = "1000000/minute"
    with django_session():
        report = run(args)
    print(json.dumps(report, indent=2))


def agent_key() -> str:
    """A new read/write key of the benchmark agent (created once), as ``create_agent`` does."""
    from core import services
    from core.actors import actor_for_account
    from core.models import Account, Agent

    account = Account.objects.filter(slug="engram-bench").first() or services.account_create(
        name="Engram benchmarks", slug="engram-bench"
    )
    tool = actor_for_account(account.pk)
    agent = Agent.objects.filter(account=account, name="bench").first() or services.agent_create(
        actor=tool, account=account, name="bench"
    )
    _, secret = services.api_key_create(
        actor=tool, agent=agent, scopes=["read", "write"], name="bench/memory_working"
    )
    return secret


def start_web(port: int, workers: int, server: str = "wsgi") -> subprocess.Popen[bytes]:
    """gunicorn as the launcher starts it (config/launcher.py); its output is dropped. ``asgi``:
    config.asgi under uvicorn workers instead (for comparison only)."""
    if server == "wsgi":
        shape = ["config.wsgi:application", "--worker-class", "gthread", "--threads", "4"]
    else:
        shape = ["config.asgi:application", "--worker-class", "uvicorn.workers.UvicornWorker"]
    argv = [
        *(sys.executable, "-m", "gunicorn", *shape),
        *("--bind", f"127.0.0.1:{port}", "--workers", str(workers)),
        *("--timeout", "120", "--access-logfile", "-"),
    ]
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=dict(os.environ),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"gunicorn exited with code {proc.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                conn.close()
                return proc
        except OSError:
            pass
        time.sleep(0.5)
    proc.terminate()
    raise SystemExit("the web server was not ready after 120 s")


class Client:
    """One keep-alive connection; ``call`` times a request until its whole answer is read."""

    def __init__(self, port: int, key: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def call(self, method: str, path: str, body: Any = None, expect: int = 200) -> float:
        payload = None if body is None else json.dumps(body)
        started = time.perf_counter()
        self.conn.request(method, path, body=payload, headers=self.headers)
        response = self.conn.getresponse()
        data = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != expect:
            raise SystemExit(f"{method} {path}: {response.status} {data[:300]!r}")
        return elapsed


def run(args: argparse.Namespace) -> dict[str, object]:
    from rag.evaluation import percentiles

    key = agent_key()
    port = free_port()
    web = start_web(port, args.workers, args.server)
    try:
        client = Client(port, key)
        session = f"bench-{port}"
        base = f"/api/v1/memory/working/{session}"
        value = {"step": 3, "notes": "checked the invoice totals", "items": [1, 2, 3, 4, 5]}
        client.call("DELETE", base)
        for i in range(args.keys):  # a session with other entries in it, as in real use
            client.call("PUT", f"{base}/other-{i}", {"value": value, "ttl": 600})

        def round_(i: int) -> dict[str, float]:
            path = f"{base}/key-{i % 50}"
            return {
                "store": client.call("PUT", path, {"value": value, "ttl": 300}),
                "retrieve": client.call("GET", path),
                "exists": client.call("GET", f"{path}/exists"),
                "keys": client.call("GET", base),
                "scratch_pad_append": client.call(
                    "POST", f"{base}/_scratch-pad/append", {"content": f"step {i}\n", "ttl": 300}
                ),
                "remove": client.call("DELETE", path, expect=204),
            }

        for i in range(args.warmup):
            round_(i)
            if i % 100 == 99:  # the scratch pad stays well under its size limit
                client.call("PUT", f"{base}/_scratch-pad", {"content": ""})
        times: dict[str, list[float]] = {op: [] for op in OPERATIONS}
        rounds = max(1, args.ops // len(OPERATIONS))
        started = time.perf_counter()
        for i in range(rounds):
            for op, ms in round_(i).items():
                times[op].append(ms)
            if i % 100 == 99:
                client.call("PUT", f"{base}/_scratch-pad", {"content": ""})
        wall = time.perf_counter() - started
        client.call("DELETE", base)
    finally:
        web.terminate()
        web.wait(timeout=30)

    every = [ms for values in times.values() for ms in values]
    return {
        "requests": len(every),
        "per_operation": {
            op: {k: round(v, 2) for k, v in percentiles(values, (50, 95, 99)).items()}
            for op, values in times.items()
        },
        "all_operations_ms": {k: round(v, 2) for k, v in percentiles(every, (50, 95, 99)).items()},
        "requests_per_s": round(len(every) / wall, 1),
        "web": f"gunicorn, {args.workers} workers x 4 threads (gthread)"
        if args.server == "wsgi"
        else f"gunicorn, {args.workers} uvicorn workers (config.asgi)",
        "cpu": f"{os.cpu_count()} cores",
    }


if __name__ == "__main__":
    main()
