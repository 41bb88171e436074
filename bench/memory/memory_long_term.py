"""Long-term memory hybrid search latency at 100k entries.

Entries: the sentences of BEIR SciFact abstracts (read in place from --dataset, see
docs/rag.md; the default is the developers' copy beside the project), one thread per abstract,
a sentence per position, with a date; repeated passes over the corpus (each pass its own threads)
reach --entries. They are written through ``memory.long_term.services.entries_write`` in batches
of 500, so the BM25 postings, the neighbour windows, the statistics and the HNSW index are exactly
what the services build. Only the embeddings are synthetic: the local model embeds about 25 texts
a second here (more than an hour for 100k windows), so during the build the services get a
stand-in provider (same model id and dimensions) whose vector of a text is the normalised sum of
fixed random vectors of its words, and the measured queries pass the stand-in's vector of the
question as ``query_vector``. The local model's query embedding time is measured separately.

    uv run python bench/memory/memory_long_term.py [--dataset ~/beir/scifact] [--entries 100000]

Prints one JSON object; docs/benchmarks.md records the figures. The context is reused by later
runs (account ``engram-bench``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, django_session, settle_tables

BATCH = 500
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")
_WORD = re.compile(r"\w+")

# The tables a long-term search reads (with their indexes, the HNSW index among them).
SEARCH_TABLES = ("memory_memoryentry", "memory_memoryentryposting", "memory_memoryentryterm")


class WordHashEmbeddings:
    """A fast, deterministic stand-in for the embedding model: texts sharing words get similar
    vectors, so the HNSW graph has the neighbourhood structure of real text, not uniform noise."""

    def __init__(self, model_id: str, dimensions: int) -> None:
        self.model_id = model_id
        self.dimensions = dimensions
        self._words: dict[str, np.ndarray] = {}

    def _word(self, word: str) -> np.ndarray:
        vector = self._words.get(word)
        if vector is None:
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            vector = np.random.default_rng(seed).standard_normal(self.dimensions, np.float32)
            self._words[word] = vector
        return vector

    def embed_query(self, text: str) -> np.ndarray:
        words = _WORD.findall(text.lower()) or ["empty"]
        vector = np.sum([self._word(w) for w in words], axis=0)
        return (vector / (np.linalg.norm(vector) or 1.0)).astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), np.float32)
        return np.stack([self.embed_query(text) for text in texts])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured queries run first")
    parser.add_argument(
        "--context", default="bench-ltm-100000", help="the context to build (or reuse) and search"
    )
    parser.add_argument("--no-build", action="store_true", help="search the context as it is")
    parser.add_argument(
        "--modes", default="hybrid", help="comma-separated search modes to measure (prf, ...)"
    )
    args = parser.parse_args()
    with django_session():
        report = run(args)
    print(json.dumps(report, indent=2))


def bench_actor(name: str = "bench-memory") -> Any:
    """The benchmark agent ``name`` of the ``engram-bench`` account (created once), as an actor."""
    from core import services as core_services
    from core.actors import actor_for_account, actor_for_agent
    from core.models import Account, Agent

    account = Account.objects.filter(slug="engram-bench").first() or core_services.account_create(
        name="Engram benchmarks", slug="engram-bench"
    )
    agent = Agent.objects.filter(account=account, name=name).first() or core_services.agent_create(
        actor=actor_for_account(account.pk), account=account, name=name
    )
    return actor_for_agent(agent)


def bench_setup(dataset_dir: str, context_name: str) -> tuple[Any, Any, WordHashEmbeddings, Any]:
    """The SciFact train split, the benchmark actor, the embedding stand-in and the actor's
    long-term context ``context_name`` (created once)."""
    from pathlib import Path

    from core.embeddings import get_embedding_provider
    from memory.long_term import services as ltm
    from memory.models import MemoryContext
    from rag.evaluation import load_beir

    dataset = load_beir(Path(dataset_dir), "train")
    actor = bench_actor()
    provider = get_embedding_provider()
    stand_in = WordHashEmbeddings(provider.model_id, provider.dimensions)
    context = MemoryContext.objects.filter(
        account_id=actor.agent.account_id, name=context_name
    ).first() or ltm.context_create(actor=actor, name=context_name)
    return dataset, actor, stand_in, context


def build_entries(
    *, actor: Any, context: Any, dataset: Any, entries: int, stand_in: WordHashEmbeddings
) -> float:
    """Write SciFact's sentences into ``context`` through the services until it holds
    ``entries`` (an earlier run's entries are kept); returns the seconds spent writing."""
    from unittest import mock

    from tqdm import tqdm

    import core.embeddings
    from memory.long_term import services as ltm

    sentences = [
        (doc_id, [s for s in _SENTENCE_END.split(f"{doc.title}. {doc.text}") if s.strip()])
        for doc_id, doc in dataset.corpus.items()
    ]
    start_day = datetime(2023, 1, 1, 9, tzinfo=UTC)
    build_seconds = 0.0
    written = context.entry_count
    if written >= entries:
        return build_seconds
    with (
        mock.patch.object(core.embeddings._cached, "get", return_value=stand_in),
        tqdm(total=entries, desc="long-term entries") as progress,
    ):
        progress.update(written)
        pending: list[ltm.EntryInput] = []
        done = 0
        for number in range(10_000):
            for index, (doc_id, parts) in enumerate(sentences):
                for position, text in enumerate(parts):
                    done += 1
                    if done <= written:
                        continue  # written by an earlier run
                    pending.append(
                        ltm.EntryInput(
                            content=text,
                            thread=f"p{number}:{doc_id}",
                            position=position,
                            occurred_at=start_day + timedelta(days=index % 700, hours=number),
                        )
                    )
                    if len(pending) == BATCH or written + len(pending) >= entries:
                        started = time.perf_counter()
                        ltm.entries_write(
                            actor=actor, context=context, items=pending, graph_link=False
                        )
                        build_seconds += time.perf_counter() - started
                        written += len(pending)
                        progress.update(len(pending))
                        pending = []
                    if written >= entries:
                        return build_seconds
    return build_seconds


def run(args: argparse.Namespace) -> dict[str, Any]:
    from core.embeddings import get_embedding_provider
    from memory.long_term.selectors import LongTermFilters, long_term_search
    from rag.evaluation import percentiles

    dataset, actor, stand_in, context = bench_setup(args.dataset, args.context)
    provider = get_embedding_provider()

    # 1. The entries, through the services (only the embeddings stand in).
    build_seconds = 0.0
    if not args.no_build:
        build_seconds = build_entries(
            actor=actor, context=context, dataset=dataset, entries=args.entries, stand_in=stand_in
        )
    context.refresh_from_db()

    # 2. Latency, the query vector given; the model's query embedding timed on its own.
    queries = list(dataset.queries.values())
    measured = queries[: args.queries]
    warmup = queries[args.queries : args.queries + args.warmup]
    settle_tables(SEARCH_TABLES)
    filters = LongTermFilters(context_ids=(context.pk,))

    stages: dict[str, list[float]] = {}

    def search(text: str, mode: str = "hybrid") -> float:
        vector = stand_in.embed_query(text)
        started = time.perf_counter()
        _, stage_ms = long_term_search(
            actor=actor, query=text, top_k=10, filters=filters, query_vector=vector, mode=mode
        )
        for stage, ms in stage_ms.items():
            stages.setdefault(stage, []).append(ms)
        return (time.perf_counter() - started) * 1000

    for text in warmup:
        search(text)
    stages.clear()
    totals = [search(text) for text in measured]
    hybrid_stages = dict(stages)
    other_modes: dict[str, Any] = {}
    for mode in [m for m in args.modes.split(",") if m and m != "hybrid"]:
        for text in warmup:
            search(text, mode)
        stages.clear()
        times = [search(text, mode) for text in measured]
        other_modes[mode] = {"search_ms_query_vector_given": times, "stages_ms": dict(stages)}
    stages.clear()
    stages.update(hybrid_stages)
    embeds = []
    provider.embed_query("warm up")
    for text in measured:
        started = time.perf_counter()
        provider.embed_query(text)
        embeds.append((time.perf_counter() - started) * 1000)

    def rounded(values: list[float]) -> dict[str, float]:
        return {k: round(v, 2) for k, v in percentiles(values, (50, 95, 99)).items()}

    return {
        "entries": context.entry_count,
        "build_seconds_this_run": round(build_seconds, 1),
        "queries": len(measured),
        "hybrid_search_ms_query_vector_given": rounded(totals),
        "query_embedding_ms_local_model": rounded(embeds),
        "stages_ms": {stage: rounded(values) for stage, values in stages.items()},
        "other_modes": {
            mode: {
                "search_ms_query_vector_given": rounded(found["search_ms_query_vector_given"]),
                "stages_ms": {k: rounded(v) for k, v in found["stages_ms"].items()},
            }
            for mode, found in other_modes.items()
        },
        "embeddings": "word-hash stand-in (see the module docstring)",
        "cpu": f"{__import__('os').cpu_count()} cores",
    }


if __name__ == "__main__":
    main()
