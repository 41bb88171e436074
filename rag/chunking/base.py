"""What every chunking module shares: the result type, the size limits, and text spans.

Spans are cut only at whitespace as the tokenizer sees it, which keeps token counts additive
(see rag.chunking.packing).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy.typing as npt

from rag.tokens import CONTROL_SPACES, WORD

MIN_CHUNK_SIZE = 32
MAX_CHUNK_SIZE = 8192

#: Called with the sentences of one document; returns one embedding row per sentence.
EmbedFunction = Callable[[list[str]], npt.NDArray[Any]]


@dataclass(frozen=True)
class ChunkPiece:
    """One chunk: ``text == source[start_char:end_char]``; ``position`` counts from 0."""

    text: str
    position: int
    heading_path: tuple[str, ...]
    token_count: int
    start_char: int
    end_char: int


# --- whitespace as the tokenizer sees it (rag.tokens) ----------------------------------------
_SEPARATORS = frozenset(
    ch for ch in map(chr, range(0x3001)) if ch.isspace() and ch not in CONTROL_SPACES
)
_SEP = rf"[^\S{CONTROL_SPACES}]"
_SEP_NO_NL = rf"[^\S\n{CONTROL_SPACES}]"
_WORD = WORD
_PARAGRAPH_BREAK = re.compile(rf"\n(?:{_SEP_NO_NL}*\n)+")
_LINE_BREAK = re.compile(r"\n")
_BLANK_LINES = re.compile(rf"\n(?:{_SEP_NO_NL}*\n)*{_SEP_NO_NL}*")


# --- spans ---------------------------------------------------------------------------------
def _trimmed(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``[(start, end)]`` with separators stripped from both ends, or ``[]`` if nothing is left."""
    while start < end and text[start] in _SEPARATORS:
        start += 1
    while end > start and text[end - 1] in _SEPARATORS:
        end -= 1
    return [(start, end)] if start < end else []


def _split(
    text: str, start: int, end: int, delimiter: re.Pattern[str]
) -> Iterator[tuple[int, int]]:
    pos = start
    for match in delimiter.finditer(text, start, end):
        yield from _trimmed(text, pos, match.start())
        pos = match.end()
    yield from _trimmed(text, pos, end)


def _no_heading(_: int) -> tuple[str, ...]:
    return ()


def _validate(chunk_size: int, chunk_overlap: int) -> None:
    if not MIN_CHUNK_SIZE <= chunk_size <= MAX_CHUNK_SIZE:
        raise ValueError(
            f"chunk_size must be between {MIN_CHUNK_SIZE} and {MAX_CHUNK_SIZE} tokens,"
            f" got {chunk_size}."
        )
    if not 0 <= chunk_overlap < chunk_size:
        raise ValueError(
            f"chunk_overlap must be at least 0 and smaller than chunk_size ({chunk_size}),"
            f" got {chunk_overlap}."
        )
