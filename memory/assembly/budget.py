"""Token budgets for context assembly: counting with the tokenizer the answer names, and fitting
an item into what is left without cutting a sentence.

Tokens are counted with the embedding model's WordPiece tokenizer (``rag.tokens``), special
tokens excluded. Its pre-tokenizer splits on whitespace and punctuation before anything else,
so the tokens of lines joined by newlines are the sum of each line's tokens: the assembler adds
line counts as it packs, and ``context_assemble`` still counts the final text once and drops
the last items should it ever exceed the budget.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from core.metadata import metadata_size
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


# --- what an item echoes, and what the answer weighs -------------------------------------------

# An item echoes its metadata (a message's as stored, a memory's, a summary's key points...) cut
# to at most this many bytes of compact JSON: its leading top-level keys that fit whole. The
# echo's tokens count against the budget like the item's line (``echo_tokens``).
ECHO_MAX_BYTES = 256
# The answer's body is bounded by BODY_BYTES_PER_TOKEN x token_budget + BODY_FIXED_BYTES
# (docs/memory.md, "The budget"): every item's bytes (its line in ``context`` and its JSON in
# ``sections``) come out of BODY_BYTES_PER_TOKEN x token_budget, and an item that does not fit
# in what is left is left out, as one that does not fit the tokens left. Text that costs few
# tokens for its bytes (runs of spaces, characters the tokenizer drops, words past 100
# characters that count one token) cannot make the answer large. The fixed part holds the query
# (at most 4,000 characters, each at most 6 bytes as JSON), the section headings, the timings
# and the answer's other fields. On LoCoMo contexts an item weighs 12-40 bytes per token
# (docs/benchmarks.md), so the allowance does not bind on ordinary text.
BODY_BYTES_PER_TOKEN = 64
BODY_FIXED_BYTES = 32_768

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def json_bytes(value: Any) -> int:
    """``value``'s bytes as the API renders it (DRF's JSONRenderer: compact, UTF-8, U+2028 and
    U+2029 escaped)."""
    text = _ENCODER.encode(value)
    return len(text.encode("utf-8")) + 3 * (text.count("\u2028") + text.count("\u2029"))


def echo(metadata: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """What an item shows of its ``metadata``: the whole object when its compact JSON is at most
    ``ECHO_MAX_BYTES``, else its leading top-level keys that fit whole (later, smaller ones
    too), with True: cut."""
    if not metadata:
        return {}, False
    if metadata_size(metadata, stop_after=ECHO_MAX_BYTES) <= ECHO_MAX_BYTES:
        return dict(metadata), False
    kept: dict[str, Any] = {}
    used = 2  # {}
    for key, value in metadata.items():
        size = metadata_size({key: value}, stop_after=ECHO_MAX_BYTES) - 2 + (1 if kept else 0)
        if used + size <= ECHO_MAX_BYTES:
            kept[key] = value
            used += size
    return kept, True


def echo_text(shown: Mapping[str, Any]) -> str:
    """The echo as the tokenizer counts it: its compact JSON ("" for none)."""
    return _ENCODER.encode(shown) if shown else ""
