"""Split extracted text into chunks whose sizes are measured in embedding-model tokens.

Every strategy returns ``ChunkPiece`` rows in document order. Each chunk's text is exactly
``text[start_char:end_char]`` of the input and ends on a non-whitespace character; it starts on
one too, except that code chunks start at a line start and keep its indentation. Its
``token_count`` is what ``rag.tokens.count_tokens`` reports for that text. Apart from the
documented exception of oversized markdown code blocks, no chunk exceeds ``chunk_size`` tokens,
and every non-whitespace character of the input lies in at least one chunk.

How sizes stay exact without re-tokenizing growing strings: the WordPiece tokenizer never lets
a token cross whitespace, so the token count of any span cut at whitespace is the sum of the
counts of its words. Each document is split into words once, each distinct word is tokenized
once (and remembered across documents), and any span's count is a difference of prefix sums.
Only a single word too long for a chunk has to be cut between characters; those pieces are
recounted on their own and always form chunks by themselves.
"""

from __future__ import annotations

import dataclasses
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.tokens import count_tokens, count_tokens_one, token_offsets

__all__ = [
    "MAX_CHUNK_SIZE",
    "MIN_CHUNK_SIZE",
    "STRATEGIES",
    "ChunkPiece",
    "EmbedFunction",
    "MarkdownHeading",
    "MarkdownOutline",
    "chunk_code",
    "chunk_document",
    "chunk_markdown",
    "chunk_recursive",
    "chunk_semantic",
    "markdown_outline",
    "sentence_spans",
]

STRATEGIES = ("recursive", "markdown", "semantic", "code")
MIN_CHUNK_SIZE = 32
MAX_CHUNK_SIZE = 8192
DEFAULT_BREAKPOINT_PERCENTILE = 25.0

#: Called with the sentences of one document; returns one embedding row per sentence.
EmbedFunction = Callable[[list[str]], npt.NDArray[Any]]

# Content types whose extracted text marks headings with "# " lines (HTML extraction writes
# them), so the recursive and semantic strategies can label chunks with a heading path too.
_HEADED_CONTENT_TYPES = frozenset({"text/markdown", "text/html"})


@dataclass(frozen=True)
class ChunkPiece:
    """One chunk: ``text == source[start_char:end_char]``; ``position`` counts from 0."""

    text: str
    position: int
    heading_path: tuple[str, ...]
    token_count: int
    start_char: int
    end_char: int


# --- whitespace as the tokenizer sees it ---------------------------------------------------
# Python's whitespace includes a few control characters (\x0b, \x0c, \x1c-\x1f, \x85) that the
# tokenizer deletes instead of treating as separators, so "a\x0cb" is one token. Cutting there
# would break the additivity of counts, so those characters are treated as part of words.
_CONTROL_SPACES = "\x0b\x0c\x1c\x1d\x1e\x1f\x85"
_SEPARATORS = frozenset(
    ch for ch in map(chr, range(0x3001)) if ch.isspace() and ch not in _CONTROL_SPACES
)
_SEP = rf"[^\S{_CONTROL_SPACES}]"
_SEP_NO_NL = rf"[^\S\n{_CONTROL_SPACES}]"
_WORD = re.compile(rf"(?:\S|[{_CONTROL_SPACES}])+")
_PARAGRAPH_BREAK = re.compile(rf"\n(?:{_SEP_NO_NL}*\n)+")
_LINE_BREAK = re.compile(r"\n")
_BLANK_LINES = re.compile(rf"\n(?:{_SEP_NO_NL}*\n)*{_SEP_NO_NL}*")

_PARAGRAPH, _LINE, _SENTENCE, _WORD_LEVEL = range(4)


