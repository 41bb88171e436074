"""Wikilinks in markdown: ``[[Title]]``, ``[[Title|display text]]`` and ``[[Title#Heading]]``.

Pure functions, no database. A link's *target* is the text before ``|`` (and before ``#``); it is
matched case-insensitively on a title or an alias, or exactly on a slug (``slugify``). Links are
not links:

- inside code: fenced blocks (``````` or ``~~~``, until a closing fence of the same kind at
  least as long, or the end), and inline code spans (a run of backticks up to the next run of
  the same length, as CommonMark says);
- escaped: ``\\[[not a link]]``;
- empty: ``[[]]``, ``[[ |text]]``, or only an anchor (``[[#Heading]]``, a link within the page).

A target cannot contain ``[``, ``]``, ``|`` or a line break, so in ``[[a [[b]] c]]`` only
``[[b]]`` is a link; display text cannot contain brackets or a line break.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LINK = re.compile(r"\[\[([^\[\]|\n]*)(?:\|([^\[\]\n]*))?\]\]")
_BACKTICKS = re.compile(r"`+")
_NOT_SLUG = re.compile(r"[^\w\s-]")
_SPACES = re.compile(r"\s+")


def slugify(text: str) -> str:
    """Seed 000's slug rule, ``downcase.gsub(/[^a-z0-9\\s-]/, "").gsub(/\\s+/, "-")``, kept for
    every script: letters and digits of any language stay (so a Greek or Japanese title has a
    slug too); for ASCII text the result is the seed's exactly."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = _NOT_SLUG.sub("", text).replace("_", "")
    return _SPACES.sub("-", text.strip())


def normalise_title(text: str) -> str:
    """How titles and aliases compare: case-insensitive, spaces collapsed."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()


@dataclass(frozen=True)
class Wikilink:
    target: str  # the page named, stripped (without display text or anchor)
    display: str | None  # the text after ``|``, stripped; None without a pipe
    anchor: str | None  # the heading after ``#``; None without one
    start: int  # where ``[[`` starts in the text
    end: int  # just after ``]]``


def code_ranges(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` offsets of fenced code blocks and inline code spans, in order."""
    ranges: list[tuple[int, int]] = []
    offset = 0
    fence: str | None = None
    fence_start = 0
    prose_start = 0
    for line in text.splitlines(keepends=True):
        opening = _FENCE.match(line)
        if fence is None:
            if opening:
                ranges.extend(_code_spans(text, prose_start, offset))
                fence, fence_start = opening.group(1), offset
        elif (
            opening
            and opening.group(1)[0] == fence[0]
            and len(opening.group(1)) >= len(fence)
            and not line[opening.end() :].strip()
        ):
            ranges.append((fence_start, offset + len(line)))
            fence, prose_start = None, offset + len(line)
        offset += len(line)
    if fence is not None:
        ranges.append((fence_start, len(text)))  # an unclosed fence runs to the end
    else:
        ranges.extend(_code_spans(text, prose_start, len(text)))
    return ranges


