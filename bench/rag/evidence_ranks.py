"""Where the evidence turns of LoCoMo dev questions rank in long-term search (development data
only, from ../shared/data): per category, the share of evidence turns within the first 10, 20,
30, 50 and 100 hits. It tells a ranking problem (the turn is found, too low) from a finding one
(not among the first 100). The conversations are the ``recall-sweep`` account's
(bench/rag/recall_sweep.py writes them once).

    uv run python bench/rag/evidence_ranks.py [--mode hybrid] [--misses]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session

DEPTHS = (10, 20, 30, 50, 100)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--locomo", default="/work/shared/data/locomo/locomo-dev.json")
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--misses", action="store_true", help="print multi-hop turns below 10")
    args = parser.parse_args()
    with django_session():
        from bench.rag import recall_sweep
        from memory.context.evaluation.locomo import CATEGORIES

        contexts = recall_sweep._contexts(Path(args.locomo), False, args.mode == "graph")
        ranks: dict[int, list[int]] = defaultdict(list)
        for sample_id, question, found, _ in recall_sweep.asked(contexts, args.mode, max(DEPTHS)):
            for turn in question.evidence:
                rank = found.index(turn) + 1 if turn in found else max(DEPTHS) + 1
                ranks[question.category].append(rank)
                if args.misses and question.category == 1 and rank > 10:
                    shown = rank if rank <= max(DEPTHS) else f"> {max(DEPTHS)}"
                    print(f"{sample_id} {question.question!r} {turn} rank {shown}")
        print(f"{'category':14} {'turns':>5} " + " ".join(f"{'@' + str(d):>6}" for d in DEPTHS))
        for category, found_ranks in sorted(ranks.items()):
            shares = [sum(r <= d for r in found_ranks) / len(found_ranks) for d in DEPTHS]
            print(
                f"{CATEGORIES[category]:14} {len(found_ranks):>5} "
                + " ".join(f"{s:6.3f}" for s in shares)
            )


if __name__ == "__main__":
    main()
