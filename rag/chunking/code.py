"""The code strategy: top-level definitions packed greedily, split at nested definitions."""

from __future__ import annotations

import dataclasses
import re
from itertools import pairwise

from rag.chunking.base import _LINE_BREAK, ChunkPiece, _no_heading, _trimmed, _validate
from rag.chunking.packing import _WORD_LEVEL, _Atom, _Document, _pieces

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
