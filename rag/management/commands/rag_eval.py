"""Evaluate retrieval on a BEIR-layout dataset through the real ingestion pipeline."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from core import services as core_services
from core.actors import Actor, actor_for_account, actor_for_agent
from core.models import Account, Agent
from rag import services
from rag.agentic.services import DEFAULT_MAX_ROUNDS, agentic_query
from rag.evaluation import evaluate, load_beir, percentiles
from rag.graph.chunks import chunk_search_staged
from rag.graph.services.build import documents_graph_catch_up
from rag.graph.services.communities import communities_compute
from rag.models import Document, GraphCommunity, KnowledgeBase
from rag.search import DEFAULT_FUSION, FUSIONS, SEARCH_MODES, SearchFilters, SearchHit

EVAL_ACCOUNT = "engram-eval"
# Modes beyond the engine's: agentic RAG, scored by the order of its sources.
AGENTIC = "agentic"
BATCH_DOCUMENTS = 64


class Command(BaseCommand):
    help = (
        "Load a BEIR dataset (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv) into a knowledge base "
        "through the ingestion pipeline, run every query in each mode, and print nDCG@10, "
        "Recall@10, Recall@100, MRR@10 and latency p50/p95. Re-runs reuse a loaded corpus."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True, type=Path)
        parser.add_argument("--split", required=True)
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument(
            "--modes",
            default=",".join((*SEARCH_MODES, AGENTIC)),
            help="comma-separated; hybrid+graph is a hybrid search with the graph stage",
        )
        parser.add_argument(
            "--max-rounds", type=int, default=DEFAULT_MAX_ROUNDS, help="agentic rounds at most"
        )
        parser.add_argument("--fusion", default=DEFAULT_FUSION, choices=FUSIONS)
        parser.add_argument("--weights", default="", help='e.g. "vector=0.4,keyword=0.6"')
        parser.add_argument("--chunk-size", type=int, default=256)
        parser.add_argument("--chunk-overlap", type=int, default=32)
        parser.add_argument("--limit-queries", type=int, default=0)
        parser.add_argument("--candidates", type=int, default=200)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            dataset = load_beir(options["dataset"], options["split"])
        except (FileNotFoundError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        actor = _eval_actor()
        chunking = f"{options['chunk_size']}/{options['chunk_overlap']}"
        name = f"beir:{options['dataset'].resolve().name}:{chunking}"
        kb, load_seconds = self._load(actor, name, dataset, options)
        weights = dict(
            (k, float(v))
            for k, v in (pair.split("=") for pair in options["weights"].split(",") if pair)
        )
        queries = list(dataset.queries.items())
        if options["limit_queries"]:
            queries = queries[: options["limit_queries"]]
        qrels = {qid: dataset.qrels[qid] for qid, _ in queries}
        doc_ids = dict(Document.objects.filter(knowledge_base=kb).values_list("id", "source_path"))
        report: dict[str, Any] = {
            "dataset": str(options["dataset"]),
            "split": options["split"],
            "documents": len(doc_ids),
            "chunks": kb.chunk_count,
            "queries": len(queries),
            "load_seconds": round(load_seconds, 1),
            "modes": {},
        }
        modes = [m for m in options["modes"].split(",") if m]
        if any("graph" in m for m in modes):
            self._graph(kb, quiet=options["json"])
        for mode in modes:
            run: dict[str, dict[str, float]] = {}
            latencies: list[float] = []
            for qid, text in tqdm(queries, desc=mode, disable=options["json"], leave=False):
                started = time.perf_counter()
                hits = ranked_hits(
                    actor,
                    knowledge_base_id=kb.pk,
                    mode=mode,
                    query=text,
                    fusion=options["fusion"],
                    weights=weights,
                    candidates=options["candidates"],
                    max_rounds=options["max_rounds"],
                )
                latencies.append((time.perf_counter() - started) * 1000)
                scores: dict[str, float] = {}
                for rank, hit in enumerate(hits, start=1):
                    doc = doc_ids.get(hit.document_id)
                    # A document ranks where its best chunk does.
                    if doc is not None and doc not in scores:
                        scores[doc] = 1.0 / rank
                run[qid] = scores
            metrics = evaluate(run, qrels)
            report["modes"][mode] = {
                **{k: round(v, 4) for k, v in metrics.items()},
                "latency_ms": {k: round(v, 2) for k, v in percentiles(latencies, (50, 95)).items()},
            }
        if options["json"]:
            self.stdout.write(json.dumps(report))
            return
        self.stdout.write(
            f"{report['documents']} documents, {report['chunks']} chunks, "
            f"{report['queries']} queries"
        )
        self.stdout.write(
            f"{'mode':8} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7} {'MRR@10':>7} "
            f"{'p50 ms':>8} {'p95 ms':>8}"
        )
        for mode, m in report["modes"].items():
            self.stdout.write(
                f"{mode:8} {m['ndcg@10']:8.4f} {m['recall@10']:7.4f} {m['recall@100']:7.4f} "
                f"{m['mrr@10']:7.4f} {m['latency_ms']['p50']:8.2f} {m['latency_ms']['p95']:8.2f}"
            )

    def _graph(self, kb: KnowledgeBase, *, quiet: bool) -> None:
        """The knowledge base's graph and communities: the documents the graph does not hold
        yet are linked (all of them after a load: no worker runs their graph task here; only
        the missing ones after a load that was cut short), then communities are computed."""
        started = time.perf_counter()
        taken, outcome = documents_graph_catch_up(knowledge_base_id=kb.pk)
        if not taken and GraphCommunity.objects.filter(account_id=kb.account_id).exists():
            return
        run = communities_compute(account_id=kb.account_id)
        if not quiet:
            self.stdout.write(
                f"graph: {taken} documents linked, {outcome.mentions} mentions, "
                f"{outcome.nodes_created} nodes, {sum(run.communities.values())} communities "
                f"in {time.perf_counter() - started:.0f} s"
            )

    def _load(
        self, actor: Actor, name: str, dataset: Any, options: dict[str, Any]
    ) -> tuple[KnowledgeBase, float]:
        kb = KnowledgeBase.objects.filter(account_id=actor.account_id, name=name).first()
        if kb is None:
            kb = services.knowledge_base_create(
                actor=actor,
                name=name,
                chunk_size=options["chunk_size"],
                chunk_overlap=options["chunk_overlap"],
            )
        # The evaluation knowledge base belongs to this command alone: a claim left by an
        # interrupted earlier run can be taken back at once instead of waiting for it to go stale.
        Document.objects.filter(knowledge_base=kb, status=Document.Status.PROCESSING).update(
            status=Document.Status.PENDING, processing_task_id=""
        )
        loaded = set(
            Document.objects.filter(knowledge_base=kb).values_list("source_path", flat=True)
        )
        started = time.perf_counter()
        missing = [(doc_id, doc) for doc_id, doc in dataset.corpus.items() if doc_id not in loaded]
        if missing and not options["json"]:
            self.stdout.write(f"loading {len(missing)} documents into {name}")
        progress = tqdm(total=len(missing), desc="ingest", disable=options["json"] or not missing)
        for start in range(0, len(missing), BATCH_DOCUMENTS):
            documents = services.documents_create_batch(
                actor=actor,
                kb=kb,
                uploads=[
                    {
                        "data": (f"{doc.title}\n\n{doc.text}" if doc.title else doc.text).encode(),
                        "content_type": "text/plain",
                        "title": doc.title[:500],
                        "source": f"{name}/{doc_id}",
                        "metadata": services.DocumentMetadata(source_path=doc_id),
                    }
                    for doc_id, doc in missing[start : start + BATCH_DOCUMENTS]
                ],
                enqueue=False,
            )
            ids = [document.pk for document in documents]
            services.documents_process_batch(document_ids=ids)
            progress.update(len(ids))
        progress.close()
        pending = Document.objects.filter(knowledge_base=kb).exclude(status=Document.Status.INDEXED)
        if pending.exists():
            services.documents_process_batch(
                document_ids=list(pending.values_list("id", flat=True))
            )
        kb.refresh_from_db()
        return kb, time.perf_counter() - started


def ranked_hits(
    actor: Actor,
    *,
    knowledge_base_id: int,
    mode: str,
    query: str,
    top_k: int = 100,
    fusion: str = DEFAULT_FUSION,
    weights: dict[str, float] | None = None,
    candidates: int | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
) -> list[SearchHit]:
    """One query's ranked chunks of a knowledge base in a mode, best first: a search's hits
    (``hybrid+graph``: a hybrid search with the graph stage), or agentic RAG's sources. This
    command and the benchmarks under bench/ score modes through it."""
    if mode == AGENTIC:
        answer = agentic_query(
            actor=actor,
            query=query,
            max_rounds=max_rounds,
            knowledge_base_ids=[knowledge_base_id],
            top_k=top_k,
        )
        return [source.hit for source in answer.sources]
    return chunk_search_staged(
        actor=actor,
        query=query,
        mode=mode.split("+")[0],
        stages=("vector", "keyword", "graph") if mode == "hybrid+graph" else (),
        top_k=top_k,
        fusion=fusion,
        weights=weights or None,
        filters=SearchFilters(knowledge_base_ids=(knowledge_base_id,)),
        candidates=candidates,
    ).hits


def _eval_actor() -> Actor:
    account = Account.objects.filter(slug=EVAL_ACCOUNT).first() or core_services.account_create(
        name="Engram evaluation", slug=EVAL_ACCOUNT
    )
    agent = Agent.objects.filter(
        account=account, name="evaluator"
    ).first() or core_services.agent_create(
        actor=actor_for_account(account.pk),
        account=account,
        name="evaluator",
        description="Runs rag_eval.",
    )
    return actor_for_agent(agent)
