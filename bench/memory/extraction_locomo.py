"""Offline extraction on LoCoMo: recall of the gold facts, items per message, time per message
(docs/benchmarks-log.md, "Conversation extraction").

    uv run python bench/memory/extraction_locomo.py [--data ../shared/data/locomo/locomo-dev.json]

Reads the LoCoMo development conversations from ../shared/data (the product never does). Each
conversation is written through the conversations' services, one message per turn (``name`` =
the speaker, ``metadata`` = {"dia_id"}), a batch per session; then every message is extracted
offline on its own (``extraction_run`` over its one turn, as the follow-up task would for a
one-message batch), timed. LoCoMo's ``observation`` holds gold facts per session, each with its
source ``dia_id``; a gold fact counts as recalled when a knowledge item extracted from a message
of the same session has cosine >= 0.7 with it on the local embedding model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session

# ../shared beside the checkout (a worktree one level deeper looks one level further up).
DATA = next(
    (
        up / "shared" / "data" / "locomo" / "locomo-dev.json"
        for up in Path(__file__).resolve().parents[2:5]
        if (up / "shared" / "data" / "locomo" / "locomo-dev.json").exists()
    ),
    Path("../shared/data/locomo/locomo-dev.json"),
)
THRESHOLD = 0.7


def _gold(path: Path) -> dict[str, dict[int, list[str]]]:
    """sample id -> session number -> its gold facts (LoCoMo's ``observation``)."""
    gold: dict[str, dict[int, list[str]]] = {}
    for sample in json.loads(path.read_text(encoding="utf-8")):
        per: dict[int, list[str]] = defaultdict(list)
        for name, by_speaker in sample.get("observation", {}).items():
            session = int(name.split("_")[1])
            for facts in by_speaker.values():
                per[session] += [fact[0] for fact in facts if fact and fact[0].strip()]
        gold[sample["sample_id"]] = dict(per)
    return gold


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def main() -> None:
    import numpy as np
    from django.conf import settings

    from core import services as core_services
    from core.actors import actor_for_account, actor_for_agent
    from core.embeddings import get_embedding_provider
    from core.llm import reset_llm_provider
    from memory.context.evaluation.locomo import load_locomo
    from memory.conversations import services
    from memory.conversations.extraction import services as extractions
    from memory.models import Extraction, KnowledgeItem

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    settings.LLM_PROVIDER = "offline"  # the offline extractor, whatever is configured
    reset_llm_provider()
    gold = _gold(args.data)
    embedder = get_embedding_provider()
    print(f"data: {args.data}; embeddings: {embedder.model_id}; threshold {THRESHOLD}")
    totals: dict[str, float] = defaultdict(float)
    all_ms: list[float] = []
    for conversation in load_locomo(args.data):
        account = core_services.account_create(
            name=f"bench {conversation.sample_id}", slug=f"bench-{uuid.uuid4().hex[:12]}"
        )
        tool = actor_for_account(account.pk)
        agent = core_services.agent_create(actor=tool, account=account, name="locomo")
        actor = actor_for_agent(agent)
        chat = services.conversation_create(
            actor=actor, title=conversation.sample_id, summary_every=0
        )
        try:
            sessions: dict[int, list[Any]] = defaultdict(list)
            for turn in conversation.turns:
                sessions[turn.session].append(turn)
            session_of_turn: dict[int, int] = {}
            for number in sorted(sessions):
                written = services.messages_append(
                    actor=actor,
                    conversation=chat,
                    messages=[
                        services.MessageInput(
                            "user", t.text, t.speaker, t.occurred_at, {"dia_id": t.dia_id}
                        )
                        for t in sessions[number]
                    ],
                )
                session_of_turn.update({m.position or 0: number for m in written})
            ms: list[float] = []
            for number in sorted(session_of_turn):
                started = time.perf_counter()
                extractions.extraction_run(
                    actor=actor, conversation=chat, from_turn=number, to_turn=number
                )
                ms.append((time.perf_counter() - started) * 1000)
            rows = list(Extraction.objects.filter(conversation=chat))
            items: dict[int, set[int]] = defaultdict(set)  # session -> knowledge item ids
            for row in rows:
                if row.kind == Extraction.Kind.FACT and row.knowledge_item_id:
                    items[session_of_turn[row.turns[0]]].add(row.knowledge_item_id)
            texts = dict(KnowledgeItem.objects.filter(account=account).values_list("pk", "content"))
            recalled = total = 0
            for session, facts in gold.get(conversation.sample_id, {}).items():
                total += len(facts)
                mine = [texts[i] for i in items.get(session, ()) if i in texts]
                if not mine or not facts:
                    continue
                g = np.asarray(embedder.embed_documents(facts), dtype=np.float32)
                e = np.asarray(embedder.embed_documents(mine), dtype=np.float32)
                g /= np.linalg.norm(g, axis=1, keepdims=True)
                e /= np.linalg.norm(e, axis=1, keepdims=True)
                recalled += int(((g @ e.T).max(axis=1) >= THRESHOLD).sum())
            messages = len(session_of_turn)
            facts_made = sum(len(v) for v in items.values())
            entities = sum(1 for r in rows if r.kind == Extraction.Kind.ENTITY)
            print(
                f"{conversation.sample_id}: {messages} messages, gold facts {total}, "
                f"recall {recalled / max(total, 1):.4f} ({recalled}), fact items "
                f"{facts_made} ({facts_made / messages:.3f}/message), entity links "
                f"{entities} ({entities / messages:.3f}/message), extraction per message "
                f"p50 {statistics.median(ms):.1f} ms p95 {_p95(ms):.1f} ms",
                flush=True,
            )
            totals["messages"] += messages
            totals["gold"] += total
            totals["recalled"] += recalled
            totals["items"] += facts_made
            totals["entities"] += entities
            all_ms += ms
        finally:
            core_services.account_delete(actor=tool, account=account)
    print(
        f"all: {int(totals['messages'])} messages, extraction recall "
        f"{totals['recalled'] / max(totals['gold'], 1):.4f} "
        f"({int(totals['recalled'])}/{int(totals['gold'])} gold facts at cosine >= {THRESHOLD}), "
        f"fact items per message {totals['items'] / totals['messages']:.3f}, entity links per "
        f"message {totals['entities'] / totals['messages']:.3f}, offline extraction per message "
        f"p50 {statistics.median(all_ms):.1f} ms p95 {_p95(all_ms):.1f} ms"
    )


if __name__ == "__main__":
    started = time.perf_counter()
    with django_session():
        main()
    print(f"wall {time.perf_counter() - started:.0f} s")
