"""The search across memory tiers (``POST /memory/search``) at scale: 100k short-term entries,
10k shared pools holding 1M keys and 100k long-term entries in one account (issue 14's goal:
p95 <= 30 ms, query embedding excluded).

Data: the sentences of BEIR SciFact abstracts (read in place from --dataset; the default is the
developers' copy beside the project, ``../shared/data/scifact``). Everything is written through
the services a client's requests reach, so every index is the one production builds:

- long-term entries as ``bench/memory/memory_long_term.py`` writes them (the same context, reused);
- short-term entries with ``short_term_put_batch`` (sessions of 1,000 keys, the longest TTL, so
  a later run within SHORT_TERM_MAX_TTL reuses them and tops up what expired);
- pools with ``pool_create``: each holds --keys-per-pool leaves (10 sections of string values).

Only the embeddings stand in (see ``bench/memory/memory_long_term.py``): the measured searches pass
the stand-in's vector as ``query_vector``, so the figure excludes the query's embedding. Queries are
SciFact's questions; the searching agent owns the short-term entries, the long-term context and
the pools. ``memory_search`` is the selector ``memory_search_run`` wraps (the service adds the
access log's write, which the API's figure includes: ``--with-service`` measures that path).

    uv run python bench/memory/memory_search.py [--short-term 100000] [--pools 10000]
        [--keys-per-pool 100] [--long-term 100000] [--queries 200]

Prints one JSON object; docs/benchmarks.md records the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, django_session, settle_tables
from bench.memory.memory_long_term import _SENTENCE_END, bench_setup, build_entries

SESSION_SIZE = 1000
SECTIONS = 10

# The tables a search across tiers reads (each with its indexes).
SEARCH_TABLES = (
    "memory_memoryentry",
    "memory_memoryentryposting",
    "memory_memoryentryterm",
    "memory_memorypool",
    "memory_shorttermentry",
    "memory_shorttermposting",
    "memory_shorttermterm",
    "memory_poolleaf",
    "memory_poolleafposting",
    "memory_poolleafterm",
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--short-term", type=int, default=100_000)
    parser.add_argument("--pools", type=int, default=10_000)
    parser.add_argument("--keys-per-pool", type=int, default=100)
    parser.add_argument("--long-term", type=int, default=100_000)
    parser.add_argument("--context", default="bench-ltm-100000", help="the long-term context")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured queries run first")
    parser.add_argument("--with-service", action="store_true", help="measure memory_search_run")
    args = parser.parse_args()
    with django_session():
        report = run(args)
    print(json.dumps(report, indent=2))


def _sentences(dataset: Any) -> list[str]:
    return [
        sentence
        for doc in dataset.corpus.values()
        for sentence in _SENTENCE_END.split(f"{doc.title}. {doc.text}")
        if sentence.strip()
    ]


def _build_short_term(actor: Any, sentences: list[str], total: int) -> float:
    """Top the agent's live short-term entries up to ``total``; seconds spent writing."""
    from django.conf import settings
    from django.utils import timezone
    from tqdm import tqdm

    from memory.models import ShortTermEntry
    from memory.short_term.services import short_term_put_batch

    live = ShortTermEntry.objects.filter(agent=actor.agent, expires_at__gt=timezone.now())
    have = live.count()
    seconds = 0.0
    with tqdm(total=total, initial=have, desc="short-term entries") as progress:
        number = ShortTermEntry.objects.filter(agent=actor.agent).count()
        while have < total:
            size = min(SESSION_SIZE, total - have)
            batch = [
                {
                    "key": f"note-{number + i}",
                    "value": {"note": sentences[(number + i) % len(sentences)], "n": number + i},
                    "ttl": int(settings.SHORT_TERM_MAX_TTL),
                }
                for i in range(size)
            ]
            started = time.perf_counter()
            short_term_put_batch(
                actor=actor, session_id=f"bench-{number // SESSION_SIZE}", entries=batch
            )
            seconds += time.perf_counter() - started
            number += size
            have += size
            progress.update(size)
    return seconds


