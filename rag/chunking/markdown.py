"""The markdown strategy: chunks per heading section, never splitting fenced code blocks."""

from __future__ import annotations

import dataclasses
from bisect import bisect_right
from collections.abc import Iterator

from rag.chunking.base import ChunkPiece, _trimmed, _validate
from rag.chunking.outline import MarkdownOutline, markdown_outline
from rag.chunking.packing import _Atom, _Document, _pieces


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
