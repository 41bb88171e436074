"""``memory_search`` and ``memory_write`` over MCP next to the same operations over the REST API.

The web server runs as ``./engram run`` runs it (gunicorn, gthread workers, config.wsgi) in a
child process on a free port; ``--server asgi`` runs config.asgi under gunicorn's uvicorn workers
instead (the other serving shape docs/mcp.md weighs: there it times the API only). One client
thread sends the requests one after another over one keep-alive connection with an agent's key,
rate limits set high enough for the run. Each round makes every operation through every door:

- ``rest``: ``POST /api/v1/memory/search`` and ``POST /api/v1/memory/write``;
- ``mcp``: ``tools/call`` at the 2026-07-28 revision (one self-contained POST, as the official
  client sends it: the ``_meta`` envelope and the ``Mcp-Method`` / ``Mcp-Name`` headers);
- ``mcp_2025``: ``tools/call`` at the 2025-06-18 revision (a client that initialized before).

The search is the router's over every tier (query embedding included) of an agent with --entries
long-term memories; the write stores a JSON value in working memory. A time is the client's:
from sending the request to having read the whole answer.

    uv run python bench/core/mcp_latency.py [--ops 1200] [--warmup 60] [--entries 300] \
        [--server wsgi] [--operations memory_search]

Prints one JSON object: p50/p95/p99 per door and operation, and what MCP adds to REST at p50
and p95 (``mcp_adds_p50_ms``, ``mcp_adds_p95_ms``: the goal is at most 3 ms at p95, issue 37);
docs/benchmarks.md records the figures. (Not named ``mcp.py``: run as a script, its folder
comes first on ``sys.path`` and it would shadow the SDK's ``mcp`` package.)
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session
from bench.memory.memory_working import agent_key, free_port, start_web

MODERN, HANDSHAKE = "2026-07-28", "2025-06-18"
DOORS = ("rest", "mcp", "mcp_2025")
OPERATIONS = ("memory_search", "memory_write")
QUERIES = [
    "when does the release train leave",
    "who owns the billing service",
    "which region hosts the database",
    "what broke in the last deploy",
    "where are the runbooks",
    "how are secrets rotated",
    "what is the on-call rotation",
    "which customers are on the beta",
]
TOPICS = ["release", "billing", "database", "deploy", "runbook", "secrets", "on-call", "beta"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=1200, help="measured calls per operation")
    parser.add_argument("--warmup", type=int, default=60, help="unmeasured rounds first")
    parser.add_argument("--entries", type=int, default=300, help="long-term memories searched")
    parser.add_argument("--workers", type=int, default=2, help="web workers (WEB_CONCURRENCY)")
    parser.add_argument("--server", choices=("wsgi", "asgi"), default="wsgi")
    parser.add_argument(
        "--operations", nargs="+", choices=OPERATIONS, default=list(OPERATIONS), help="measured"
    )
    args = parser.parse_args()
    os.environ["API_THROTTLE_READ"] = os.environ["API_THROTTLE_WRITE"] = "1000000/minute"
    with django_session():
        report = run(args)
    print(json.dumps(report, indent=2))


def seed(entries: int) -> None:
    """The benchmark agent's long-term memories (made once, embedded by the configured model)."""
    from core.actors import actor_for_agent
    from core.models import Agent
    from memory.long_term import services as long_term

    agent = Agent.objects.get(account__slug="engram-bench", name="bench")
    actor = actor_for_agent(agent)
    context = long_term.agent_memory_context(actor=actor)
    missing = entries - context.entry_count
    for start in range(0, max(0, missing), 100):
        items = [
            long_term.EntryInput(
                content=f"Note {context.entry_count + i}: the {TOPICS[i % len(TOPICS)]} "
                f"team changed step {i % 17} of its process on day {i % 29}."
            )
            for i in range(start, min(missing, start + 100))
        ]
        long_term.entries_write(actor=actor, context=context, items=items, graph_link=False)


