"""Split extracted text into chunks whose sizes are measured in embedding-model tokens.

Every strategy returns ``ChunkPiece`` rows in document order. Each chunk's text is exactly
``text[start_char:end_char]`` of the input and ends on a non-whitespace character; it starts on
one too, except that code chunks start at a line start and keep its indentation. Its
``token_count`` is what ``rag.tokens.count_tokens`` reports for that text. Apart from the
documented exception of oversized markdown code blocks, no chunk exceeds ``chunk_size`` tokens,
and every non-whitespace character of the input lies in at least one chunk.

Modules, each depending only on those listed before it: ``base`` (ChunkPiece, size limits,
whitespace and span helpers), ``sentences`` (sentence_spans), ``packing`` (atoms, token counts
and greedy packing), ``outline`` (markdown headings and fences), one module per strategy
(``recursive``, ``markdown``, ``semantic``, ``code``) and ``dispatch`` (chunk_document).
"""

from rag.chunking.base import MAX_CHUNK_SIZE, MIN_CHUNK_SIZE, ChunkPiece, EmbedFunction
from rag.chunking.code import chunk_code
from rag.chunking.dispatch import CHUNKER_VERSION, STRATEGIES, chunk_document, chunker_signature
from rag.chunking.markdown import chunk_markdown
from rag.chunking.outline import MarkdownHeading, MarkdownOutline, markdown_outline
from rag.chunking.recursive import chunk_recursive
from rag.chunking.semantic import DEFAULT_BREAKPOINT_PERCENTILE as DEFAULT_BREAKPOINT_PERCENTILE
from rag.chunking.semantic import chunk_semantic
from rag.chunking.sentences import sentence_spans

__all__ = [
    "CHUNKER_VERSION",
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
    "chunker_signature",
    "markdown_outline",
    "sentence_spans",
]