# --- sentences ------------------------------------------------------------------------------
# A sentence ends at . ! ? or an ellipsis (plus closing quotes/brackets) followed by whitespace
# and a capital letter or digit, optionally behind an opening quote or bracket.
_SENTENCE_END = re.compile(
    rf"[.!?\u2026]+[\"'\u201d\u2019)\]]*(?={_SEP}+[\"'\u201c\u2018(\[]?(?P<next>\w))"
)
# fmt: off
# Abbreviations after which a capitalised word does not start a new sentence.
_ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "e.g", "i.e", "al", "cf",
    "approx", "ca", "inc", "ltd", "co", "corp", "viz", "resp", "dept", "gen", "gov", "lt",
    "col", "capt", "sgt", "rev", "hon", "mt", "ft"
})
# Abbreviations that only stay joined when a number follows ("Fig. 2", "No. 5", "Jan. 3").
_NUMBERED_ABBREVIATIONS = frozenset({
    "no", "nos", "fig", "figs", "eq", "eqs", "vol", "vols", "p", "pp", "ref", "refs", "sec",
    "ch", "art", "tab", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct",
    "nov", "dec"
})
# fmt: on
_DOTTED_INITIALS = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences of ``text[start:end]``, trimmed of whitespace.

    A regular-expression splitter for English prose: it does not split after common
    abbreviations ("e.g.", "Dr."), single initials ("J. Smith") or inside numbers ("3.14").
    Newlines are not boundaries by themselves.
    """
    stop = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    pos = start
    for match in _SENTENCE_END.finditer(text, start, stop):
        if not _is_sentence_end(text, match, start):
            continue
        spans.extend(_trimmed(text, pos, match.end()))
        pos = match.end()
    spans.extend(_trimmed(text, pos, stop))
    return spans


def _is_sentence_end(text: str, match: re.Match[str], floor: int) -> bool:
    marks = match.group(0)
    following = match.group("next")
    if not (following.isupper() or following.isdigit()):
        return False
    if marks[0] != "." or marks.startswith(".."):
        return True  # "?", "!" and ellipses are never abbreviations
    word_start = match.start()
    while word_start > floor and text[word_start - 1] not in _SEPARATORS:
        word_start -= 1
    word = text[word_start : match.start()].lstrip("\"'([\u201c\u2018").lower()
    if len(word) == 1 and word.isalpha():
        return False  # an initial, as in "J. Smith"
    if word in _ABBREVIATIONS or _DOTTED_INITIALS.fullmatch(word):
        return False
    return not (word in _NUMBERED_ABBREVIATIONS and following.isdigit())


# --- spans and atoms ------------------------------------------------------------------------
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
        self.prefix = [0, *accumulate(_word_token_counts(words))]

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


# Token counts of words seen before. Natural-language text repeats a small vocabulary, so most
# words are looked up rather than tokenized; the tokenizer is deterministic, so the cache can
# never change a result. Long words (identifiers, URLs) rarely repeat and are not kept.
_word_counts: dict[str, int] = {}
_WORD_CACHE_ENTRIES = 1 << 17
_WORD_CACHE_MAX_CHARS = 32


def _word_token_counts(words: list[str]) -> list[int]:
    """Token count of each word; precondition: no word contains a separator."""
    cached = _word_counts.get
    counts = [cached(word, -1) for word in words]
    if -1 not in counts:
        return counts
    missing = list({word for word, count in zip(words, counts, strict=True) if count < 0})
    fresh = dict(zip(missing, count_tokens(missing), strict=True))
    # Dict operations are atomic under the GIL, so threads may share the cache; a clear racing
    # a lookup only costs a recount.
    if len(_word_counts) + len(fresh) > _WORD_CACHE_ENTRIES:
        _word_counts.clear()
    _word_counts.update(
        (word, count) for word, count in fresh.items() if len(word) <= _WORD_CACHE_MAX_CHARS
    )
    return [fresh[word] if count < 0 else count for word, count in zip(words, counts, strict=True)]


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


# --- markdown structure ---------------------------------------------------------------------
@dataclass(frozen=True)
class MarkdownHeading:
    """An ATX heading line: ``start`` is the line's offset, ``end`` the offset past its text."""

    level: int
    title: str
    start: int
    end: int