def _build_pools(actor: Any, sentences: list[str], pools: int, keys: int) -> float:
    """Create the pools missing of ``bench-pool-<n>`` (n < pools); seconds spent writing."""
    from tqdm import tqdm

    from memory.models import MemoryPool
    from memory.pools.services import pool_create

    existing = set(
        MemoryPool.objects.filter(
            account_id=actor.agent.account_id, pool_id__startswith="bench-pool-"
        ).values_list("pool_id", flat=True)
    )
    per_section = max(1, keys // SECTIONS)
    seconds = 0.0
    for n in tqdm(range(pools), desc="pools"):
        pool_id = f"bench-pool-{n:05d}"
        if pool_id in existing:
            continue
        base = n * keys
        data = {
            f"section{s}": {
                f"k{k}": sentences[(base + s * per_section + k) % len(sentences)]
                for k in range(per_section)
            }
            for s in range(SECTIONS)
        }
        started = time.perf_counter()
        pool_create(actor=actor, pool_id=pool_id, name=f"Bench pool {n}", data=data)
        seconds += time.perf_counter() - started
    return seconds


def run(args: argparse.Namespace) -> dict[str, Any]:
    from memory.context.selectors.router import RouterFilters
    from memory.context.selectors.search import memory_search
    from memory.context.services.search import memory_search_run
    from memory.models import MemoryPool, PoolLeaf, ShortTermEntry
    from rag.evaluation import percentiles

    dataset, actor, stand_in, context = bench_setup(args.dataset, args.context)
    sentences = _sentences(dataset)

    build = {
        "long_term_seconds": build_entries(
            actor=actor, context=context, dataset=dataset, entries=args.long_term, stand_in=stand_in
        ),
        "short_term_seconds": _build_short_term(actor, sentences[::-1], args.short_term),
        "pools_seconds": _build_pools(actor, sentences, args.pools, args.keys_per_pool),
    }
    context.refresh_from_db()
    settle_tables(SEARCH_TABLES)

    search = memory_search_run if args.with_service else memory_search
    filters = RouterFilters()
    queries = list(dataset.queries.values())
    measured = queries[: args.queries]
    warmup = queries[args.queries : args.queries + args.warmup]
    stages: dict[str, list[float]] = {}
    tiers_hit: dict[str, int] = {}

    def once(text: str) -> float:
        vector = stand_in.embed_query(text)
        started = time.perf_counter()
        found = search(actor=actor, query=text, top_k=10, filters=filters, query_vector=vector)
        elapsed = (time.perf_counter() - started) * 1000
        for stage, ms in found.timings_ms.items():
            stages.setdefault(stage, []).append(ms)
        for hit in found.results:
            tiers_hit[hit.tier] = tiers_hit.get(hit.tier, 0) + 1
        return elapsed

    for text in warmup:
        once(text)
    stages.clear()
    tiers_hit.clear()
    totals = [once(text) for text in measured]

    def rounded(values: list[float]) -> dict[str, float]:
        return {k: round(v, 2) for k, v in percentiles(values, (50, 95, 99)).items()}

    pools = MemoryPool.objects.filter(account_id=actor.agent.account_id)
    return {
        "short_term_entries": ShortTermEntry.objects.filter(agent=actor.agent).count(),
        "pools": pools.count(),
        "pool_keys": PoolLeaf.objects.filter(account_id=actor.agent.account_id).count(),
        "long_term_entries": context.entry_count,
        "build_seconds_this_run": {k: round(v, 1) for k, v in build.items()},
        "queries": len(measured),
        "path": "memory_search_run (service)" if args.with_service else "memory_search (selector)",
        "search_ms_query_vector_given": rounded(totals),
        "stages_ms": {stage: rounded(values) for stage, values in stages.items()},
        "hits_by_tier": tiers_hit,
        "embeddings": "word-hash stand-in (see bench/memory/memory_long_term.py)",
        "cpu": f"{os.cpu_count()} cores",
    }


if __name__ == "__main__":
    main()
