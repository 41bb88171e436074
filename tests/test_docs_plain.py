"""The user docs name behaviours, not the reference specifications they came from: a reader
cannot look up "seed 003". Only the dated benchmark history keeps such names (it records how a
figure was chosen)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HISTORY = {"benchmarks-log.md"}
SEED = re.compile(r"\bseeds? 0\d\d\b", re.IGNORECASE)


def test_user_docs_never_name_a_seed() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert len(pages) > 5
    found = [
        f"{page.relative_to(ROOT)}:{number}: {line.strip()[:100]}"
        for page in pages
        if page.name not in HISTORY
        for number, line in enumerate(page.read_text().splitlines(), start=1)
        if SEED.search(line)
    ]
    assert found == [], "\n".join(found)