class Doors:
    """One keep-alive connection; each call times one request until its answer is read."""

    def __init__(self, port: int, key: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self.ids = 0

    def _post(self, path: str, body: Any, headers: dict[str, str]) -> tuple[float, Any]:
        payload = json.dumps(body)
        started = time.perf_counter()
        self.conn.request("POST", path, body=payload, headers={**self.auth, **headers})
        response = self.conn.getresponse()
        data = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise SystemExit(f"{path}: {response.status} {data[:300]!r}")
        return elapsed, json.loads(data)

    def rest(self, operation: str, arguments: dict[str, Any]) -> float:
        path = {"memory_search": "/api/v1/memory/search", "memory_write": "/api/v1/memory/write"}
        return self._post(path[operation], arguments, {})[0]

    def mcp(self, operation: str, arguments: dict[str, Any], version: str) -> float:
        self.ids += 1
        params: dict[str, Any] = {"name": operation, "arguments": arguments}
        headers = {"Accept": "application/json, text/event-stream"}
        headers["MCP-Protocol-Version"] = version
        if version == MODERN:
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            headers.update({"Mcp-Method": "tools/call", "Mcp-Name": operation})
        body = {"jsonrpc": "2.0", "id": self.ids, "method": "tools/call", "params": params}
        elapsed, answer = self._post("/mcp", body, headers)
        if "result" not in answer or answer["result"].get("isError"):
            raise SystemExit(f"{operation} over MCP: {json.dumps(answer)[:300]}")
        return elapsed

    def call(self, door: str, operation: str, arguments: dict[str, Any]) -> float:
        if door == "rest":
            return self.rest(operation, arguments)
        return self.mcp(operation, arguments, MODERN if door == "mcp" else HANDSHAKE)


def run(args: argparse.Namespace) -> dict[str, object]:
    from rag.evaluation import percentiles

    key = agent_key()
    seed(args.entries)
    port = free_port()
    web = start_web(port, args.workers, args.server)
    doors_measured = DOORS if args.server == "wsgi" else ("rest",)
    session = f"bench-mcp-{port}"
    value = {"step": 3, "notes": "checked the invoice totals", "items": [1, 2, 3, 4, 5]}

    def arguments(operation: str, i: int) -> dict[str, Any]:
        if operation == "memory_search":
            return {"query": QUERIES[i % len(QUERIES)], "top_k": 5}
        return {"tier": "working", "session_id": session, "key": f"k{i % 50}", "value": value}

    operations = tuple(args.operations)
    times: dict[str, dict[str, list[float]]] = {
        door: {op: [] for op in operations} for door in doors_measured
    }
    try:
        doors = Doors(port, key)
        for i in range(args.warmup):
            for door in doors_measured:
                for op in operations:
                    doors.call(door, op, arguments(op, i))
        started = time.perf_counter()
        for i in range(args.ops):
            for door in doors_measured:
                for op in operations:
                    times[door][op].append(doors.call(door, op, arguments(op, i)))
        wall = time.perf_counter() - started
    finally:
        web.terminate()
        web.wait(timeout=30)

    def summary(values: list[float]) -> dict[str, float]:
        return {k: round(v, 2) for k, v in percentiles(values, (50, 95, 99)).items()}

    report: dict[str, Any] = {
        door: {op: summary(values) for op, values in ops.items()} for door, ops in times.items()
    }
    if args.server == "wsgi":
        for q in ("p50", "p95"):
            report[f"mcp_adds_{q}_ms"] = {
                door: {
                    op: round(report[door][op][q] - report["rest"][op][q], 2) for op in operations
                }
                for door in ("mcp", "mcp_2025")
            }
    calls = sum(len(v) for ops in times.values() for v in ops.values())
    report.update(
        {
            "calls": calls,
            "calls_per_s": round(calls / wall, 1),
            "entries": args.entries,
            "web": f"gunicorn {args.server}, {args.workers} workers",
            "cpu": f"{os.cpu_count()} cores",
            "load_average": [round(x, 2) for x in os.getloadavg()],
        }
    )
    return report


if __name__ == "__main__":
    main()
