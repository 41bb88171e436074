"""Multi-hop bridge questions over synthetic documents (bench/rag/multihop_data.py), asked through
the real pipeline in each mode and scored by the documents the top results hold.

Each world of the dataset is loaded once into an account of its own with one knowledge base
(``multihop-<fingerprint>-<world seed>``, the fingerprint a hash of the documents, so a changed
generator loads afresh), its documents ingested, linked to the graph and the account's
communities computed; later runs only search. Every question is then asked through
``rag_eval.ranked_hits`` (the modes rag_eval scores: hybrid, graph, hybrid+graph, agentic...).
A diagnostic mode ``stages:graph`` (or ``stages:graph+vector``...) ranks by a hybrid search of
those stages alone: the graph stage's own ranking.

Figures, per mode and per hop count (2, 3, all):
- ``top5_final``: the share of questions whose final evidence document (the one that shares no
  content word with the question: only a hop finds it) is in the top 5 documents; primary.
- ``recall@5`` / ``recall@10``: the share of a question's evidence documents (one a hop) in the
  top 5 / 10.
- ``mrr_final``: the final document's reciprocal rank in the top 20 (0 beyond).
- ``folds``: the same per fold (``--folds K``; by world seed, or by the final question template
  with ``--fold-by template``, or by the last hop's relation with ``--fold-by relation``);
  ``--fold k`` adds ``train`` (every other fold) and ``test`` (fold k) so a constant chosen on
  train is reported on test.
- ``final_mention``: top5_final split by how the final document names the bridge entity (full
  name, surname, title and surname, pronoun); ``final_relation``: by the last hop's relation.
- ``latency_ms``: p50 / p95 of the whole call, the query embeddings cached beforehand (the
  embedding excluded; agentic's own reformulations are embedded inside the call).

    uv run python bench/rag/multihop.py [--seed 0] [--worlds 6] [--questions 24] \\
        [--modes hybrid,graph,agentic] [--folds 3 --fold 0 --fold-by world] \\
        [--variant "rag.spaces.chunks.graph_weight=0.3" ...] [--per-question]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session
from bench.rag import multihop_data as data
from bench.rag.recall_sweep import _cache_query_embeddings, variant_set

ACCOUNT = "multihop"
TOP_K = 20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worlds", type=int, default=6)
    parser.add_argument("--persons", type=int, default=16, help="people a world (sets its size)")
    parser.add_argument("--questions", type=int, default=24, help="questions a world at most")
    parser.add_argument("--modes", default="hybrid,graph,agentic")
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--fold", type=int, default=None, help="report train/test for fold k")
    parser.add_argument("--fold-by", choices=("world", "template", "relation"), default="world")
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument("--per-question", action="store_true", help="each question's ranks too")
    args = parser.parse_args()
    worlds = data.dataset(args.seed, args.worlds, persons=args.persons, questions=args.questions)
    with django_session():
        started = time.perf_counter()
        loaded = _load(worlds)
        load_seconds = time.perf_counter() - started
        _cache_query_embeddings()
        _warm(worlds)
        for variant in args.variant or [""]:
            with variant_set([a for a in variant.split(";") if a]):
                report: dict[str, Any] = {
                    "set": variant,
                    "seed": args.seed,
                    "worlds": len(worlds),
                    "documents": sum(len(w.documents) for w in worlds),
                    "questions": sum(len(w.questions) for w in worlds),
                    "load_seconds": round(load_seconds, 1),
                    "folds": args.folds,
                    "fold_by": args.fold_by,
                    "modes": {},
                }
                for mode in args.modes.split(","):
                    rows = _ask(worlds, loaded, mode)
                    report["modes"][mode] = _figures(rows, args)
                    if args.per_question:
                        report["modes"][mode]["per_question"] = [
                            {
                                "id": r["id"],
                                "text": r["question"].text,
                                "chain": r["question"].chain,
                                "final_doc": r["question"].final_doc,
                                "final_rank": r["final_rank"],
                                "evidence_ranks": r["evidence_ranks"],
                                "top5": r["top5"],
                            }
                            for r in rows
                        ]
            print(json.dumps(report), flush=True)


def _load(worlds: list[data.World]) -> dict[int, tuple[Any, int, dict[int, str]]]:
    """Each world's (actor, knowledge base id, document id by database document id)."""
    from core import services as core_services
    from core.actors import actor_for_account, actor_for_agent
    from core.models import Account, Agent
    from rag import services
    from rag.graph.services.build import documents_graph_catch_up
    from rag.graph.services.communities import communities_compute
    from rag.models import Document, GraphCommunity, KnowledgeBase

    fingerprint = data.fingerprint(worlds)
    out = {}
    for w in worlds:
        slug = f"{ACCOUNT}-{fingerprint}-{w.seed}"
        account = Account.objects.filter(slug=slug).first() or core_services.account_create(
            name=f"multi-hop world {w.seed}", slug=slug
        )
        agent = Agent.objects.filter(account=account, name="reader").first()
        if agent is None:
            agent = core_services.agent_create(
                actor=actor_for_account(account.pk), account=account, name="reader",
                description="bench/rag/multihop.py",
            )  # fmt: skip
        actor = actor_for_agent(agent)
        name = f"multihop:{w.seed}"
        kb = KnowledgeBase.objects.filter(account=account, name=name).first()
        if kb is None:
            kb = services.knowledge_base_create(
                actor=actor, name=name, chunk_size=256, chunk_overlap=32,
                chunking_strategy=KnowledgeBase.Chunking.RECURSIVE,
            )  # fmt: skip
        loaded = set(
            Document.objects.filter(knowledge_base=kb).values_list("source_path", flat=True)
        )
        missing = [d for d in w.documents if d.id not in loaded]
        if missing:
            documents = services.documents_create_batch(
                actor=actor,
                kb=kb,
                uploads=[
                    {
                        "data": d.text.encode(),
                        "content_type": "text/plain",
                        "title": d.id,
                        "source": f"{name}/{d.id}",
                        "metadata": services.DocumentMetadata(source_path=d.id),
                    }
                    for d in missing
                ],
                enqueue=False,
            )
            services.documents_process_batch(document_ids=[d.pk for d in documents])
        linked = documents_graph_catch_up(knowledge_base_id=kb.pk)[0]
        if linked or not GraphCommunity.objects.filter(account=account).exists():
            communities_compute(account_id=account.pk)
        doc_of = dict(Document.objects.filter(knowledge_base=kb).values_list("id", "source_path"))
        out[w.seed] = (actor, kb.pk, doc_of)
    return out


