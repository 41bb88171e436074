"""The issue's two reference points for context assembly, measured on the development
conversations: packing the turns a plain BM25 ranks highest into the budget, and packing the
most recent turns (docs/benchmarks-log.md, "How hard dev is").

    uv run python bench/memory/context_references.py [--data ../shared/data/locomo/locomo-dev.json]
        [--budgets 1000,2000]

Reads the LoCoMo development conversations from ../shared/data (the product never does). No
database: each turn is ``speaker: text`` as the loader reads it, counted by the tokenizer the
product ships (``rag.tokens``), one token more per line for its newline. The BM25 is the
textbook one (k1 1.2, b 0.75) over lower-case words, once with every word of the question and
once with the analyser's (``rag.analysis``) stop words left out of the question; none of the
engine's query analysis, stemming or lifts. Evidence recall: the share of a question's
evidence turns packed, averaged over the questions of categories 1-4 with evidence.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, django_setup

DATA = SHARED_DATA / "locomo" / "locomo-dev.json"
WORD = re.compile(r"\w+")
K1, B = 1.2, 0.75


def _words(text: str, stop: frozenset[str]) -> list[str]:
    return [w for w in WORD.findall(text.lower()) if w not in stop]


def _bm25_order(
    docs: list[Counter[str]], query: list[str], df: Counter[str], avg: float
) -> list[int]:
    n = len(docs)
    scores = []
    for doc in docs:
        length = sum(doc.values())
        score = 0.0
        for word in query:
            f = doc.get(word, 0)
            if f:
                idf = math.log(1 + (n - df[word] + 0.5) / (df[word] + 0.5))
                score += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * length / avg))
        scores.append(score)
    return sorted(range(n), key=lambda i: (-scores[i], i))


def _pack(order: list[int], tokens: list[int], budget: int) -> set[int]:
    left, taken = budget, set()
    for i in order:
        if tokens[i] + 1 <= left:
            taken.add(i)
            left -= tokens[i] + 1
        if left <= 4:
            break
    return taken


def main() -> None:
    django_setup()
    from memory.context.evaluation.locomo import load_locomo
    from rag.analysis import STOP_WORDS
    from rag.tokens import count_tokens

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--budgets", default="1000,2000")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    print(f"data: {args.data} (LoCoMo development conversations, ../shared/data)")
    for conversation in load_locomo(args.data):
        turns = conversation.turns
        lines = [f"{t.speaker}: {t.text}" for t in turns]
        tokens = count_tokens(lines)
        questions = [q for q in conversation.questions if q.evidence and q.category <= 4]
        index = {t.dia_id: i for i, t in enumerate(turns)}
        docs = [Counter(_words(line, frozenset())) for line in lines]
        df: Counter[str] = Counter(w for doc in docs for w in doc)
        avg = statistics.fmean(sum(d.values()) for d in docs)
        for label, stop in (("bm25", frozenset()), ("bm25_no_stop_words", STOP_WORDS)):
            orders = [_bm25_order(docs, _words(q.question, stop), df, avg) for q in questions]
            for budget in budgets:
                recalls = []
                for question, order in zip(questions, orders, strict=True):
                    taken = _pack(order, tokens, budget)
                    evidence = [index.get(e) for e in question.evidence]
                    recalls.append(sum(1 for e in evidence if e in taken) / len(evidence))
                print(
                    f"{conversation.sample_id} {label:20s} budget {budget:5d}: "
                    f"evidence recall {statistics.fmean(recalls):.4f} ({len(questions)} questions)"
                )
        newest = list(reversed(range(len(turns))))
        for budget in budgets:
            left, taken = budget, set()
            for i in newest:
                if tokens[i] + 1 > left:
                    break
                taken.add(i)
                left -= tokens[i] + 1
            recalls = [
                sum(1 for e in q.evidence if index.get(e) in taken) / len(q.evidence)
                for q in questions
            ]
            print(
                f"{conversation.sample_id} {'most_recent':20s} budget {budget:5d}: "
                f"evidence recall {statistics.fmean(recalls):.4f} ({len(questions)} questions)"
            )


if __name__ == "__main__":
    main()
