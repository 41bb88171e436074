"""The semantic strategy: sentences grouped by embedding similarity, breaking at topic shifts."""

from __future__ import annotations

import dataclasses

import numpy as np

from rag.chunking.base import _PARAGRAPH_BREAK, ChunkPiece, EmbedFunction, _split, _validate
from rag.chunking.outline import _heading_lookup
from rag.chunking.packing import _LINE, _Atom, _Document, _pieces
from rag.chunking.sentences import sentence_spans

DEFAULT_BREAKPOINT_PERCENTILE = 25.0


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
