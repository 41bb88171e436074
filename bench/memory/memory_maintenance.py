"""Cluster maintenance (docs/memory/maintenance.md, "Cluster maintenance") at 10k and 100k entries:
the time and peak memory of one run over one context, dry and for real.

The entries are written straight to the table (bulk_create, current embedding model id, no
BM25 postings): writing 100k entries through the services would embed every one with the local
model first (more than an hour here), and the run reads only the entries' rows and vectors. The
vectors are synthetic, with a known structure: ``--duplicate-share`` of the entries fall in
groups of 2 to 5 near-duplicates (unit vectors at cosine ~0.95 from their group's centre), the
rest are unrelated random directions. The real run applies at most
MEMORY_MAINTENANCE_MAX_REWRITES (500) rewrites through the services (each kept entry's new
version is embedded by the local model): the rest are reported as ``run_limit``.

    uv run python bench/memory/memory_maintenance.py --entries 10000 [--real]

Run each size in its own process (the peak RSS is the process's). Prints one JSON object;
docs/benchmarks.md records the figures. The bench account (``engram-bench-maintenance-<N>``)
and its context are deleted first and rebuilt.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build(entries: int, share: float, seed: int) -> tuple[int, int, int]:
    """The account and context with ``entries`` synthetic entries; returns (account, context,
    near-duplicate groups)."""
    from django.conf import settings

    from core import services as core_services
    from core.embeddings import get_embedding_provider
    from core.models import Account
    from memory.models import MemoryContext, MemoryEntry

    slug = f"engram-bench-maintenance-{entries}"
    Account.objects.filter(slug=slug).delete()
    account = core_services.account_create(
        name=f"Engram maintenance benchmark {entries}", slug=slug
    )
    context = MemoryContext.objects.create(account=account, name="bench-maintenance")
    model_id = get_embedding_provider().model_id
    dims = settings.EMBEDDING_DIMENSIONS
    rng = np.random.default_rng(seed)
    rows: list[np.ndarray] = []
    texts: list[str] = []
    groups = 0
    target = int(entries * share)
    while len(rows) < target:
        size = int(rng.integers(2, 6))
        centre = rng.standard_normal(dims)
        centre /= np.linalg.norm(centre)
        for member in range(size):
            noise = rng.standard_normal(dims)
            noise /= np.linalg.norm(noise)
            vector = centre + 0.33 * noise
            rows.append(vector / np.linalg.norm(vector))
            texts.append(f"Fact {groups}, phrased the {member + 1}th way.")
        groups += 1
    while len(rows) < entries:
        vector = rng.standard_normal(dims)
        rows.append(vector / np.linalg.norm(vector))
        texts.append(f"Unrelated fact {len(rows)}.")
    order = rng.permutation(len(rows))[:entries]
    batch: list[MemoryEntry] = []
    for i in order:
        batch.append(
            MemoryEntry(
                account=account,
                context=context,
                content=texts[i],
                tags=[f"t{i % 7}"],
                embedding=rows[i].astype(np.float32),
                embedding_model=model_id,
            )
        )
        if len(batch) == 2000:
            MemoryEntry.objects.bulk_create(batch)
            batch = []
    if batch:
        MemoryEntry.objects.bulk_create(batch)
    # The corpus statistics an archive decrements (the entries have no postings: the run never
    # searches them).
    MemoryContext.objects.filter(pk=context.pk).update(entry_count=entries)
    return account.pk, context.pk, groups


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--duplicate-share", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--real", action="store_true", help="also run for real after the dry run")
    args = parser.parse_args()
    with django_session():
        report = run(args)
    print(json.dumps(report, indent=2))


def run(args: argparse.Namespace) -> dict[str, Any]:
    import os

    from memory.maintenance.services import cluster_maintenance

    started = time.perf_counter()
    account_id, context_id, groups = build(args.entries, args.duplicate_share, args.seed)
    result: dict[str, Any] = {
        "entries": args.entries,
        "near_duplicate_groups": groups,
        "cpus": os.cpu_count(),
        "build_s": round(time.perf_counter() - started, 1),
        "rss_before_run_mb": round(rss_mb(), 1),
    }
    runs = [("dry", True), ("real", False)] if args.real else [("dry", True)]
    for name, dry_run in runs:
        started = time.perf_counter()
        report = cluster_maintenance.maintenance_run(
            account_id=account_id, trigger="command", dry_run=dry_run, context_ids=[context_id]
        )
        result[name] = {
            "wall_s": round(time.perf_counter() - started, 1),
            "peak_rss_mb": round(rss_mb(), 1),
            "reduction": report.contexts[0].get("reduction"),
            "clusters": report.cluster_count,
            "kept": report.kept_count,
            "replaced": report.replaced_count,
            "skipped": report.skipped_count,
            "noise": report.contexts[0].get("noise"),
            "timings_ms": report.timings_ms,
        }
        print(json.dumps({name: result[name]}), file=sys.stderr, flush=True)
    return result


if __name__ == "__main__":
    main()
