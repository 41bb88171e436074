"""A load and soak test with Locust (issue 39, item 2): N simulated agents (Locust users) run the
agent loop against a running Engram over HTTP for as long as asked, while every Engram process's
memory (RSS) is sampled, to show that nothing fails and nothing grows.

Each user sets itself up when it starts (its API key, taken in turn from the keys given; its own
conversation, seeded with a few messages; its own working / short-term session id; its own
knowledge base), then loops without think time (``--engram-think`` adds some) over:

- conversation messages (a user message and the agent's answer, ``POST
  /memory/conversations/{id}/messages``) and contexts for a query on that conversation and session
  (``POST /memory/context``);
- hybrid searches of the documents (``POST /rag/search``, over the user's knowledge base or all)
  and searches of memory across tiers (``POST /memory/search``);
- memory writes: long-term entries (``POST /memory/entries``), short-term and working memory keys
  of its session (``PUT /memory/short-term/{session}/{key}``, ``PUT
  /memory/working/{session}/{key}``; the keys cycle, so the sessions stay bounded);
- small text documents uploaded into its knowledge base (``POST
  /rag/knowledge-bases/{id}/documents``; the worker chunks and embeds them);
- MCP tool calls, one JSON-RPC POST each to ``/mcp`` (stateless, ``MCP-Protocol-Version:
  2025-06-18``, docs/mcp.md): ``tools/list``, and ``tools/call`` of ``memory_search``,
  ``memory_write`` (long-term text, or a working-memory key), ``get_context`` and
  ``search_documents``.

Every answer other than the operation's success status is a failure (429 included), and so is
an MCP answer carrying a JSON-RPC error or a tool error (``isError``: ``throttled`` is one).
The texts are generated from load_mixed.py's fixed vocabulary and a seed (``--engram-seed``),
so it reads nothing: no data set, nothing from ../shared.

Run it against a server started from this checkout (or any other: ``--engram-data-dir`` names
the data directory whose processes to sample)::

    ./engram run                                   # ENGRAM_PORT=8231 for another port
    ./engram manage create_agent --account load --create-account --name load   # prints a key
    ENGRAM_API_KEY=eng_... uv run locust -f bench/core/load_soak.py --headless \\
        -u 8 -r 8 -t 10m --host http://127.0.0.1:8000 [--csv /tmp/soak] \\
        [--engram-summary /tmp/soak.json] [--engram-keys eng_a,eng_b] [--engram-rss-every 5]

``ENGRAM_API_KEYS`` (or ``--engram-keys``), comma-separated, gives several keys: user n takes
key n modulo their number. One key for every user is the harsher case for the rate limits.

What it reports, at the end (and Locust's own ``--csv`` files if asked):

- per operation (Locust's request name): requests, failures, requests per second, p50 / p95 /
  p99 / max in ms, and the total; the failures by message;
- the RSS of every Engram process, sampled every ``--engram-rss-every`` seconds (5) by a
  greenlet started on ``test_start``: the launcher and its descendants (gunicorn master and
  workers, the Celery worker(s) and beat) and the embedded PostgreSQL and Valkey (found by their
  command line naming the data directory, ``<checkout>/.engram`` or ``ENGRAM_DATA_DIR``).
  Per process there from the first sample to the last: RSS at the first sample, max, at the
  last, its growth (last - first) and growth over the second half of the run (last - the sample
  at mid-run), and the same growths of its private part (RSS less its shared pages, psutil's
  ``shared``); per role (web, celery worker, celery beat, postgres, valkey, launcher) and for
  all of them the same figures of their sum. The processes seen only for part of the run
  (PostgreSQL backends of connections that closed, a restarted worker) are counted by role.
  PostgreSQL's processes map its shared buffers, so their RSS grows as they touch more of them
  (the checkpointer most): their private growth is the one that tells a leak. The 1-minute
  load average at each sample is summarised too: the figures mean little without it.

It prints one JSON object (and writes it to ``--engram-summary``); ``--engram-rss-csv FILE``
keeps every sample. Locust exits 1 when any request failed.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from locust import FastHttpUser, events, task
from locust.env import Environment

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench.core.load_mixed import NAMES, WORDS, sentence

CHECKOUT = Path(__file__).resolve().parents[2]
MCP_VERSION = "2025-06-18"
MB = 1024 * 1024


@events.init_command_line_parser.add_listener
def _options(parser: Any) -> None:
    group = parser.add_argument_group("Engram")
    group.add_argument(
        "--engram-keys",
        default=os.environ.get("ENGRAM_API_KEYS") or os.environ.get("ENGRAM_API_KEY", ""),
        help="API keys, comma-separated (default: $ENGRAM_API_KEYS or $ENGRAM_API_KEY)",
    )
    group.add_argument("--engram-seed", type=int, default=39, help="seed of the generated texts")
    group.add_argument(
        "--engram-think", type=float, default=0.0, help="at most this many seconds between tasks"
    )
    group.add_argument(
        "--engram-data-dir",
        default=os.environ.get("ENGRAM_DATA_DIR", str(CHECKOUT / ".engram")),
        help="the server's data directory (its embedded servers' command lines name it)",
    )
    group.add_argument("--engram-rss-every", type=float, default=5.0, help="seconds")
    group.add_argument("--engram-summary", default="", help="also write the JSON summary here")
    group.add_argument("--engram-rss-csv", default="", help="write every RSS sample here")


# --- the simulated agents ------------------------------------------------------------------------

_numbers = itertools.count()


def _error_code(response: Any) -> str:
    try:
        body = response.json()
        return str(body["error"]["code"])
    except Exception:
        return (response.text or "")[:120].replace("\n", " ")


class Agent(FastHttpUser):
    """One agent: its own key (in turn), conversation, session and knowledge base."""

    network_timeout = 180.0
    connection_timeout = 30.0
    think = 0.0

    def wait_time(self) -> float:
        return self.pauses.uniform(0, self.think) if self.think > 0 else 0.0

    def on_start(self) -> None:
        options = self.environment.parsed_options
        keys = [k for k in (options.engram_keys if options else "").split(",") if k]
        if not keys:
            raise RuntimeError("No API key: set ENGRAM_API_KEY (or --engram-keys).")
        self.number = next(_numbers)
        self.think = options.engram_think if options else 0.0
        self.pauses = random.Random(self.number)
        seed = options.engram_seed if options else 39
        self.rng = random.Random(seed * 1000 + self.number)
        self.key = keys[self.number % len(keys)]
        self.auth = {"Authorization": f"Bearer {self.key}"}
        self.label = f"{int(time.time()) % 1_000_000}-{self.number}"
        self.session_id = f"load-{self.label}"
        self.writes = 0
        made = self._setup(
            "conversation",
            "POST",
            "/api/v1/memory/conversations",
            201,
            {
                "title": f"load {self.label}",
                "summary_every": 0,
            },
        )
        self.conversation_id = made["id"]
        seed_messages = [
            {"role": "user", "content": sentence(self.rng, 30), "name": self.rng.choice(NAMES)}
            for _ in range(10)
        ]
        self._setup(
            "seed messages",
            "POST",
            f"/api/v1/memory/conversations/{self.conversation_id}/messages",
            201,
            {"messages": seed_messages},
        )
        kb = self._setup(
            "knowledge base",
            "POST",
            "/api/v1/rag/knowledge-bases",
            201,
            {"name": f"load {self.label}"},
        )
        self.kb_id = kb["id"]
        self._upload_document("setup: document upload")

    def _setup(self, name: str, method: str, path: str, success: int, body: dict[str, Any]) -> Any:
        with self.client.request(
            method,
            path,
            json=body,
            headers=self.auth,
            name=f"setup: {name}",
            catch_response=True,
        ) as response:
            if response.status_code != success:
                response.failure(f"{response.status_code} {_error_code(response)}")
                raise RuntimeError(f"setup failed: {method} {path} {response.status_code}")
            response.success()
            return response.json()

    def _call(self, name: str, method: str, path: str, success: tuple[int, ...], body: Any) -> Any:
        with self.client.request(
            method, path, json=body, headers=self.auth, name=name, catch_response=True
        ) as response:
            if response.status_code not in success:
                response.failure(f"{response.status_code} {_error_code(response)}")
                return None
            response.success()
            return response

    def _query(self) -> str:
        return f"What about the {self.rng.choice(WORDS)} and the {self.rng.choice(WORDS)}?"

    # -- the conversation --------------------------------------------------------------------

    @task(20)
    def messages(self) -> None:
        body = {
            "messages": [
                {"role": "user", "content": sentence(self.rng, 40), "name": "Ana"},
                {"role": "assistant", "content": sentence(self.rng, 40)},
            ]
        }
        path = f"/api/v1/memory/conversations/{self.conversation_id}/messages"
        self._call("conversation messages", "POST", path, (201,), body)

    @task(15)
    def context_for_query(self) -> None:
        body = {
            "query": self._query(),
            "conversation_id": self.conversation_id,
            "session_id": self.session_id,
            "token_budget": 1000,
        }
        self._call("context", "POST", "/api/v1/memory/context", (200,), body)

    # -- searches ------------------------------------------------------------------------------

    @task(12)
    def rag_search(self) -> None:
        body: dict[str, Any] = {"query": self._query(), "top_k": 10}
        if self.rng.random() < 0.5:
            body["knowledge_base_ids"] = [self.kb_id]
        self._call("rag search (hybrid)", "POST", "/api/v1/rag/search", (200,), body)

    @task(12)
    def memory_search(self) -> None:
        body = {
            "query": f"{self.rng.choice(WORDS)} {self.rng.choice(WORDS)}",
            "top_k": 10,
            "filters": {"session_id": self.session_id},
        }
        self._call("memory search", "POST", "/api/v1/memory/search", (200,), body)

    # -- memory writes -----------------------------------------------------------------------

    @task(10)
    def long_term_write(self) -> None:
        body = {"content": sentence(self.rng, 20), "tags": [self.rng.choice(WORDS)]}
        self._call("memory write: long-term", "POST", "/api/v1/memory/entries", (201,), body)

    @task(6)
    def short_term_write(self) -> None:
        self.writes += 1
        path = f"/api/v1/memory/short-term/{self.session_id}/note-{self.writes % 40}"
        body = {"value": {"note": sentence(self.rng, 12)}, "ttl": 900}
        self._call("memory write: short-term", "PUT", path, (200, 201), body)

    @task(6)
    def working_write(self) -> None:
        self.writes += 1
        path = f"/api/v1/memory/working/{self.session_id}/step-{self.writes % 20}"
        body = {"value": {"step": self.writes, "text": sentence(self.rng, 12)}, "ttl": 900}
        self._call("memory write: working", "PUT", path, (200,), body)

    # -- documents -----------------------------------------------------------------------------

    def _upload_document(self, name: str) -> None:
        sections = [
            f"## {self.rng.choice(WORDS).capitalize()}\n\n"
            + " ".join(sentence(self.rng, 18) for _ in range(4))
            for _ in range(3)
        ]
        body = {
            "title": f"Notes on the {self.rng.choice(WORDS)}",
            "text": f"# Notes {self.label}\n\n" + "\n\n".join(sections),
            "tags": [self.rng.choice(WORDS)],
        }
        path = f"/api/v1/rag/knowledge-bases/{self.kb_id}/documents"
        self._call(name, "POST", path, (201,), body)

    @task(3)
    def document_upload(self) -> None:
        self._upload_document("document upload")

    # -- MCP -----------------------------------------------------------------------------------

    def _mcp(self, name: str, method: str, params: dict[str, Any] | None = None) -> None:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self.writes, "method": method}
        if params is not None:
            body["params"] = params
        headers = {
            **self.auth,
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MCP_VERSION,
        }
        with self.client.post(
            "/mcp", json=body, headers=headers, name=name, catch_response=True
        ) as response:
            if response.status_code != 200:
                response.failure(f"{response.status_code} {_error_code(response)}")
                return
            try:
                answer = _jsonrpc_answer(response.text or "")
            except ValueError as exc:
                response.failure(f"200 unreadable: {exc}")
                return
            if "error" in answer:
                response.failure(f"jsonrpc {answer['error'].get('code')}")
            elif answer.get("result", {}).get("isError"):
                error = (answer["result"].get("structuredContent") or {}).get("error") or {}
                response.failure(f"tool error {error.get('code', '?')}")
            else:
                response.success()

    @task(2)
    def mcp_tools_list(self) -> None:
        self._mcp("mcp tools/list", "tools/list", {})

    @task(4)
    def mcp_memory_search(self) -> None:
        arguments = {"query": f"{self.rng.choice(WORDS)} {self.rng.choice(WORDS)}", "top_k": 5}
        self._mcp(
            "mcp memory_search", "tools/call", {"name": "memory_search", "arguments": arguments}
        )

    @task(3)
    def mcp_memory_write(self) -> None:
        self.writes += 1
        if self.rng.random() < 0.5:
            arguments: dict[str, Any] = {"content": sentence(self.rng, 16)}
        else:
            arguments = {
                "tier": "working",
                "session_id": self.session_id,
                "key": f"mcp-{self.writes % 10}",
                "value": {"text": sentence(self.rng, 8)},
            }
        self._mcp(
            "mcp memory_write", "tools/call", {"name": "memory_write", "arguments": arguments}
        )

    @task(3)
    def mcp_get_context(self) -> None:
        arguments = {
            "query": self._query(),
            "conversation_id": self.conversation_id,
            "token_budget": 800,
        }
        self._mcp("mcp get_context", "tools/call", {"name": "get_context", "arguments": arguments})

    @task(3)
    def mcp_search_documents(self) -> None:
        arguments = {"query": self._query(), "top_k": 5}
        self._mcp(
            "mcp search_documents",
            "tools/call",
            {"name": "search_documents", "arguments": arguments},
        )


def _jsonrpc_answer(text: str) -> dict[str, Any]:
    """The JSON-RPC answer of a JSON body, or of an event stream's last ``data:`` line."""
    text = text.strip()
    if text.startswith("{"):
        answer = json.loads(text)
    else:
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        if not data:
            raise ValueError(text[:80])
        answer = json.loads(data[-1])
    if not isinstance(answer, dict):
        raise ValueError("not an object")
    return answer


