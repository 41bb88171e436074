"""Task classification accuracy (docs/benchmarks-log.md, "Context assembly"): the offline vote of
``memory.context.task_types`` on the labelled held-out queries it never votes with.

    uv run python bench/memory/context_task_types.py

Reads only the repository's own labelled set (memory/context/data/task_types.json).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session


def main() -> None:
    from memory.context import task_types

    held_out = task_types.labelled("held_out")
    task_types.vote("warm up")
    confusion: Counter[tuple[str, str]] = Counter()
    started = time.perf_counter()
    for text, expected in held_out:
        got, _ = task_types.vote(text)
        confusion[(expected, got)] += 1
    elapsed = (time.perf_counter() - started) * 1000 / len(held_out)
    right = sum(n for (expected, got), n in confusion.items() if expected == got)
    print(f"held-out queries: {len(held_out)}; accuracy {right / len(held_out):.3f}")
    print(f"mean time per query (embedding included): {elapsed:.1f} ms")
    for expected in task_types.TASK_TYPES:  # rows: the label; columns: the vote
        row = {got: confusion[(expected, got)] for got in task_types.TASK_TYPES}
        print(f"  {expected:16s} {row}")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__).parse_args()
    with django_session():
        main()
