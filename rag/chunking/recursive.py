"""The recursive strategy: paragraphs, then finer units, packed greedily with overlap."""

from __future__ import annotations

from rag.chunking.base import ChunkPiece, _validate
from rag.chunking.outline import _heading_lookup
from rag.chunking.packing import _Document, _pieces


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
