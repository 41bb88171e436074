"""How alike two skills are: by name (naming conflicts) and by meaning (overlap), shared by the
conflict scan and the review queue's predicted conflicts."""

from __future__ import annotations

from difflib import SequenceMatcher

from rag.keyword import analyze
from skills.tuning import TUNING


def name_key(name: str) -> str:
    """A name as the search engine analyses it, its terms sorted: "Deploying services" and
    "service deploy" share a key."""
    return " ".join(sorted(set(analyze(name)))) or name.strip().lower()


def name_similarity(a: str, b: str) -> float:
    """1.0 for names with the same key, else the similarity ratio of their lower-cased forms
    (``difflib``: 2 x matching characters / total characters)."""
    if name_key(a) == name_key(b):
        return 1.0
    return SequenceMatcher(None, a.strip().lower(), b.strip().lower()).ratio()


def overlap_severity(similarity: float) -> str:
    if similarity >= TUNING.conflicts.overlap_high:
        return "high"
    if similarity >= TUNING.conflicts.overlap_medium:
        return "medium"
    return "low"