# --- the processes' memory -----------------------------------------------------------------------


def _role(process: psutil.Process, cmdline: list[str]) -> str:
    line = " ".join(cmdline)
    if "config.launcher" in line:
        return "launcher"
    if "gunicorn" in line or "uvicorn" in line:
        return "web"
    if "celery" in line:
        return "celery beat" if " beat" in line else "celery worker"
    if "valkey" in line or "redis-server" in line:
        return "valkey"
    if "postgres" in line or process.name().startswith("postgres"):
        return "postgres"
    return Path(cmdline[0]).name if cmdline else process.name()


class RssSampler:
    """Samples the RSS of the launcher's descendants and of the processes whose command line
    names the data directory, every ``every`` seconds, until stopped."""

    def __init__(self, data_dir: str, every: float) -> None:
        self.data_dir, self.every = data_dir, every
        # (seconds, pid, role, rss, private: rss less the shared pages), in bytes
        self.samples: list[tuple[float, int, str, int, int]] = []
        self.titles: dict[int, str] = {}
        self.load: list[float] = []  # the 1-minute load average at each sample
        self.started = time.monotonic()
        self.stopping = threading.Event()  # a greenlet: Locust has patched threading

    def processes(self) -> dict[int, psutil.Process]:
        found: dict[int, psutil.Process] = {}
        for process in psutil.process_iter(["pid", "cmdline", "cwd"]):
            cmdline = process.info.get("cmdline") or []
            line = " ".join(cmdline)
            if self.data_dir in line:
                found[process.pid] = process
            elif "config.launcher" in line and self._ours(process.info.get("cwd")):
                found[process.pid] = process
                for child in process.children(recursive=True):
                    found[child.pid] = child
        # The embedded PostgreSQL's children (backends, checkpointer...) name no directory.
        for process in list(found.values()):
            try:
                if process.name().startswith("postgres"):
                    for child in process.children(recursive=True):
                        found[child.pid] = child
            except psutil.Error:
                continue
        return found

    def _ours(self, cwd: str | None) -> bool:
        return bool(cwd) and Path(self.data_dir).resolve().parent == Path(str(cwd)).resolve()

    def sample(self) -> None:
        at = round(time.monotonic() - self.started, 1)
        for pid, process in self.processes().items():
            try:
                cmdline = process.cmdline()
                memory = process.memory_info()
                role = _role(process, cmdline)
            except psutil.Error:
                continue
            self.samples.append((at, pid, role, memory.rss, memory.rss - memory.shared))
            self.titles.setdefault(pid, " ".join(cmdline)[:100])
        self.load.append(os.getloadavg()[0])

    def loop(self) -> None:
        while not self.stopping.is_set():
            self.sample()
            self.stopping.wait(self.every)

    def start(self) -> None:
        self.started = time.monotonic()
        threading.Thread(target=self.loop, daemon=True).start()

    def stop(self) -> None:
        self.stopping.set()
        self.sample()

    def summary(self) -> dict[str, Any]:
        if not self.samples:
            return {"processes": [], "roles": {}, "note": f"no process found for {self.data_dir}"}
        times = sorted({s[0] for s in self.samples})
        first, middle, last = times[0], times[len(times) // 2], times[-1]
        by_pid: dict[int, list[tuple[float, str, int, int]]] = {}
        for at, pid, role, rss, private in self.samples:
            by_pid.setdefault(pid, []).append((at, role, rss, private))
        # Processes there from the first sample to the last, one by one; the others (PostgreSQL
        # backends of connections that closed, a restarted worker) by role.
        processes: list[dict[str, Any]] = []
        transient: dict[str, dict[str, float]] = {}
        for pid, series in sorted(by_pid.items(), key=lambda p: (p[1][0][1], p[0])):
            role = series[0][1]
            if series[0][0] == first and series[-1][0] == last:
                processes.append(
                    {"pid": pid, "role": role, "command": self.titles.get(pid, "")}
                    | _figures([(at, rss, private) for at, _, rss, private in series], middle)
                )
            else:
                seen = transient.setdefault(role, {"processes": 0, "rss_max_mb": 0.0})
                seen["processes"] += 1
                seen["rss_max_mb"] = max(
                    seen["rss_max_mb"], round(max(s[2] for s in series) / MB, 1)
                )
        # Sums over the processes there throughout: transient ones would make steps.
        throughout = {p["pid"] for p in processes}
        sums: dict[str, dict[float, list[int]]] = {}
        for at, pid, role, rss, private in self.samples:
            if pid in throughout:
                for name in (role, "all"):
                    point = sums.setdefault(name, {}).setdefault(at, [0, 0])
                    point[0] += rss
                    point[1] += private
        roles = {
            name: {
                "processes_throughout": len(throughout)
                if name == "all"
                else sum(1 for p in processes if p["role"] == name)
            }
            | _figures(
                [(at, rss, private) for at, (rss, private) in sorted(series.items())], middle
            )
            for name, series in sorted(sums.items(), key=lambda r: (r[0] == "all", r[0]))
        }
        return {
            "sample_every_s": self.every,
            "samples": len(times),
            "seconds": last,
            "load_average_1m": {
                "min": round(min(self.load), 2),
                "mean": round(sum(self.load) / len(self.load), 2),
                "max": round(max(self.load), 2),
            },
            "roles": roles,
            "processes": processes,
            "transient_processes": transient,
        }

    def write_csv(self, path: str) -> None:
        with Path(path).open("w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["seconds", "pid", "role", "rss_mb", "private_mb"])
            for at, pid, role, rss, private in self.samples:
                writer.writerow([at, pid, role, round(rss / MB, 1), round(private / MB, 1)])


def _figures(series: list[tuple[float, int, int]], middle: float) -> dict[str, float]:
    """In MB: RSS at the first sample, max, at the last; its growth overall and over the second
    half (the last sample against the one at or just before ``middle``); the same two growths
    of the private part (RSS less the shared pages: PostgreSQL's buffers, shared libraries)."""
    first, end = series[0], series[-1]
    at_middle = next((s for s in reversed(series) if s[0] <= middle), first)
    return {
        "rss_start_mb": round(first[1] / MB, 1),
        "rss_max_mb": round(max(s[1] for s in series) / MB, 1),
        "rss_end_mb": round(end[1] / MB, 1),
        "growth_mb": round((end[1] - first[1]) / MB, 1),
        "growth_second_half_mb": round((end[1] - at_middle[1]) / MB, 1),
        "private_end_mb": round(end[2] / MB, 1),
        "private_growth_mb": round((end[2] - first[2]) / MB, 1),
        "private_growth_second_half_mb": round((end[2] - at_middle[2]) / MB, 1),
    }


_sampler: RssSampler | None = None


@events.test_start.add_listener
def _start_sampling(environment: Environment, **_: Any) -> None:
    global _sampler
    options = environment.parsed_options
    data_dir = options.engram_data_dir if options else str(CHECKOUT / ".engram")
    _sampler = RssSampler(str(Path(data_dir).resolve()), options.engram_rss_every if options else 5)
    _sampler.start()


@events.test_stop.add_listener
def _report(environment: Environment, **_: Any) -> None:
    stats = environment.stats
    options = environment.parsed_options

    def entry(e: Any) -> dict[str, Any]:
        return {
            "requests": e.num_requests,
            "failures": e.num_failures,
            "rps": round(e.total_rps, 2),
            "p50_ms": e.get_response_time_percentile(0.5),
            "p95_ms": e.get_response_time_percentile(0.95),
            "p99_ms": e.get_response_time_percentile(0.99),
            "max_ms": round(e.max_response_time or 0),
        }

    report: dict[str, Any] = {
        "users": options.num_users if options else None,
        "keys": len([k for k in (options.engram_keys if options else "").split(",") if k]),
        "host": environment.host,
        "operations": {
            e.name: entry(e) for e in sorted(stats.entries.values(), key=lambda e: e.name)
        },
        "total": entry(stats.total),
        "errors": sum(e.num_failures for e in stats.entries.values()),
        "errors_by_message": {
            f"{error.name}: {error.error}": error.occurrences for error in stats.errors.values()
        },
    }
    if _sampler is not None:
        _sampler.stop()
        report["rss"] = _sampler.summary()
        if options and options.engram_rss_csv:
            _sampler.write_csv(options.engram_rss_csv)
    text = json.dumps(report, indent=2)
    print(text)
    if options and options.engram_summary:
        Path(options.engram_summary).write_text(text + "\n")