@dataclass(frozen=True)
class MarkdownOutline:
    """Headings outside code fences, and the (start, end) spans of the fenced code blocks."""

    headings: list[MarkdownHeading]
    fences: list[tuple[int, int]]

    def heading_path_at(self) -> Callable[[int], tuple[str, ...]]:
        """A function giving the heading path in force at an offset (headings above it)."""
        starts: list[int] = []
        paths: list[tuple[str, ...]] = []
        stack: list[MarkdownHeading] = []
        for heading in self.headings:
            while stack and stack[-1].level >= heading.level:
                stack.pop()
            stack.append(heading)
            starts.append(heading.start)
            paths.append(tuple(h.title for h in stack))

        def path_at(offset: int) -> tuple[str, ...]:
            index = bisect_right(starts, offset) - 1
            return paths[index] if index >= 0 else ()

        return path_at


_ATX_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")


def markdown_outline(text: str) -> MarkdownOutline:
    """ATX headings (``#`` to ``######``) and fenced code blocks (``` or ~~~) of ``text``.

    Follows CommonMark for these two constructs: up to three spaces of indentation, a fence is
    closed by a line of at least as many of the same character, an unclosed fence runs to the
    end, and "#" lines inside fences are not headings. Setext headings are not recognised.
    """
    headings: list[MarkdownHeading] = []
    fences: list[tuple[int, int]] = []
    fence_char, fence_len, fence_start = "", 0, 0
    pos = 0
    while pos <= len(text):
        newline = text.find("\n", pos)
        line_end = len(text) if newline == -1 else newline
        line = text[pos:line_end]
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        if fence_char:
            closing = body.rstrip(" \t")
            if indent <= 3 and len(closing) >= fence_len and closing == fence_char * len(closing):
                fences.append((fence_start, line_end))
                fence_char = ""
        elif indent <= 3 and body[:3] in ("```", "~~~"):
            char = body[0]
            run = len(body) - len(body.lstrip(char))
            if char == "~" or "`" not in body[run:]:
                fence_char, fence_len, fence_start = char, run, pos + indent
        elif indent <= 3 and body.startswith("#"):
            match = _ATX_HEADING.fullmatch(line)
            if match and match.group(2) and match.group(2).strip():
                title = match.group(2).strip()
                headings.append(MarkdownHeading(len(match.group(1)), title, pos, line_end))
        if newline == -1:
            break
        pos = newline + 1
    if fence_char:
        fences.append((fence_start, max(fence_start, len(text.rstrip()))))
    return MarkdownOutline(headings, fences)


