"""Markdown structure: ATX headings and fenced code blocks, and heading paths at an offset."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass

from rag.chunking.base import _no_heading

# Content types whose extracted text marks headings with "# " lines (HTML extraction writes
# them), so the recursive and semantic strategies can label chunks with a heading path too.
_HEADED_CONTENT_TYPES = frozenset({"text/markdown", "text/html"})


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


def _heading_lookup(text: str, content_type: str) -> Callable[[int], tuple[str, ...]]:
    if content_type in _HEADED_CONTENT_TYPES:
        return markdown_outline(text).heading_path_at()
    return _no_heading
