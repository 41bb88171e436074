"""A mixed load against a running server: eight clients, each sending its next request as soon
as the last one answered, mixing conversation messages, contexts, searches and memory writes
on the same conversation and the same memory for two minutes (issue 35, "Done means";
docs/benchmarks-log.md, "Message batches and mixed load").

    ./engram manage create_agent --account load --create-account --name load
    ENGRAM_API_KEY=eng_... uv run python bench/core/load_mixed.py [--url http://127.0.0.1:8105]
        [--clients 8] [--seconds 120] [--keys eng_a,eng_b,...] [--seed 35]

All clients use one key (the harsher case for the rate limits) unless ``--keys`` gives one per
client. Every client writes into one shared conversation and the agent's own memory, and
searches and assembles contexts over them: reads and writes meet on the same rows, which is what
used to deadlock. The texts are generated (a fixed vocabulary, ``--seed``), so it runs on a
fresh clone without any data set.

Prints one JSON object: requests, requests per second, errors by status and code (any status
other than the operation's success is an error, 429 included: the default rate limits must let
eight clients through), latency percentiles per operation and overall. Exits 1 when any error
was answered.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
from collections import Counter, defaultdict
from typing import Any

import httpx

WORDS = [
    "harbour",
    "lantern",
    "orchard",
    "glacier",
    "violin",
    "saffron",
    "tundra",
    "quartz",
    "ferry",
    "cabin",
    "fjord",
    "marmalade",
    "deadline",
    "invoice",
    "passport",
    "allergy",
    "peanuts",
    "espresso",
    "dentist",
    "Tuesday",
    "Lisbon",
    "Berlin",
    "Oslo",
    "project",
    "release",
    "version",
    "meeting",
    "budget",
    "train",
    "ticket",
    "hotel",
    "museum",
    "garden",
    "tomato",
    "recipe",
    "birthday",
    "concert",
    "guitar",
    "painting",
    "hiking",
    "marathon",
    "doctor",
    "insurance",
    "contract",
    "landlord",
]
NAMES = ("Ana", "Ben", "Chloe", "Dev")
# Operation -> share of the requests.
MIX = {"messages": 0.3, "context": 0.25, "search": 0.25, "memory_write": 0.2}


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else 0.0


class Load:
    def __init__(self, url: str, keys: list[str], seconds: float, seed: int) -> None:
        self.url, self.keys, self.seconds, self.seed = url.rstrip("/"), keys, seconds, seed
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: Counter[tuple[str, int, str]] = Counter()
        self.lock = threading.Lock()
        self.conversation_id = 0
        self.conversation_context_id = 0

    def client(self, key: str) -> httpx.Client:
        return httpx.Client(
            base_url=f"{self.url}/api/v1",
            headers={"Authorization": f"Bearer {key}"},
            timeout=httpx.Timeout(180.0),
        )

    def setup(self) -> None:
        with self.client(self.keys[0]) as http:
            made = http.post("/memory/conversations", json={"title": "load", "summary_every": 0})
            made.raise_for_status()
            self.conversation_id = made.json()["id"]
            self.conversation_context_id = made.json()["context_id"]
            seed = [
                {"role": "user", "content": sentence(random.Random(n), 30), "name": "Ana"}
                for n in range(20)
            ]
            http.post(
                f"/memory/conversations/{self.conversation_id}/messages", json={"messages": seed}
            ).raise_for_status()

    def request(self, rng: random.Random, operation: str) -> tuple[str, str, Any, int]:
        conversation = f"/memory/conversations/{self.conversation_id}"
        body: dict[str, Any]
        if operation == "messages":
            body = {
                "messages": [
                    {"role": "user", "content": sentence(rng, 40), "name": rng.choice(NAMES)},
                    {"role": "assistant", "content": sentence(rng, 40)},
                ]
            }
            return "POST", f"{conversation}/messages", body, 201
        if operation == "context":
            body = {
                "query": f"What about the {rng.choice(WORDS)} and the {rng.choice(WORDS)}?",
                "conversation_id": self.conversation_id,
                "token_budget": 1000,
            }
            return "POST", "/memory/context", body, 200
        if operation == "search":
            body = {"query": f"{rng.choice(WORDS)} {rng.choice(WORDS)}", "top_k": 10}
            return "POST", "/memory/search", body, 200
        body = {"content": sentence(rng, 20), "tags": [rng.choice(WORDS)]}
        if rng.random() < 0.5:  # into the conversation's own context, where appends write
            body["context"] = self.conversation_context_id
        return "POST", "/memory/entries", body, 201

    def run_client(self, index: int, deadline: float) -> None:
        rng = random.Random(self.seed * 1000 + index)
        operations, weights = list(MIX), list(MIX.values())
        with self.client(self.keys[index % len(self.keys)]) as http:
            while time.monotonic() < deadline:
                operation = rng.choices(operations, weights)[0]
                method, path, body, success = self.request(rng, operation)
                started = time.perf_counter()
                try:
                    answer = http.request(method, path, json=body)
                    status = answer.status_code
                    code = "" if status == success else _code(answer)
                except httpx.HTTPError as exc:
                    status, code = 0, type(exc).__name__
                elapsed = (time.perf_counter() - started) * 1000
                with self.lock:
                    self.latencies[operation].append(elapsed)
                    if status != success:
                        self.errors[(operation, status, code)] += 1

    def run(self, clients: int) -> dict[str, Any]:
        self.setup()
        started = time.monotonic()
        deadline = started + self.seconds
        threads = [
            threading.Thread(target=self.run_client, args=(n, deadline)) for n in range(clients)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - started
        everything = [ms for values in self.latencies.values() for ms in values]
        by_status: Counter[str] = Counter()
        for (_, status, code), count in self.errors.items():
            by_status[f"{status} {code}"] += count
        return {
            "clients": clients,
            "keys": len(self.keys),
            "seconds": round(wall, 1),
            "requests": len(everything),
            "requests_per_second": round(len(everything) / wall, 1),
            "errors": sum(self.errors.values()),
            "errors_by_status_and_code": dict(by_status),
            "errors_by_operation": {
                f"{operation} {status} {code}": count
                for (operation, status, code), count in sorted(self.errors.items())
            },
            "latency_ms": {
                name: _summary(values)
                for name, values in [*sorted(self.latencies.items()), ("all", everything)]
            },
        }


def _code(answer: httpx.Response) -> str:
    try:
        return str(answer.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return "no_json_error"


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": round(percentile(values, 0.5), 1),
        "p95": round(percentile(values, 0.95), 1),
        "p99": round(percentile(values, 0.99), 1),
        "max": round(max(values), 1) if values else 0.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:8105")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--keys", default="", help="comma-separated keys, one per client")
    parser.add_argument("--seed", type=int, default=35)
    args = parser.parse_args()
    keys = [k for k in args.keys.split(",") if k] or [os.environ.get("ENGRAM_API_KEY", "")]
    if not keys[0]:
        print("Set ENGRAM_API_KEY (./engram manage create_agent ...) or --keys.", file=sys.stderr)
        return 2
    report = Load(args.url, keys, args.seconds, args.seed).run(args.clients)
    print(json.dumps(report, indent=2))
    return 1 if report["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
