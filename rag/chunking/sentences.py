"""A regular-expression sentence splitter for English prose."""

from __future__ import annotations

import re

from rag.chunking.base import _SEP, _SEPARATORS, _trimmed

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
