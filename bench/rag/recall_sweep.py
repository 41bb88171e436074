"""Compare retrieval variants on the development data only: LoCoMo dev (per conversation, the
two leave-one-conversation-out folds) and SciFact train.

The LoCoMo conversations are written once into long-term contexts of a kept account
(``recall-sweep``) exactly as ``memory_eval`` writes them, and the SciFact knowledge base is the
one ``manage.py rag_eval --dataset DIR --split train`` loads; later runs only search, so a variant
costs seconds, not the tens of minutes of embedding. A variant is a mode plus tunables set for
the run by their names in the tuning registry (docs/tuning.md; ``--set rag.feedback.terms=20``,
``--set rag.spaces.chunks.graph_weight=0.1``) through ``core.tuning.override``: the engine's own
code runs.

    uv run python bench/rag/recall_sweep.py --modes hybrid,prf [--set NAME=VALUE ...]
        [--skip-scifact] [--skip-locomo] [--rebuild-locomo] [--paired hybrid]

``--paired MODE`` compares every other mode with MODE claim by claim on SciFact: is a
difference more than noise?
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session

SWEEP_ACCOUNT = "recall-sweep"
FOLDS = 5


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--locomo", default="/work/shared/data/locomo/locomo-dev.json")
    parser.add_argument("--scifact", default="/work/shared/data/scifact")
    parser.add_argument("--modes", default="hybrid")
    parser.add_argument(
        "--set", action="append", default=[], help="NAME=JSON value (a tunable: docs/tuning.md)"
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="one variant: assignments NAME=JSON separated by ';' (several: each run)",
    )
    parser.add_argument("--skip-scifact", action="store_true")
    parser.add_argument("--skip-locomo", action="store_true")
    parser.add_argument("--rebuild-locomo", action="store_true")
    parser.add_argument("--limit-queries", type=int, default=0)
    parser.add_argument(
        "--paired",
        default="",
        help="SciFact: each other mode against this one, claim by claim (bootstrap, sign test)",
    )
    parser.add_argument(
        "--loaded-only",
        action="store_true",
        help="SciFact: only the queries whose judged documents are all loaded (a partial load)",
    )
    args = parser.parse_args()
    with django_session():
        _cache_query_embeddings()
        for variant in args.variant or [""]:
            assignments = [*args.set, *(a for a in variant.split(";") if a)]
            with variant_set(assignments):
                report: dict[str, Any] = {"set": assignments, "modes": {}}
                for mode in args.modes.split(","):
                    row: dict[str, Any] = {}
                    if not args.skip_locomo:
                        row["locomo"] = locomo(Path(args.locomo), mode, rebuild=args.rebuild_locomo)
                        args.rebuild_locomo = False
                    if not args.skip_scifact:
                        row["scifact"] = scifact(
                            Path(args.scifact), mode, args.limit_queries, args.loaded_only
                        )
                    report["modes"][mode] = row
                per_query = {
                    mode: row["scifact"].pop("per_query")
                    for mode, row in report["modes"].items()
                    if "scifact" in row
                }
                if args.paired in per_query:
                    report["paired"] = {
                        mode: paired(scores, per_query[args.paired])
                        for mode, scores in per_query.items()
                        if mode != args.paired
                    }
                print(json.dumps(report), flush=True)


@contextmanager
def variant_set(assignments: list[str]) -> Iterator[None]:
    """Set each ``NAME=JSON`` tunable (``rag.fusion.rrf_k=30``,
    ``memory.spaces.entries.late_weight=0``: docs/tuning.md) for the block through the tuning
    registry (``core.tuning.override``), and put the values back after it. An unknown name or a
    value of the wrong type stops the run before anything is measured."""
    from core import tuning

    values: dict[str, Any] = {}
    for assignment in assignments:
        name, _, value = assignment.partition("=")
        if not _:
            raise SystemExit(f"--set {assignment!r}: expected NAME=VALUE")
        values[name] = json.loads(value)
    try:
        with tuning.override(values):
            yield
    except tuning.TuningError as error:
        raise SystemExit(f"--set: {error}") from error


def _cache_query_embeddings() -> None:
    """Embed each query once per run, whatever the variants (the embedding is not varied)."""
    from functools import lru_cache

    from core.embeddings import get_embedding_provider

    provider = get_embedding_provider()
    provider.embed_query = lru_cache(maxsize=None)(provider.embed_query)  # type: ignore[method-assign]


def _contexts(
    path: Path, rebuild: bool, graph: bool = False
) -> dict[str, tuple[Any, Any, int, dict[int, str]]]:
    """Each conversation's (actor, context id, dia_id by entry id), written once; with ``graph``
    each context's turns linked to the knowledge graph too (as ``memory_eval --mode graph``)."""
    from core import services as core_services
    from core.actors import actor_for_account, actor_for_agent
    from core.models import Account, Agent
    from memory.context.evaluation.locomo import load_locomo
    from memory.context.evaluation.retrieval import turns_write
    from memory.long_term import services as ltm
    from memory.models import MemoryContext, MemoryEntry

    account = Account.objects.filter(slug=SWEEP_ACCOUNT).first()
    if account is not None and rebuild:
        core_services.account_delete(actor=actor_for_account(account.pk), account=account)
        account = None
    if account is None:
        account = core_services.account_create(name="recall sweep", slug=SWEEP_ACCOUNT)
    tool = actor_for_account(account.pk)
    agent = Agent.objects.filter(account=account, name="locomo").first()
    if agent is None:
        agent = core_services.agent_create(
            actor=tool, account=account, name="locomo", description="recall sweep"
        )
    actor = actor_for_agent(agent)
    found = {}
    for conversation in load_locomo(path):
        name = f"locomo:{conversation.sample_id}"
        context = MemoryContext.objects.filter(account=account, name=name).first()
        if context is None:
            context = ltm.context_create(actor=actor, name=name)
            dia_of = turns_write(actor, context, conversation)
        else:
            dia_of = {
                pk: meta["dia_id"]
                for pk, meta in MemoryEntry.objects.filter(context=context).values_list(
                    "pk", "metadata"
                )
            }
        if graph:
            from memory.long_term.services.graph_links import context_graph_index

            context_graph_index(actor=actor, context=context)  # idempotent: mentions replaced
        found[conversation.sample_id] = (conversation, actor, context.pk, dia_of)
    return found


