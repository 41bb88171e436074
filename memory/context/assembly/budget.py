"""Token budgets for context assembly: counting with the tokenizer the answer names, and fitting
an item into what is left without cutting a sentence.

Tokens are counted with the embedding model's WordPiece tokenizer (``rag.tokens``), special
tokens excluded. Its pre-tokenizer splits on whitespace and punctuation before anything else,
so the tokens of lines joined by newlines are the sum of each line's tokens: the assembler adds
line counts as it packs, and ``context_assemble`` still counts the final text once and drops
the last items should it ever exceed the budget.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from core.metadata import (  # noqa: F401 - the answer's weights, named where the budget is
    BODY_BYTES_PER_TOKEN,
    BODY_FIXED_BYTES,
    ECHO_MAX_BYTES,
    echo,
    echo_text,
    json_bytes,
)
from rag.tokens import count_tokens_by_words

TOKENIZER = "sentence-transformers/all-MiniLM-L6-v2 (WordPiece, no special tokens)"

# A sentence ends at . ! ? (with closing quotes or brackets) before whitespace, or at a line
# break.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")


def tokens_of(texts: Sequence[str]) -> list[int]:
    return count_tokens_by_words(texts)


def sentences(text: str) -> list[str]:
    """The text's sentences, in order, each with its own punctuation."""
    parts: list[str] = []
    position = 0
    for match in _SENTENCE_END.finditer(text):
        piece = text[position : match.start()] + text[match.start() : match.end()].rstrip()
        if piece.strip():
            parts.append(piece.strip())
        position = match.end()
    tail = text[position:].strip()
    if tail:
        parts.append(tail)
    return parts


def fit_sentences(prefix: str, text: str, limit: int) -> tuple[str, int] | None:
    """The longest run of ``text``'s leading whole sentences whose line (``prefix`` + text) fits
    in ``limit`` tokens, with the line's tokens; None when not even the first sentence fits.
    An item is shortened only at a sentence boundary, never inside a sentence."""
    parts = sentences(text)
    if not parts:
        return None
    counts = tokens_of([prefix, *parts])
    used = counts[0]
    kept = 0
    for count in counts[1:]:
        if used + count > limit:
            break
        used += count
        kept += 1
    if kept == 0:
        return None
    shortened = " ".join(parts[:kept])
    # Joining sentences with single spaces may differ from the original spacing; count again.
    exact = tokens_of([prefix + shortened])[0]
    while exact > limit and kept > 1:
        kept -= 1
        shortened = " ".join(parts[:kept])
        exact = tokens_of([prefix + shortened])[0]
    return (shortened, exact) if exact <= limit else None
