"""Multi-hop questions over documents: the LoCoMo dev conversations ingested as documents (one
document a session, its turns one line each) and their questions asked through document
search, scored by the turns the top chunks hold. It is the document benchmark with multi-hop
questions that SciFact (one evidence abstract a claim) is not, to choose the chunk graph
weight on (``rag.spaces.chunks.graph_weight``) beside SciFact's "no worse than hybrid".

Reads ../shared/data/locomo/locomo-dev.json (the product never does). The documents go through
the real ingestion pipeline into a knowledge base per conversation of a kept account
(``locomo-documents-SIZE-OVERLAP``, whose graph holds nothing else), are linked to its graph and its
communities computed, once; later runs only search. A question's recall@k is the share of its
evidence turns held by the top k chunks (a chunk holds a turn when it holds the turn's middle).
Per conversation figures are the two folds. Variants as in bench/rag/recall_sweep.py:

    uv run python bench/rag/locomo_documents.py --modes hybrid,graph,agentic \\
        [--variant "rag.spaces.chunks.graph_weight=0.2" ...] [--chunk-size 128]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session
from bench.rag.recall_sweep import _cache_query_embeddings, variant_set

ACCOUNT = "locomo-documents"
CUTOFFS = (5, 10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--locomo", default="/work/shared/data/locomo/locomo-dev.json")
    parser.add_argument("--modes", default="hybrid,graph")
    parser.add_argument("--chunk-size", type=int, default=128)
    parser.add_argument("--chunk-overlap", type=int, default=16)
    parser.add_argument("--variant", action="append", default=[])
    args = parser.parse_args()
    with django_session():
        loaded = _load(Path(args.locomo), args.chunk_size, args.chunk_overlap)
        _cache_query_embeddings()
        for variant in args.variant or [""]:
            with variant_set([a for a in variant.split(";") if a]):
                modes = {m: _run(loaded, m) for m in args.modes.split(",")}
            print(json.dumps({"set": variant, "modes": modes}), flush=True)


def session_texts(conversation: Any) -> dict[int, tuple[str, dict[str, tuple[int, int]]]]:
    """Each session's document text (a date line, then "Speaker: text" a turn) and the
    character span of each turn's line, by dia_id."""
    sessions: dict[int, list[Any]] = {}
    for turn in conversation.turns:
        sessions.setdefault(turn.session, []).append(turn)
    out = {}
    for number, turns in sessions.items():
        when = turns[0].occurred_at
        text = f"Session {number}" + (f", {when:%d %B %Y}" if when else "") + "\n\n"
        spans = {}
        for turn in turns:
            line = f"{turn.speaker}: {turn.text}"
            spans[turn.dia_id] = (len(text), len(text) + len(line))
            text += line + "\n"
        out[number] = (text, spans)
    return out


def _load(path: Path, chunk_size: int, chunk_overlap: int) -> list[tuple[Any, Any, int, dict]]:
    """Each conversation's (conversation, actor, knowledge base id, dia_ids by chunk id)."""
    from core import services as core_services
    from core.actors import actor_for_account, actor_for_agent
    from core.models import Account, Agent
    from memory.context.evaluation.locomo import load_locomo
    from rag import services
    from rag.graph.services.build import documents_graph_catch_up
    from rag.graph.services.communities import communities_compute
    from rag.models import Chunk, Document, GraphCommunity, KnowledgeBase

    slug = f"{ACCOUNT}-{chunk_size}-{chunk_overlap}"  # a graph of its own per chunking
    account = Account.objects.filter(slug=slug).first() or core_services.account_create(
        name="LoCoMo as documents", slug=slug
    )
    agent = Agent.objects.filter(account=account, name="reader").first()
    if agent is None:
        agent = core_services.agent_create(
            actor=actor_for_account(account.pk), account=account, name="reader", description=""
        )
    actor = actor_for_agent(agent)
    out = []
    linked = 0
    for conversation in load_locomo(path):
        name = f"locomo:{conversation.sample_id}:{chunk_size}/{chunk_overlap}"
        kb = KnowledgeBase.objects.filter(account=account, name=name).first()
        texts = session_texts(conversation)
        if kb is None:
            kb = services.knowledge_base_create(
                actor=actor, name=name, chunk_size=chunk_size, chunk_overlap=chunk_overlap,
                chunking_strategy=KnowledgeBase.Chunking.RECURSIVE,
            )  # fmt: skip
            documents = services.documents_create_batch(
                actor=actor,
                kb=kb,
                uploads=[
                    {
                        "data": text.encode(),
                        "content_type": "text/plain",
                        "title": f"{conversation.sample_id} session {number}",
                        "source": f"{name}/session_{number}",
                        "metadata": services.DocumentMetadata(source_path=str(number)),
                    }
                    for number, (text, _) in texts.items()
                ],
                enqueue=False,
            )
            services.documents_process_batch(document_ids=[d.pk for d in documents])
        linked += documents_graph_catch_up(knowledge_base_id=kb.pk)[0]
        session_of = dict(
            Document.objects.filter(knowledge_base=kb).values_list("id", "source_path")
        )
        dia_of: dict[int, list[str]] = {}
        for chunk_id, document_id, start, end, text in Chunk.objects.filter(
            knowledge_base=kb
        ).values_list("id", "document_id", "start_char", "end_char", "text"):
            source, spans = texts[int(session_of[document_id])]
            assert source[start:end] == text, "the chunk's offsets are not the document's"
            dia_of[chunk_id] = [dia for dia, (a, b) in spans.items() if start <= (a + b) // 2 < end]
        out.append((conversation, actor, kb.pk, dia_of))
    if linked or not GraphCommunity.objects.filter(account=account).exists():
        communities_compute(account_id=account.pk)
    return out


def _run(loaded: list[tuple[Any, Any, int, dict]], mode: str) -> dict[str, Any]:
    from memory.context.evaluation.locomo import CATEGORIES
    from rag.management.commands.rag_eval import ranked_hits

    rows: list[tuple[str, int, dict[int, float]]] = []
    for conversation, actor, kb_id, dia_of in loaded:
        for question in conversation.questions:
            if not question.evidence or question.category == 5:
                continue
            hits = ranked_hits(
                actor, knowledge_base_id=kb_id, mode=mode, query=question.question,
                top_k=max(CUTOFFS),
            )  # fmt: skip
            wanted = set(question.evidence)
            recall = {}
            for k in CUTOFFS:
                held = {d for h in hits[:k] for d in dia_of.get(h.chunk_id, ())}
                recall[k] = len(wanted & held) / len(wanted)
            rows.append((conversation.sample_id, question.category, recall))

    def mean(selected: list[dict[int, float]]) -> dict[str, float]:
        return {
            f"recall@{k}": round(math.fsum(r[k] for r in selected) / len(selected), 4)
            for k in CUTOFFS
        }

    return {
        "all": mean([r for _, _, r in rows]),
        "folds": {
            s: mean([r for sid, _, r in rows if sid == s])
            for s in dict.fromkeys(sid for sid, _, _ in rows)
        },
        "categories": {
            CATEGORIES[c]: mean([r for _, cat, r in rows if cat == c]) for c in (1, 2, 3, 4)
        },
    }


if __name__ == "__main__":
    main()
