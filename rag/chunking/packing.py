"""Atoms (indivisible spans) and the greedy packing of atoms into token-limited chunks.

How sizes stay exact without re-tokenizing growing strings: the WordPiece tokenizer never lets
a token cross whitespace, so the token count of any span cut at whitespace is the sum of the
counts of its words. Each document is split into words once, each distinct word is tokenized
once (and remembered across documents), and any span's count is a difference of prefix sums.
Only a single word too long for a chunk has to be cut between characters; those pieces are
recounted on their own and always form chunks by themselves.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate

from rag.chunking.base import (
    _BLANK_LINES,
    _LINE_BREAK,
    _PARAGRAPH_BREAK,
    _WORD,
    ChunkPiece,
    _split,
)
from rag.chunking.sentences import sentence_spans
from rag.tokens import count_tokens_one, token_offsets, word_token_counts

_PARAGRAPH, _LINE, _SENTENCE, _WORD_LEVEL = range(4)


# --- atoms ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Atom:
    """An indivisible span that chunks are packed from.

    ``atomic``: an overlap may include it whole but never begin inside it. ``alone``: it must
    be a chunk by itself. ``hard_break``: a new chunk (without overlap) must begin here.
    ``no_overlap``: a chunk beginning here carries no overlap, though packing across is fine.
    """

    start: int
    end: int
    tokens: int
    atomic: bool = False
    alone: bool = False
    hard_break: bool = False
    no_overlap: bool = False
    fence: bool = False


class _Document:
    """One input text split into words (runs of non-separators) with their token counts.

    Answers the token count of any span that starts and ends at a word boundary, in O(log n).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.word_starts: list[int] = []
        words: list[str] = []
        for match in _WORD.finditer(text):
            self.word_starts.append(match.start())
            words.append(match.group())
        #: prefix[i] is the number of tokens in the words before word i.
        self.prefix = [0, *accumulate(word_token_counts(words))]

    def count(self, start: int, end: int) -> int:
        """Tokens of ``text[start:end]``; exact when neither end falls inside a word."""
        starts = self.word_starts
        return self.prefix[bisect_left(starts, end)] - self.prefix[bisect_left(starts, start)]

    def atoms(self, start: int, end: int, limit: int, level: int = _PARAGRAPH) -> list[_Atom]:
        """Split ``text[start:end]`` into atoms of at most ``limit`` tokens.

        Paragraphs that fit are kept whole; larger ones are split into lines, then sentences,
        then words, and a word larger than ``limit`` into character pieces (``alone`` atoms).
        """
        out: list[_Atom] = []
        self._atomize(out, start, end, limit, level)
        return out

    def _atomize(self, out: list[_Atom], start: int, end: int, limit: int, level: int) -> None:
        if level == _PARAGRAPH:
            spans: Iterator[tuple[int, int]] | list[tuple[int, int]]
            spans = _split(self.text, start, end, _PARAGRAPH_BREAK)
        elif level == _LINE:
            spans = _split(self.text, start, end, _LINE_BREAK)
        elif level == _SENTENCE:
            spans = sentence_spans(self.text, start, end)
        else:
            spans = ((m.start(), m.end()) for m in _WORD.finditer(self.text, start, end))
        for span_start, span_end in spans:
            tokens = self.count(span_start, span_end)
            if tokens <= limit:
                out.append(_Atom(span_start, span_end, tokens))
            elif level < _WORD_LEVEL:
                self._atomize(out, span_start, span_end, limit, level + 1)
            else:
                out.extend(self._character_pieces(span_start, span_end, limit))

    def _character_pieces(self, start: int, end: int, limit: int) -> Iterator[_Atom]:
        """Cut one over-long word at token boundaries into pieces of at most ``limit`` tokens.

        A piece cut from inside a word can tokenize differently on its own (a "##" suffix
        becomes a word start), so each piece is recounted alone and shortened until it fits.
        A single token always fits: no WordPiece vocabulary entry is 32 characters long.
        """
        word = self.text[start:end]
        starts = [token_start for token_start, _ in token_offsets([word])[0]]
        pos, index = 0, 0
        while index < len(starts):
            take = min(limit, len(starts) - index)
            while True:
                cut = starts[index + take] if index + take < len(starts) else len(word)
                tokens = count_tokens_one(word[pos:cut])
                if tokens <= limit or take == 1:
                    break
                take = max(1, take - (tokens - limit))
            yield _Atom(start + pos, start + cut, tokens, atomic=True, alone=True)
            pos, index = cut, index + take

    # --- packing ---------------------------------------------------------------------------
    def pack(
        self, atoms: Sequence[_Atom], chunk_size: int, overlap: int, *, line_overlap: bool = False
    ) -> list[tuple[int, int, int]]:
        """Greedily pack atoms into (start, end, tokens) spans of at most ``chunk_size`` tokens.

        A new chunk starts with the last ~``overlap`` tokens of the previous one, cut at a word
        start (or a line start with ``line_overlap``), shrunk when the next atom needs room.
        """
        spans: list[tuple[int, int, int]] = []
        atom_starts = [atom.start for atom in atoms]
        open_chunk = False
        cur_start = cur_end = cur_tokens = 0
        for atom in atoms:
            if atom.alone:
                if open_chunk:
                    spans.append((cur_start, cur_end, cur_tokens))
                    open_chunk = False
                spans.append((atom.start, atom.end, atom.tokens))
                continue
            if open_chunk and not atom.hard_break and cur_tokens + atom.tokens <= chunk_size:
                cur_end, cur_tokens = atom.end, cur_tokens + atom.tokens
                continue
            start, carried = atom.start, 0
            if open_chunk:
                spans.append((cur_start, cur_end, cur_tokens))
                if overlap and not (atom.hard_break or atom.no_overlap):
                    budget = min(overlap, chunk_size - atom.tokens)
                    begin = self._overlap_start(
                        cur_start, cur_end, budget, atoms, atom_starts, line_overlap
                    )
                    if begin is not None:
                        start, carried = begin, self.count(begin, cur_end)
            open_chunk = True
            cur_start, cur_end, cur_tokens = start, atom.end, carried + atom.tokens
        if open_chunk:
            spans.append((cur_start, cur_end, cur_tokens))
        return spans

    def _overlap_start(
        self,
        start: int,
        end: int,
        budget: int,
        atoms: Sequence[_Atom],
        atom_starts: list[int],
        line_overlap: bool,
    ) -> int | None:
        """Where the overlap copied from chunk ``[start, end)`` begins, or None for none."""
        if budget <= 0:
            return None
        first = bisect_left(self.word_starts, start)
        last = bisect_left(self.word_starts, end)
        # The earliest word from which the rest of the chunk holds at most ``budget`` tokens.
        index = bisect_left(self.prefix, self.prefix[last] - budget, first, last)
        if index >= last:
            return None
        begin: int | None = self.word_starts[index]
        if line_overlap:
            # Moving forward to a line start only drops tokens, so the budget still holds.
            begin = self._line_start(self.word_starts[index], start, end)
        if begin is None:
            return None
        holder = bisect_right(atom_starts, begin) - 1
        if holder >= 0 and atoms[holder].atomic and atoms[holder].start < begin:
            nxt = holder + 1
            if nxt >= len(atoms) or atoms[nxt].start >= end:
                return None
            begin = atoms[nxt].start
        return begin

    def _line_start(self, pos: int, start: int, end: int) -> int | None:
        line_start = self.text.rfind("\n", start, pos) + 1 or start
        if not self.text[line_start:pos].strip():
            return line_start  # only indentation precedes pos on its line
        newline = self.text.find("\n", pos, end)
        if newline == -1:
            return None
        match = _BLANK_LINES.match(self.text, newline)
        assert match is not None  # the pattern matches at any newline
        line_start = self.text.rfind("\n", newline, match.end()) + 1
        return line_start if line_start < end else None


def _pieces(
    document: _Document,
    spans: Sequence[tuple[int, int, int]],
    heading_path: Callable[[int], tuple[str, ...]],
) -> list[ChunkPiece]:
    text = document.text
    return [
        ChunkPiece(
            text=text[start:end],
            position=position,
            heading_path=heading_path(start),
            token_count=tokens,
            start_char=start,
            end_char=end,
        )
        for position, (start, end, tokens) in enumerate(spans)
    ]
