"""The memories' similarity floor in a context
(``memory.floors.memory_min_similarity``, docs/tuning.md), chosen on what the memories shown are
worth and on what they cost the conversation's turns (docs/benchmarks-log.md, "Memories on topic
only").

    uv run python bench/memory/memory_floor.py [--data ../shared/data] [--unrelated 2000]

Reads LoCoMo's development conversations and BEIR SciFact's corpus from ../shared/data (the
product never does). Each conversation is written as ``context_locomo.py`` writes it; the
agent's own memories then hold LoCoMo's gold observations of *both* conversations (one memory
per observation, as an agent would remember what was said: ``metadata.dia_id`` the turn it
came from) and ``--unrelated`` sentences of SciFact abstracts (memories of other work). For
every question of categories 1-4:

- the memories the context's search finds (``sources.memories``, before any floor), each with
  its cosine similarity to the query and whether it is *evidence*: an observation of this
  conversation drawn from one of the question's evidence turns;
- for each floor: the memories kept, the evidence among them, and the evidence recall of the
  context's turns within 1,000 and 2,000 tokens (what issue 18 measures).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, django_session
from bench.memory.context_locomo import _write, ask
from bench.memory.memory_long_term import _SENTENCE_END

FLOORS: tuple[float | None, ...] = (None, 0.3, 0.4, 0.5)
BUDGETS = (1000, 2000)
WHERE = ("this conversation", "the other", "unrelated")


class Found(NamedTuple):
    """A memory the context's search found for a question."""

    conversation: str
    cosine: float
    evidence: bool
    where: str


def _observations(path: Path) -> list[tuple[str, str, str]]:
    """(sample id, dia id, text) of every gold observation of the file's conversations."""
    out = []
    for sample in json.loads(path.read_text()):
        for session in sample["observation"].values():
            for facts in session.values():
                for text, dia_id in facts:
                    ids = dia_id if isinstance(dia_id, list) else [dia_id]
                    for one in ids:
                        out.append((sample["sample_id"], str(one), text))
    return out


def _unrelated(scifact: Path, count: int) -> list[str]:
    from rag.evaluation import load_beir

    out: list[str] = []
    for doc in load_beir(scifact, "train").corpus.values():
        out.extend(s.strip() for s in _SENTENCE_END.split(doc.text) if len(s.split()) > 5)
        if len(out) >= count:
            break
    return out[:count]


def _remember(actor: Any, observations: list[tuple[str, str, str]], unrelated: list[str]) -> None:
    from memory.long_term import services as ltm

    context = ltm.agent_memory_context(actor=actor)
    items = [
        ltm.EntryInput(content=text, metadata={"sample_id": sample, "dia_id": dia_id})
        for sample, dia_id, text in observations
    ] + [ltm.EntryInput(content=text, metadata={"sample_id": "scifact"}) for text in unrelated]
    for start in range(0, len(items), 500):
        ltm.entries_write(
            actor=actor, context=context, items=items[start : start + 500], graph_link=False
        )


@contextmanager
def _floor(value: float | None) -> Any:
    from core import tuning

    with tuning.override("memory.floors.memory_min_similarity", value):
        yield


def main() -> None:
    from core import services as core_services
    from core.embeddings import get_embedding_provider
    from memory.context.assembly import sources
    from memory.context.evaluation.context import evidence_recall
    from memory.context.evaluation.locomo import load_locomo
    from memory.models import MemoryEntry

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    parser.add_argument("--unrelated", type=int, default=2000)
    args = parser.parse_args()
    locomo = args.data / "locomo" / "locomo-dev.json"
    print(f"data: {locomo} and {args.data / 'scifact'} (../shared/data)")
    observations = _observations(locomo)
    unrelated = _unrelated(args.data / "scifact", args.unrelated)
    provider = get_embedding_provider()
    hits: list[Found] = []
    recalls: dict[tuple[float | None, int], list[float]] = {}
    shown: Counter[tuple[float | None, str]] = Counter()
    for conversation in load_locomo(locomo):
        tool, actor, chat = _write(conversation)
        try:
            _remember(actor, observations, unrelated)
            questions = [q for q in conversation.questions if q.evidence and q.category <= 4]
            print(f"{conversation.sample_id}: {len(questions)} questions", flush=True)
            for question in questions:
                vector = np.asarray(provider.embed_query(question.question), dtype=np.float32)
                with _floor(None):
                    found, _ = sources.memories(actor, question.question, vector)
                rows = MemoryEntry.objects.filter(pk__in=[c.id for c in found]).values_list(
                    "pk", "embedding", "metadata"
                )
                for _, embedding, metadata in rows:
                    origin = metadata.get("sample_id")
                    where = WHERE[2] if origin == "scifact" else (
                        WHERE[0] if origin == conversation.sample_id else WHERE[1]
                    )  # fmt: skip
                    evidence = where == WHERE[0] and metadata.get("dia_id") in question.evidence
                    cosine = float(np.asarray(embedding) @ vector)
                    hits.append(Found(conversation.sample_id, cosine, evidence, where))
                for floor in FLOORS:
                    with _floor(floor):
                        for budget in BUDGETS:
                            answer = ask(actor, chat, question.question, budget)
                            recalls.setdefault((floor, budget), []).append(
                                evidence_recall(answer.sections, question.evidence)
                            )
                            if budget != 2000:
                                continue
                            for section in answer.sections:
                                for item in section["items"]:
                                    if item["kind"] == "memory":
                                        shown[(floor, "items")] += 1
                                        shown[(floor, "tokens")] += item["tokens"]
        finally:
            core_services.account_delete(actor=tool, account=chat.account)
    questions_asked = len(recalls[(None, BUDGETS[0])])
    print(f"{len(hits)} memories found for {questions_asked} questions")
    for sample in [*sorted({h.conversation for h in hits}), "both"]:
        mine = [h for h in hits if sample in ("both", h.conversation)]
        evidence_total = sum(h.evidence for h in mine)
        for floor in FLOORS:
            kept = [h for h in mine if floor is None or h.cosine >= floor]
            by_where = {w: sum(1 for h in kept if h.where == w) for w in WHERE}
            print(
                f"{sample} floor {floor}: {len(kept)} kept, "
                f"{sum(h.evidence for h in kept)} of {evidence_total} evidence, {by_where}"
            )
    for floor in FLOORS:
        recall = "  ".join(
            f"@{b} {sum(recalls[(floor, b)]) / len(recalls[(floor, b)]):.4f}" for b in BUDGETS
        )
        print(
            f"floor {floor}: memories shown within 2,000 tokens, per question, "
            f"{shown[(floor, 'items')] / questions_asked:.2f} "
            f"({shown[(floor, 'tokens')] / questions_asked:.1f} tokens); "
            f"turn evidence recall {recall}"
        )


if __name__ == "__main__":
    with django_session():
        main()
