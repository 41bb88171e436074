"""Several LoCoMo conversations as one longer conversation, written as a LoCoMo file of one
sample: a proxy for held-out conversations longer than the development ones
(docs/benchmarks-log.md, "A longer conversation").

    uv run python bench/memory/locomo_merge.py OUT [--data ../shared/data/locomo/locomo-dev.json]

Each conversation's sessions follow the previous one's, renumbered (``session_N`` and its
``session_N_date_time``), and its ``dia_id``s and its questions' evidence with them (``D3:7``
of the second of two 19-session conversations becomes ``D22:7``), so every turn and every
evidence id stays distinct. The speakers stay as they were: the result holds two pairs of
speakers, each question names its own. Reads the development data from ../shared/data (the
product never does); the file written is any tool's ``--dataset`` / ``--data`` / ``--locomo``.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo-dev.json"
SESSION = re.compile(r"session_(\d+)(_date_time)?$")
DIA_ID = re.compile(r"D(\d+):(\d+)$")


def merged(samples: list[dict[str, Any]]) -> dict[str, Any]:
    conversation: dict[str, Any] = {}
    questions: list[dict[str, Any]] = []
    offset = 0
    for sample in samples:
        turns = sample["conversation"]
        # Sessions with turns (LoCoMo also dates sessions that hold none: left out).
        held = {
            int(found[1])
            for key, value in turns.items()
            if (found := SESSION.match(key)) and isinstance(value, list)
        }

        def renumbered(dia_id: str, offset: int = offset) -> str:
            found = DIA_ID.match(dia_id.strip())
            return f"D{int(found[1]) + offset}:{found[2]}" if found else dia_id

        for key, value in turns.items():
            found = SESSION.match(key)
            if found is None:  # speaker_a / speaker_b: the first sample's
                conversation.setdefault(key, value)
                continue
            number = int(found[1])
            if number not in held:
                continue
            name = f"session_{number + offset}{found[2] or ''}"
            conversation[name] = (
                [{**turn, "dia_id": renumbered(turn["dia_id"])} for turn in value]
                if isinstance(value, list)
                else value
            )
        questions += [
            {**qa, "evidence": [renumbered(e) for e in qa.get("evidence", [])]}
            for qa in sample["qa"]
        ]
        offset += max(held, default=0)
    return {
        "sample_id": "+".join(sample["sample_id"] for sample in samples),
        "conversation": conversation,
        "qa": questions,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    sample = merged(json.loads(args.data.read_text()))
    args.out.write_text(json.dumps([sample]))
    sessions = sum(1 for key in sample["conversation"] if SESSION.match(key) and "date" not in key)
    print(f"{args.out}: {sample['sample_id']}, {sessions} sessions, {len(sample['qa'])} questions")


if __name__ == "__main__":
    main()