def asked(
    contexts: dict[str, tuple[Any, Any, int, dict[int, str]]],
    mode: str,
    top_k: int,
    *,
    adversarial: bool = False,
) -> Iterator[tuple[str, Any, list[str], dict[str, float]]]:
    """Each scored question of the conversations (categories 1-4, with evidence; category 5,
    adversarial, too when asked) asked through long-term search: (sample id, question, dia_ids
    found best first, stage times)."""
    from memory.long_term.selectors import LongTermFilters, long_term_search

    for sample_id, (conversation, actor, context_id, dia_of) in contexts.items():
        for question in conversation.questions:
            if not question.evidence or (question.category == 5 and not adversarial):
                continue
            hits, stage_ms = long_term_search(
                actor=actor,
                query=question.question,
                top_k=top_k,
                filters=LongTermFilters(context_ids=(context_id,)),
                mode=mode,
            )
            found = [dia_of[h.entry.pk] for h in hits if h.entry.pk in dia_of]
            yield sample_id, question, found, stage_ms


def locomo(path: Path, mode: str, *, rebuild: bool) -> dict[str, Any]:
    from memory.context.evaluation.locomo import CATEGORIES
    from memory.context.evaluation.retrieval import score_question

    out: dict[str, Any] = {}
    all_rows: list[tuple[int, float]] = []
    times: list[float] = []
    per_conversation: dict[str, list[tuple[int, float]]] = {}
    contexts = _contexts(path, rebuild, mode == "graph")
    adversarial: list[tuple[int, float]] = []
    for sample_id, question, found, stage_ms in asked(contexts, mode, 10, adversarial=True):
        recall = score_question(found, question.evidence)["recall@10"]
        if question.category == 5:  # reported apart, outside the 1-4 figures
            adversarial.append((5, recall))
            continue
        times.append(sum(v for k, v in stage_ms.items() if k != "embed"))
        per_conversation.setdefault(sample_id, []).append((question.category, recall))
    for sample_id, rows in per_conversation.items():
        out[sample_id] = _block(rows)
        all_rows.extend(rows)
    out["all"] = _block(all_rows)
    out["categories"] = {
        CATEGORIES[c]: _block([r for r in all_rows if r[0] == c]) for c in (1, 2, 3, 4)
    }
    out["categories"][CATEGORIES[5]] = _block(adversarial)
    times.sort()
    out["search_ms_p50"] = round(times[len(times) // 2], 2)
    return out


def _block(rows: list[tuple[int, float]]) -> float:
    return round(math.fsum(r for _, r in rows) / len(rows), 4) if rows else 0.0


def scifact(path: Path, mode: str, limit: int, loaded_only: bool = False) -> dict[str, Any]:
    from rag.evaluation import evaluate_per_query, load_beir, mean_of_per_query
    from rag.graph.chunks import chunk_search_staged
    from rag.management.commands.rag_eval import AGENTIC, _eval_actor, ranked_hits
    from rag.models import Document, KnowledgeBase
    from rag.search import SearchFilters

    dataset = load_beir(path, "train")
    actor = _eval_actor()
    kb = KnowledgeBase.objects.get(account_id=actor.account_id, name=f"beir:{path.name}:256/32")
    doc_ids = dict(Document.objects.filter(knowledge_base=kb).values_list("id", "source_path"))
    queries = list(dataset.queries.items())
    if loaded_only:
        loaded = set(doc_ids.values())
        queries = [(q, t) for q, t in queries if set(dataset.qrels[q]) <= loaded]
    queries = queries[: limit or None]
    run: dict[str, dict[str, float]] = {}
    times: list[float] = []
    for qid, text in queries:
        if mode == AGENTIC:  # its sources, as rag_eval scores them; the whole query timed
            started = time.perf_counter()
            hits = ranked_hits(actor, knowledge_base_id=kb.pk, mode=mode, query=text)
            times.append((time.perf_counter() - started) * 1000)
        else:
            outcome = chunk_search_staged(
                actor=actor,
                query=text,
                mode=mode,
                top_k=100,
                filters=SearchFilters(knowledge_base_ids=(kb.pk,)),
                candidates=200,
            )
            hits = outcome.hits
            times.append(sum(v for k, v in outcome.stage_ms.items() if k != "embed"))
        scores: dict[str, float] = {}
        for rank, hit in enumerate(hits, start=1):
            doc = doc_ids.get(hit.document_id)
            if doc is not None and doc not in scores:
                scores[doc] = 1.0 / rank
        run[qid] = scores
    per_query = evaluate_per_query(run, {qid: dataset.qrels[qid] for qid, _ in queries})
    metrics = mean_of_per_query(per_query)
    ordered = [per_query[qid]["ndcg@10"] for qid, _ in queries]
    times.sort()
    return {
        "queries": len(queries),
        "documents": len(doc_ids),
        "ndcg@10": round(metrics["ndcg@10"], 4),
        # Five folds by the queries' order (every fifth claim): a variant's gain should hold in
        # each, not only on the whole split.
        "ndcg@10_folds": [
            round(math.fsum(ordered[f::FOLDS]) / len(ordered[f::FOLDS]), 4)
            for f in range(FOLDS)
            if ordered[f::FOLDS]
        ],
        "recall@100": round(metrics["recall@100"], 4),
        "search_ms_p50": round(times[len(times) // 2], 2),
        "per_query": ordered,
    }


def paired(scores: list[float], baseline: list[float], resamples: int = 10_000) -> dict[str, Any]:
    """A mode's per-claim nDCG@10 against a baseline's on the same claims: the mean difference
    with its 95 % bootstrap interval (claims resampled, seed 0), the claims it wins and loses,
    and the two-sided sign test's p-value over the claims that differ."""
    import numpy as np

    diff = np.asarray(scores) - np.asarray(baseline)
    rng = np.random.default_rng(0)
    means = diff[rng.integers(0, len(diff), size=(resamples, len(diff)))].mean(axis=1)
    wins, losses = int((diff > 1e-9).sum()), int((diff < -1e-9).sum())
    n = wins + losses
    tail = math.fsum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n if n else 1.0
    return {
        "mean_difference": round(float(diff.mean()), 4),
        "ci95": [round(float(np.percentile(means, q)), 4) for q in (2.5, 97.5)],
        "wins": wins,
        "losses": losses,
        "sign_test_p": round(min(1.0, 2 * tail), 4),
    }


if __name__ == "__main__":
    main()
