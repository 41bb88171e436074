"""Short-term memory write throughput through the service layer (memory/short_term/services.py).

On the configured or embedded PostgreSQL, as the benchmark agent (created once). Single writes
are ``short_term_put`` calls one after another, each its own transaction with its audit event, as
``PUT /api/v1/memory/short-term/{session_id}/{key}`` makes them. Batch writes are
``short_term_put_batch`` calls of --batch entries each, as ``POST .../{session_id}/_batch``
makes them. Half the writes create entries, half replace live ones (each part writes its keys
twice). Entries are about 200 bytes of JSON; the benchmark's sessions are removed at the end.

    uv run python bench/memory/memory_short_term.py [--writes 5000] [--batch 100]

Prints one JSON object; docs/benchmarks.md records the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=5000, help="entries written per part")
    parser.add_argument("--batch", type=int, default=100, help="entries per batch write")
    parser.add_argument("--rounds", type=int, default=3, help="each part runs this many times")
    args = parser.parse_args()
    with django_session():
        report = run(args)
    print(json.dumps(report, indent=2))


def run(args: argparse.Namespace) -> dict[str, object]:
    import statistics

    from core import services as core_services
    from core.actors import actor_for_account, actor_for_agent
    from core.models import Account, Agent
    from memory.models import ShortTermEntry
    from memory.short_term import services

    account = Account.objects.filter(slug="engram-bench").first() or core_services.account_create(
        name="Engram benchmarks", slug="engram-bench"
    )
    agent = Agent.objects.filter(
        account=account, name="bench"
    ).first() or core_services.agent_create(
        actor=actor_for_account(account.pk), account=account, name="bench"
    )
    actor = actor_for_agent(agent)
    half = args.writes // 2

    def value(i: int) -> dict[str, object]:
        return {"observation": f"the user asked about invoice {i}", "step": i, "tags": ["a", "b"]}

    def single(session: str) -> float:
        started = time.perf_counter()
        for i in range(args.writes):
            services.short_term_put(
                actor=actor, session_id=session, key=f"k{i % half}", value=value(i), ttl=3600
            )
        return args.writes / (time.perf_counter() - started)

    def batch(session: str) -> float:
        started = time.perf_counter()
        for start in range(0, args.writes, args.batch):
            services.short_term_put_batch(
                actor=actor,
                session_id=session,
                entries=[
                    {"key": f"k{i % half}", "value": value(i), "ttl": 3600}
                    for i in range(start, min(start + args.batch, args.writes))
                ],
            )
        return args.writes / (time.perf_counter() - started)

    parts = {"single": single, "batch": batch}
    rates: dict[str, list[float]] = {name: [] for name in parts}
    sessions = []
    services.short_term_put(actor=actor, session_id="bench-warmup", key="k", value=value(0))
    for round_ in range(args.rounds):
        for name, part in parts.items():
            session = f"bench-{name}-{round_}-{os.getpid()}"
            sessions.append(session)
            rates[name].append(part(session))
    sessions.append("bench-warmup")
    ShortTermEntry.objects.filter(agent=agent, session_id__in=sessions).delete()
    return {
        "writes_per_part": args.writes,
        "batch_size": args.batch,
        "entries_per_s": {
            name: {
                "rounds": [round(r, 1) for r in values],
                "median": round(statistics.median(values), 1),
            }
            for name, values in rates.items()
        },
        "cpu": f"{os.cpu_count()} cores",
    }


if __name__ == "__main__":
    main()
