"""Context assembly over HTTP, as a client sees it: LoCoMo conversations written through the
conversations API, every question asked through ``POST /api/v1/memory/context`` (issue 18,
"Done means"; docs/benchmarks-log.md, "Context assembly").

Against a running server (``./engram run``) with an agent's API key:

    ENGRAM_API_KEY=eng_... uv run python bench/memory/context_http.py [--url http://127.0.0.1:8000]
        [--data ../shared/data/locomo/locomo-dev.json] [--budgets 2000,1000] [--no-dates]
        [--keep] [--per-message]

Each conversation is written a session at a time, or a message at a time with ``--per-message``
(``POST /memory/conversations/{id}/messages``;
role ``user`` for the first speaker and ``assistant`` for the second, the speaker as ``name``,
``metadata.dia_id`` on every message, ``occurred_at`` from the session's date unless
``--no-dates``). Then each question of categories 1-4 with evidence is asked with the
conversation and each budget. Per conversation and budget it prints evidence recall (the share
of a question's evidence turns among the answer's turn items, by ``metadata.dia_id``) per
category and over 1-4, and checks what a client relies on: ``tokens`` within the budget and
every item's ``text`` in ``context`` (``violations`` counts the failures; 0 expected).
The conversations are deleted afterwards unless ``--keep``.

Reads ../shared/data (the product never does). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.error
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import ROOT, SHARED_DATA

sys.path.insert(0, str(ROOT))  # the project's evaluation helpers (plain Python, no Django)
from memory.context.evaluation.context import evidence_recall
from memory.context.evaluation.locomo import session_date
from rag.evaluation import percentiles


class Client:
    def __init__(self, url: str, key: str) -> None:
        self.url, self.key = url.rstrip("/"), key

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        request = urllib.request.Request(  # noqa: S310 - the URL is the operator's
            f"{self.url}/api/v1{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=300) as answer:  # noqa: S310
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def expect(self, status: int, method: str, path: str, body: Any = None) -> Any:
        got, answer = self.call(method, path, body)
        if got != status:
            raise SystemExit(f"{method} {path}: {got} {json.dumps(answer)[:500]}")
        return answer


def write(client: Client, sample: dict[str, Any], *, dates: bool, per_message: bool) -> int:
    dialogue = sample["conversation"]
    first = dialogue["speaker_a"]
    made = client.expect(201, "POST", "/memory/conversations", {"title": sample["sample_id"]})
    number = 1
    while f"session_{number}" in dialogue:
        messages = []
        for turn in dialogue[f"session_{number}"]:
            message = {
                "role": "user" if turn["speaker"] == first else "assistant",
                "name": turn["speaker"],
                "content": turn["text"],
                "metadata": {"dia_id": turn["dia_id"]},
            }
            when = session_date(dialogue[f"session_{number}_date_time"])
            if dates and when is not None:
                message["occurred_at"] = when.isoformat()
            messages.append(message)
        for batch in [[m] for m in messages] if per_message else [messages]:
            client.expect(
                201, "POST", f"/memory/conversations/{made['id']}/messages", {"messages": batch}
            )
        number += 1
    # Messages are indexed by the server's worker after they are stored: ask once every one
    # is found by keyword and by meaning (docs/memory/conversations.md, "When a message becomes
    # searchable").
    while client.expect(200, "GET", f"/memory/conversations/{made['id']}")["indexing"]["waiting"]:
        time.sleep(1)
    return int(made["id"])


def ask(client: Client, sample: dict[str, Any], conversation_id: int, budget: int) -> dict:
    recall: dict[int, list[float]] = defaultdict(list)
    latency: list[float] = []
    violations = tokens_max = 0
    for question in sample["qa"]:
        if question.get("category") not in (1, 2, 3, 4) or not question.get("evidence"):
            continue
        started = time.perf_counter()
        answer = client.expect(
            200,
            "POST",
            "/memory/context",
            {
                "query": question["question"],
                "conversation_id": conversation_id,
                "token_budget": budget,
            },
        )
        latency.append((time.perf_counter() - started) * 1000)
        tokens_max = max(tokens_max, answer["tokens"])
        violations += answer["tokens"] > budget
        for section in answer["sections"]:
            violations += sum(item["text"] not in answer["context"] for item in section["items"])
        evidence = tuple(dict.fromkeys(question["evidence"]))
        recall[question["category"]].append(evidence_recall(answer["sections"], evidence))
    every = [value for values in recall.values() for value in values]
    return {
        "questions": len(every),
        "evidence_recall_1_4": round(statistics.mean(every), 4),
        "per_category": {str(c): round(statistics.mean(v), 4) for c, v in sorted(recall.items())},
        "tokens_max": tokens_max,
        "violations": violations,
        "latency_ms": {
            name: round(value, 1) for name, value in percentiles(latency, (50, 95)).items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--data", default=str(SHARED_DATA / "locomo" / "locomo-dev.json"))
    parser.add_argument("--budgets", default="2000,1000")
    parser.add_argument("--no-dates", action="store_true", help="no occurred_at on messages")
    parser.add_argument("--keep", action="store_true", help="keep the conversations written")
    parser.add_argument(
        "--per-message", action="store_true", help="one message per request, not a session"
    )
    args = parser.parse_args()
    key = os.environ.get("ENGRAM_API_KEY")
    if not key:
        raise SystemExit("ENGRAM_API_KEY: an agent's API key (./engram run prints one)")
    client = Client(args.url, key)
    budgets = [int(b) for b in args.budgets.split(",")]
    report: dict[str, Any] = {
        "data": args.data,
        "url": args.url,
        "dates": not args.no_dates,
        "per_message": args.per_message,
    }
    for sample in json.loads(Path(args.data).read_text()):
        started = time.perf_counter()
        conversation_id = write(
            client, sample, dates=not args.no_dates, per_message=args.per_message
        )
        written = round(time.perf_counter() - started, 1)
        try:
            report[sample["sample_id"]] = {
                "write_seconds": written,
                **{str(budget): ask(client, sample, conversation_id, budget) for budget in budgets},
            }
        finally:
            if not args.keep:
                client.expect(204, "DELETE", f"/memory/conversations/{conversation_id}")
        print(json.dumps({sample["sample_id"]: report[sample["sample_id"]]}), file=sys.stderr)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