def _code_spans(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Inline code spans between ``start`` and ``end``: a backtick run closes at the next run of
    the same length; an unmatched run is literal text."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text, start, end)]
    i = 0
    while i < len(runs):
        run_start, run_end = runs[i]
        if run_start > start and text[run_start - 1] == "\\":
            i += 1
            continue
        length = run_end - run_start
        closing = next(
            (j for j in range(i + 1, len(runs)) if runs[j][1] - runs[j][0] == length), None
        )
        if closing is None:
            i += 1
            continue
        yield run_start, runs[closing][1]
        i = closing + 1


def _escaped(text: str, position: int) -> bool:
    """Is the character at ``position`` escaped by an odd number of backslashes?"""
    backslashes = 0
    while position - backslashes - 1 >= 0 and text[position - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def parse(text: str) -> list[Wikilink]:
    """The wikilinks of ``text`` in order of appearance (repeats included)."""
    if "[[" not in text:
        return []
    code = code_ranges(text)
    links: list[Wikilink] = []
    ci = 0
    for match in _LINK.finditer(text):
        start = match.start()
        while ci < len(code) and code[ci][1] <= start:
            ci += 1
        if ci < len(code) and code[ci][0] <= start < code[ci][1]:
            continue
        if _escaped(text, start):
            continue
        link = _link(match)
        if link is not None:
            links.append(link)
    return links


def _link(match: re.Match[str]) -> Wikilink | None:
    raw_target, display = match.group(1), match.group(2)
    target, _, anchor = raw_target.partition("#")
    target = target.strip()
    if not target:
        return None
    return Wikilink(
        target=target,
        display=display.strip() if display is not None else None,
        anchor=anchor.strip() if "#" in raw_target else None,
        start=match.start(),
        end=match.end(),
    )


def match_at(text: str, position: int) -> Wikilink | None:
    """The wikilink starting exactly at ``position``, by the link syntax alone: for a markdown
    parser that has already set code and escapes apart (``content.rendering``)."""
    match = _LINK.match(text, position)
    return _link(match) if match is not None else None


def link_text(text: str, link: Wikilink) -> str:
    """The link as written in ``text``."""
    return text[link.start : link.end]


def rewrite(text: str, *, titles: set[str], slugs: set[str], new_title: str) -> tuple[str, int]:
    """``text`` with every link whose target names one of ``titles`` (normalised) or ``slugs``
    pointing at ``new_title`` instead, display text and anchor kept; and how many changed."""
    pieces: list[str] = []
    cursor = 0
    changed = 0
    for link in parse(text):
        if normalise_title(link.target) not in titles and slugify(link.target) not in slugs:
            continue
        anchor = f"#{link.anchor}" if link.anchor is not None else ""
        display = f"|{link.display}" if link.display is not None else ""
        pieces.append(text[cursor : link.start])
        pieces.append(f"[[{new_title}{anchor}{display}]]")
        cursor = link.end
        changed += 1
    pieces.append(text[cursor:])
    return "".join(pieces), changed


# Text that is not prose: a mention inside it is not one to link. Wikilinks (escaped ones too),
# markdown links and images (their text and their URL), autolinks and HTML tags, bare URLs.
_NOT_PROSE = re.compile(
    r"\[\[[^\n]*?\]\]"
    r"|!?\[[^\]\n]*\]\([^)\n]*\)"
    r"|<[^<>\n]*>"
    r"|\b[a-z][a-z0-9+.-]*://\S+",
    re.IGNORECASE,
)


def mention_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    """Any of ``names`` as whole words, any case, any spacing between its words (longer names
    first, so the longest mention wins); None without a name."""
    alternatives = sorted(
        {r"\s+".join(map(re.escape, words)) for name in names if (words := name.split())},
        key=len,
        reverse=True,
    )
    if not alternatives:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)


def link_first_mention(text: str, *, names: Iterable[str], title: str) -> str | None:
    """``text`` with its first plain mention of one of ``names`` made a link to ``title``:
    ``[[title]]`` when the mention reads as the title, else ``[[title|the mention]]`` (as
    written, its spacing collapsed). Mentions inside code spans and blocks, wikilinks, markdown
    links, HTML tags and URLs are not plain. None when there is no plain mention."""
    pattern = mention_pattern(names)
    if pattern is None:
        return None
    skipped = sorted(
        [*code_ranges(text), *((m.start(), m.end()) for m in _NOT_PROSE.finditer(text))]
    )
    for match in pattern.finditer(text):
        start, end = match.span()
        if any(s < end and start < e for s, e in skipped):
            continue
        written = " ".join(match.group(0).split())
        link = f"[[{title}]]" if written == title else f"[[{title}|{written}]]"
        return f"{text[:start]}{link}{text[end:]}"
    return None
