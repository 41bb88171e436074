"""chunk_document: run the chunking strategy a knowledge base is configured with."""

from __future__ import annotations

from rag.chunking.base import ChunkPiece, EmbedFunction, _validate
from rag.chunking.code import chunk_code
from rag.chunking.markdown import chunk_markdown
from rag.chunking.recursive import chunk_recursive
from rag.chunking.semantic import chunk_semantic

STRATEGIES = ("recursive", "markdown", "semantic", "code")
# Bump when a strategy's output changes for the same input and settings: documents chunked
# by an older version show in the rot report (docs/memory/rot.md).
CHUNKER_VERSION = 1


def chunker_signature(*, strategy: str, chunk_size: int, chunk_overlap: int) -> str:
    """What built a document's chunks (``Document.indexed_chunker``): the chunker's version and
    the knowledge base's chunking settings, e.g. ``v1:markdown:256:32``."""
    return f"v{CHUNKER_VERSION}:{strategy}:{chunk_size}:{chunk_overlap}"


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