def _warm(worlds: list[data.World]) -> None:
    """Embed every question once, before anything is timed."""
    from core.embeddings import get_embedding_provider

    provider = get_embedding_provider()
    for w in worlds:
        for q in w.questions:
            provider.embed_query(q.text)


def _ask(
    worlds: list[data.World], loaded: dict[int, tuple[Any, int, dict[int, str]]], mode: str
) -> list[dict[str, Any]]:
    from rag.graph.chunks import chunk_search_staged
    from rag.management.commands.rag_eval import ranked_hits
    from rag.search import SearchFilters

    rows = []
    for w in worlds:
        actor, kb_id, doc_of = loaded[w.seed]
        for q in w.questions:
            started = time.perf_counter()
            if mode.startswith("stages:"):  # a diagnostic: a hybrid search of these stages only
                hits = chunk_search_staged(
                    actor=actor, query=q.text, mode="hybrid", top_k=TOP_K,
                    stages=tuple(mode.removeprefix("stages:").split("+")),
                    filters=SearchFilters(knowledge_base_ids=(kb_id,)),
                ).hits  # fmt: skip
            else:
                hits = ranked_hits(
                    actor, knowledge_base_id=kb_id, mode=mode, query=q.text, top_k=TOP_K
                )
            elapsed = (time.perf_counter() - started) * 1000
            ranked: list[str] = []
            for hit in hits:  # a document ranks where its best chunk does
                doc = doc_of.get(hit.document_id)
                if doc is not None and doc not in ranked:
                    ranked.append(doc)
            rank = {doc: i + 1 for i, doc in enumerate(ranked)}
            rows.append(
                {
                    "id": q.id,
                    "question": q,
                    "hops": q.hops,
                    "final_rank": rank.get(q.final_doc),
                    "evidence_ranks": [rank.get(d) for d in q.evidence],
                    "top5": ranked[:5],
                    "ms": elapsed,
                }
            )
    return rows


def _fold(question: data.Question, args: argparse.Namespace) -> int:
    if args.fold_by == "template":
        return data.template_fold(question, args.folds)
    if args.fold_by == "relation":
        return data.relation_fold(question, args.folds)
    return data.question_fold(question, args.folds)


def _block(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"n": 0}

    def mean(values: list[float]) -> float:
        return round(math.fsum(values) / len(values), 4)

    def within(r: dict[str, Any], k: int) -> float:
        ranks = r["evidence_ranks"]
        return sum(1 for x in ranks if x is not None and x <= k) / len(ranks)

    return {
        "n": len(rows),
        "top5_final": mean([1.0 if (r["final_rank"] or 99) <= 5 else 0.0 for r in rows]),
        "recall@5": mean([within(r, 5) for r in rows]),
        "recall@10": mean([within(r, 10) for r in rows]),
        "mrr_final": mean([1.0 / r["final_rank"] if r["final_rank"] else 0.0 for r in rows]),
    }


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1)], 2)


def _figures(rows: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    def by_hops(selected: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "all": _block(selected),
            "2": _block([r for r in selected if r["hops"] == 2]),
            "3": _block([r for r in selected if r["hops"] == 3]),
        }

    out: dict[str, Any] = by_hops(rows)
    out["folds"] = {
        str(k): by_hops([r for r in rows if _fold(r["question"], args) == k])
        for k in range(args.folds)
    }
    if args.fold is not None:
        out["train"] = by_hops([r for r in rows if _fold(r["question"], args) != args.fold])
        out["test"] = by_hops([r for r in rows if _fold(r["question"], args) == args.fold])
    mentions: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        mentions.setdefault(r["question"].final_mention, []).append(r)
    out["final_mention"] = {
        m: {"n": len(rs), "top5_final": _block(rs)["top5_final"]}
        for m, rs in sorted(mentions.items())
    }
    relations: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        relations.setdefault(r["question"].chain[-1], []).append(r)
    out["final_relation"] = {
        name: {"n": len(rs), "top5_final": _block(rs)["top5_final"]}
        for name, rs in sorted(relations.items())
    }
    times = [r["ms"] for r in rows]
    out["latency_ms"] = {"p50": _percentile(times, 50), "p95": _percentile(times, 95)}
    return out


if __name__ == "__main__":
    main()
