"""The knowledge section's similarity floor
(``memory.floors.knowledge_min_similarity``, docs/tuning.md), chosen on what the items are worth
(docs/benchmarks-log.md, "Knowledge items on topic only").

    uv run python bench/memory/knowledge_floor.py [--data ../shared/data/locomo/locomo-dev.json]

Reads the LoCoMo development conversations from ../shared/data (the product never does). Each
is written as ``context_locomo.py`` writes it, the offline extractor making its knowledge items;
then every question of categories 1-4 runs the knowledge search the context runs (top 10,
factual items). A hit is *evidence-derived* when it was extracted from one of the question's
evidence turns. For each floor: the hits whose cosine similarity to the query reaches it, and
the evidence-derived ones among them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session
from bench.memory.context_locomo import DATA, _write

FLOORS = (0.0, 0.3, 0.4, 0.5, 0.6)


def main() -> None:
    from core import services as core_services
    from core.embeddings import get_embedding_provider
    from memory.context.assembly import sources
    from memory.context.evaluation.locomo import load_locomo
    from memory.knowledge.selectors import knowledge_search, source_messages
    from memory.models import KnowledgeItem, MemoryEntry
    from memory.tuning import TUNING

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    print(f"data: {args.data} (LoCoMo development conversations, ../shared/data)")
    provider = get_embedding_provider()
    hits: list[tuple[float, bool]] = []  # (cosine, evidence-derived)
    for conversation in load_locomo(args.data):
        tool, actor, chat = _write(conversation)
        try:
            items = KnowledgeItem.objects.filter(account_id=chat.account_id, is_current=True)
            vectors = {pk: np.asarray(v) for pk, v in items.values_list("pk", "embedding")}
            made_from = source_messages(list(vectors))
            dia_ids = dict(
                MemoryEntry.objects.filter(
                    pk__in={pk for pks in made_from.values() for pk in pks}
                ).values_list("pk", "metadata__dia_id")
            )
            print(f"{conversation.sample_id}: {len(vectors)} knowledge items", flush=True)
            for question in conversation.questions:
                if not question.evidence or question.category > 4:
                    continue
                query_vector = np.asarray(provider.embed_query(question.question))
                found = knowledge_search(
                    actor=actor,
                    query=question.question,
                    top_k=TUNING.sources.knowledge_candidates,
                    knowledge_types=sources.KNOWLEDGE_TYPES["conversation"],
                    query_vector=query_vector,
                    load_sources=False,
                )
                evidence = set(question.evidence)
                for hit in found.hits:
                    derived = any(
                        dia_ids.get(pk) in evidence for pk in made_from.get(hit.item.pk, ())
                    )
                    hits.append((float(vectors[hit.item.pk] @ query_vector), derived))
        finally:
            core_services.account_delete(actor=tool, account=chat.account)
    derived_total = sum(derived for _, derived in hits)
    print(f"{len(hits)} hits, {derived_total} evidence-derived")
    for floor in FLOORS:
        kept = [derived for cosine, derived in hits if cosine >= floor]
        print(
            f"floor {floor:.1f}: {len(kept):5d} hits kept, "
            f"{sum(kept):3d} of {derived_total} evidence-derived kept"
        )


if __name__ == "__main__":
    with django_session():
        main()