# --- strategies -----------------------------------------------------------------------------
def chunk_document(
    text: str,
    *,
    strategy: str,
    chunk_size: int,
    chunk_overlap: int,
    content_type: str = "text/plain",
    embed: EmbedFunction | None = None,
) -> list[ChunkPiece]:
    """Chunk ``text`` with the named strategy (one of STRATEGIES).

    ``chunk_size`` (32-8192) and ``chunk_overlap`` (0 <= overlap < chunk_size) are in tokens;
    the semantic strategy ignores the overlap. ``content_type`` is the extracted text's type;
    for text/markdown and text/html the recursive and semantic strategies also fill
    ``heading_path``. ``embed`` is required by the semantic strategy only. Raises ValueError
    for an unknown strategy or out-of-range sizes. Whitespace-only text gives no chunks.
    """
    _validate(chunk_size, chunk_overlap)
    if strategy == "recursive":
        return chunk_recursive(
            text, chunk_size=chunk_size, chunk_overlap=chunk_overlap, content_type=content_type
        )
    if strategy == "markdown":
        return chunk_markdown(text, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    if strategy == "semantic":
        if embed is None:
            raise ValueError("The semantic strategy needs an embed function.")
        return chunk_semantic(text, chunk_size=chunk_size, embed=embed, content_type=content_type)
    if strategy == "code":
        return chunk_code(text, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    raise ValueError(f"Unknown chunking strategy {strategy!r}; expected one of {STRATEGIES}.")


def _heading_lookup(text: str, content_type: str) -> Callable[[int], tuple[str, ...]]:
    if content_type in _HEADED_CONTENT_TYPES:
        return markdown_outline(text).heading_path_at()
    return _no_heading


def chunk_recursive(
    text: str, *, chunk_size: int, chunk_overlap: int, content_type: str = "text/plain"
) -> list[ChunkPiece]:
    """Paragraphs, then lines, sentences and words, packed greedily up to ``chunk_size``.

    Each chunk after the first begins with up to ``chunk_overlap`` tokens from the end of the
    previous one, starting at a word; the overlap shrinks when the next piece needs the room.
    """
    _validate(chunk_size, chunk_overlap)
    document = _Document(text)
    atoms = document.atoms(0, len(text), chunk_size)
    spans = document.pack(atoms, chunk_size, chunk_overlap)
    return _pieces(document, spans, _heading_lookup(text, content_type))


def chunk_markdown(text: str, *, chunk_size: int, chunk_overlap: int) -> list[ChunkPiece]:
    """One or more chunks per heading section, labelled with the section's heading path.

    A section's first chunk starts with its heading line; a heading directly followed by a
    deeper one shares its chunks (its path is the deeper one's). Sections larger than
    ``chunk_size`` are split like chunk_recursive, with overlap inside the section only.
    Fenced code blocks are never split nor begun in by an overlap: the one exception to the
    size limit is a code block larger than ``chunk_size``, which becomes its own chunk
    (together with its section's heading, when the block comes right after it).
    """
    _validate(chunk_size, chunk_overlap)
    document = _Document(text)
    outline = markdown_outline(text)
    fences = iter(outline.fences)
    next_fence = next(fences, None)
    path_at = outline.heading_path_at()
    section_starts: list[int] = []
    section_paths: list[tuple[str, ...]] = []
    atoms: list[_Atom] = []
    for start, end, header_end in _sections(text, outline):
        section_starts.append(start)
        section_paths.append(path_at(header_end))
        section: list[_Atom] = []
        pos = start
        while next_fence is not None and next_fence[0] < end:
            section.extend(document.atoms(pos, next_fence[0], chunk_size))
            for fence_start, fence_end in _trimmed(text, *next_fence):
                tokens = document.count(fence_start, fence_end)
                oversized = tokens > chunk_size
                section.append(
                    _Atom(fence_start, fence_end, tokens, atomic=True, alone=oversized, fence=True)
                )
            pos = next_fence[1]
            next_fence = next(fences, None)
        section.extend(document.atoms(pos, end, chunk_size))
        section = _keep_heading_with_body(document, section, header_end, chunk_size)
        if section:
            section[0] = dataclasses.replace(section[0], hard_break=True)
        atoms.extend(section)
    spans = document.pack(atoms, chunk_size, chunk_overlap)

    # Overlaps never cross a section, so a chunk belongs to the section its start lies in.
    def section_path(offset: int) -> tuple[str, ...]:
        return section_paths[bisect_right(section_starts, offset) - 1]

    return _pieces(document, spans, section_path)


def _sections(text: str, outline: MarkdownOutline) -> Iterator[tuple[int, int, int]]:
    """(start, end, end of the heading lines) per section; a preamble has no heading lines."""
    headings = outline.headings
    if not headings:
        yield 0, len(text), 0
        return
    if text[: headings[0].start].strip():
        yield 0, headings[0].start, 0
    pending: int | None = None
    for index, heading in enumerate(headings):
        start = heading.start if pending is None else pending
        end = headings[index + 1].start if index + 1 < len(headings) else len(text)
        deeper_follows = index + 1 < len(headings) and headings[index + 1].level > heading.level
        if deeper_follows and not text[heading.end : end].strip():
            pending = start  # an empty parent section joins its first child
            continue
        pending = None
        yield start, end, heading.end


def _keep_heading_with_body(
    document: _Document, atoms: list[_Atom], header_end: int, chunk_size: int
) -> list[_Atom]:
    """Avoid a chunk holding nothing but the section's heading lines.

    When the heading lines and the following atom do not fit together, a text atom is split
    finer so that its first part fits, and an oversized code block takes the heading in.
    """
    count = 0
    while count < len(atoms) and atoms[count].end <= header_end and not atoms[count].alone:
        count += 1
    if count == 0 or count == len(atoms):
        return atoms
    heading_tokens = sum(atom.tokens for atom in atoms[:count])
    body = atoms[count]
    if heading_tokens + body.tokens <= chunk_size:
        return atoms
    if body.fence and body.alone:
        merged = _Atom(
            atoms[0].start, body.end, heading_tokens + body.tokens, atomic=True, alone=True
        )
        return [merged, *atoms[count + 1 :]]
    room = chunk_size - heading_tokens
    if body.atomic or room < 1:
        return atoms
    finer = document.atoms(body.start, body.end, room)
    return [*atoms[:count], *finer, *atoms[count + 1 :]]


def chunk_semantic(
    text: str,
    *,
    chunk_size: int,
    embed: EmbedFunction,
    content_type: str = "text/plain",
    breakpoint_percentile: float = DEFAULT_BREAKPOINT_PERCENTILE,
) -> list[ChunkPiece]:
    """Group consecutive sentences, breaking where their meaning shifts.

    Every sentence (a sentence over ``chunk_size`` is first split like chunk_recursive) is
    embedded with ``embed``; a chunk ends where the cosine similarity between neighbouring
    sentences falls below the ``breakpoint_percentile`` of all neighbour similarities in the
    document, or where the next sentence would push it past ``chunk_size``. No overlap is
    added: the breaks are meant to separate topics, and repeating text across them would undo
    that. Deterministic for a deterministic ``embed``. Raises ValueError if ``embed`` returns
    the wrong number of rows.
    """
    _validate(chunk_size, 0)
    document = _Document(text)
    units: list[_Atom] = []
    for para_start, para_end in _split(text, 0, len(text), _PARAGRAPH_BREAK):
        for start, end in sentence_spans(text, para_start, para_end):
            tokens = document.count(start, end)
            if tokens <= chunk_size:
                units.append(_Atom(start, end, tokens))
            else:
                units.extend(document.atoms(start, end, chunk_size, _LINE))
    if not units:
        return []
    breaks = np.zeros(len(units), dtype=bool)
    if len(units) > 1:
        vectors = np.asarray(embed([text[u.start : u.end] for u in units]), dtype=np.float64)
        if vectors.ndim != 2 or vectors.shape[0] != len(units):
            raise ValueError(
                f"embed returned an array of shape {vectors.shape} for {len(units)} sentences."
            )
        norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        unit_vectors = vectors / norms
        similarities = np.einsum("ij,ij->i", unit_vectors[:-1], unit_vectors[1:])
        threshold = np.percentile(similarities, breakpoint_percentile)
        breaks[1:] = similarities < threshold
    marked = [
        dataclasses.replace(unit, hard_break=True) if cut else unit
        for unit, cut in zip(units, breaks.tolist(), strict=True)
    ]
    spans = document.pack(marked, chunk_size, 0)
    return _pieces(document, spans, _heading_lookup(text, content_type))


# A definition in Python, JavaScript/TypeScript, Go or Rust, matched after its indentation.
_DEFINITION = re.compile(
    r"(?:(?:export|declare|pub(?:\([^)]*\))?|unsafe|abstract|default|async)\s+)*"
    r"(?:def|class|function\*?|fn|func|impl|struct|enum|trait|interface|type|const|let|var"
    r"|static|mod|namespace|union|macro_rules!)(?=\W|$)"
    r"|export\b"
)
# Lines that document or decorate the definition below them.
_PREFIX = re.compile(r"(?:@|#|//|/\*|--)")


def chunk_code(text: str, *, chunk_size: int, chunk_overlap: int) -> list[ChunkPiece]:
    """Top-level definitions packed greedily up to ``chunk_size``.

    A definition starts at a column-0 line such as ``def``, ``class``, ``async def``,
    ``function``, ``export``, ``const``, ``func``, ``fn``/``pub fn``, ``impl``, ``struct`` or
    ``interface``, and takes with it the decorators, attributes and comments directly above it.
    Text before the first definition (imports) forms its own piece. A definition larger than
    ``chunk_size`` never shares a chunk with its neighbours: it is split the same way at the
    definitions nested one indentation level inside it (methods), and where there are none, at
    lines (a line too long at words). Only the line-split parts carry an overlap, of whole
    lines. Chunks begin at a line start, so a chunk's text may begin with indentation.
    """
    _validate(chunk_size, chunk_overlap)
    code = _Code(_Document(text))
    atoms = code.atoms(0, len(code.lines), "", chunk_size)
    spans = code.document.pack(atoms, chunk_size, chunk_overlap, line_overlap=True)
    return _pieces(code.document, spans, _no_heading)


class _Code:
    """A source file's lines, for finding definitions by indentation."""

    def __init__(self, document: _Document) -> None:
        self.document = document
        text = document.text
        #: Offset of each line's first character, plus len(text) as a sentinel.
        self.line_starts = [0, *(m.end() for m in _LINE_BREAK.finditer(text)), len(text)]
        self.lines = [
            text[start : max(start, stop - 1)] for start, stop in pairwise(self.line_starts)
        ]
        self.lines[-1] = text[self.line_starts[-2] :]

    def atoms(self, first: int, stop: int, indent: str, chunk_size: int) -> list[_Atom]:
        """Atoms for lines ``first``..``stop`` split at definitions indented by ``indent``."""
        text = self.document.text
        starts = self._definition_starts(first, stop, indent)
        atoms: list[_Atom] = []
        after_split = False
        for block_first, block_stop in pairwise([*starts, stop]):
            block = _trimmed(text, self.line_starts[block_first], self.line_starts[block_stop])
            for start, end in block:
                start = text.rfind("\n", 0, start) + 1  # keep the first line's indentation
                tokens = self.document.count(start, end)
                if tokens <= chunk_size:
                    atoms.append(_Atom(start, end, tokens, no_overlap=True, hard_break=after_split))
                    after_split = False
                    continue
                parts = self._split_oversized(block_first, block_stop, indent, chunk_size)
                parts[0] = dataclasses.replace(parts[0], hard_break=True, no_overlap=True)
                atoms.extend(parts)
                after_split = True
        return atoms

    def _split_oversized(self, first: int, stop: int, indent: str, chunk_size: int) -> list[_Atom]:
        inner = next(
            (
                line[: len(line) - len(line.lstrip())]
                for line in self.lines[first + 1 : stop]
                if line.strip() and line.startswith(indent) and line[len(indent)].isspace()
            ),
            None,
        )
        if inner is not None and len(self._definition_starts(first, stop, inner)) > 1:
            return self.atoms(first, stop, inner, chunk_size)
        text = self.document.text
        atoms: list[_Atom] = []
        for index in range(first, stop):
            for start, end in _trimmed(text, self.line_starts[index], self.line_starts[index + 1]):
                start = self.line_starts[index]  # with its indentation
                tokens = self.document.count(start, end)
                if tokens <= chunk_size:
                    atoms.append(_Atom(start, end, tokens))
                else:
                    atoms.extend(self.document.atoms(start, end, chunk_size, _WORD_LEVEL))
        return atoms

    def _definition_starts(self, first: int, stop: int, indent: str) -> list[int]:
        """``first``, then the first line of each definition (with its prefix) at ``indent``."""
        starts = [first]
        for index in range(first + 1, stop):
            if self._is_definition(index, indent):
                prefix = self._attached_prefix(index, starts[-1], indent)
                if prefix > starts[-1]:
                    starts.append(prefix)
        return starts

    def _is_definition(self, index: int, indent: str) -> bool:
        line = self.lines[index]
        return (
            line.startswith(indent)
            and len(line) > len(indent)
            and not line[len(indent)].isspace()
            and _DEFINITION.match(line, len(indent)) is not None
        )

    def _attached_prefix(self, definition: int, floor: int, indent: str) -> int:
        """Index of the first decorator/comment line directly above ``lines[definition]``.

        Walks up contiguous non-blank lines at ``indent`` that are decorators, comments or
        their continuations (deeper or closing-bracket lines, as in a multi-line decorator
        call), stopping above ``floor`` or at another definition; the block starts at the
        highest prefix line found.
        """
        first = definition
        for index in range(definition - 1, floor, -1):
            line = self.lines[index]
            if not line.strip() or not line.startswith(indent) or len(line) == len(indent):
                break
            rest = line[len(indent) :]
            if rest[0].isspace() or rest[0] in ")]}":
                continue
            if _DEFINITION.match(rest) or not _PREFIX.match(rest):
                break
            first = index
        return first
