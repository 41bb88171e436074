"""Statements: what a memory says, one claim at a time (docs/memory.md, "Nothing automatic loses
a fact").

Upkeep may archive an entry into another only when every statement of the archived entry is
still said by what stays current; the review queue highlights the statements a change would
archive. Both need the same split, which is this module's: a text's sentences (rag's splitter,
which keeps "Dr. Lind", "3.5" and "e.g." whole), each cut further into clauses at ";", at
"but" and at an "and" that joins two predicates ("... works at Acme and is allergic to
peanuts"), not two nouns ("salt and pepper", "Tom and Jerry").

Pure functions on text; the offsets let a caller mark a statement inside the text it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.chunking.sentences import sentence_spans

# A clause boundary: a semicolon, "but" (with or without a comma before it), or "and" after a
# comma or between words. Whether an "and" really starts a clause is decided on what follows.
_BOUNDARY = re.compile(r"\s*;\s*|,?\s+\b(?P<word>but|and)\b\s+", re.IGNORECASE)
# An "and" starts a clause when at least this many words follow it before the next boundary
# ("... and is allergic to peanuts"), or when its first word opens a clause by itself.
_AND_CLAUSE_WORDS = 3
# fmt: off
_CLAUSE_OPENERS = frozenset({
    "i", "you", "he", "she", "we", "they", "it", "is", "was", "are", "were", "has", "had",
    "have", "does", "did", "will", "would", "can", "could", "should", "must", "may", "might",
    "never", "always", "also", "often", "usually", "then", "there", "this", "that",
})
# fmt: on
_WORD = re.compile(r"[\w'’-]+")
# What is left of a clause that is only punctuation or a leading conjunction is not a statement.
_TRIM = " \t\r\n,;:-–—"


@dataclass(frozen=True)
class Statement:
    """One statement of a text: its words and where it stands (``text[start:end]``)."""

    text: str
    start: int
    end: int


def _opens_clause(text: str, at: int, stop: int) -> bool:
    words = _WORD.findall(text[at:stop])
    if not words:
        return False
    return words[0].lower() in _CLAUSE_OPENERS or len(words) >= _AND_CLAUSE_WORDS


def _clauses(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of the clauses of the sentence ``text[start:end]``."""
    cuts: list[tuple[int, int]] = []  # (end of the clause before, start of the next)
    matches = list(_BOUNDARY.finditer(text, start, end))
    for n, match in enumerate(matches):
        stop = matches[n + 1].start() if n + 1 < len(matches) else end
        if (match.group("word") or "").lower() == "and" and not _opens_clause(
            text, match.end(), stop
        ):
            continue
        cuts.append((match.start(), match.end()))
    spans: list[tuple[int, int]] = []
    position = start
    for clause_end, next_start in cuts:
        spans.append((position, clause_end))
        position = next_start
    spans.append((position, end))
    return spans


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start] in _TRIM:
        start += 1
    while end > start and text[end - 1] in _TRIM + ".!?":
        end -= 1
    if not _WORD.search(text, start, end):
        return None
    return start, end


def statements_of(text: str) -> list[Statement]:
    """The statements of ``text``, in order, each without its closing punctuation."""
    found: list[Statement] = []
    for sentence_start, sentence_end in sentence_spans(text):
        for clause_start, clause_end in _clauses(text, sentence_start, sentence_end):
            span = _trimmed(text, clause_start, clause_end)
            if span is not None:
                found.append(Statement(text[span[0] : span[1]], span[0], span[1]))
    return found
