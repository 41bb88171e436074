"""Token-budgeted context blocks for an LLM prompt, built from search hits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag.search import SearchHit


@dataclass(frozen=True)
class ContextBlock:
    text: str
    sources: list[dict[str, Any]]
    token_count: int
    truncated: bool


def context_block_build(hits: list[SearchHit], *, token_budget: int) -> ContextBlock:
    """Number the passages best first while they fit the budget; cite each one's source.

    A passage that does not fit is skipped (a smaller later one may still fit) rather than cut
    mid-sentence; ``truncated`` says whether anything was left out.
    """
    parts: list[str] = []
    sources: list[dict[str, Any]] = []
    used = 0
    truncated = False
    for hit in hits:
        cost = hit.token_count + 8  # the citation header
        if used + cost > token_budget:
            truncated = True
            continue
        number = len(sources) + 1
        heading = " › ".join(hit.heading_path)
        header = f"[{number}] {hit.document_title}" + (f" › {heading}" if heading else "")
        parts.append(f"{header}\n{hit.text.strip()}")
        sources.append(
            {
                "ref": number,
                "document_id": hit.document_id,
                "chunk_id": hit.chunk_id,
                "title": hit.document_title,
                "heading_path": hit.heading_path,
                "score": hit.score,
            }
        )
        used += cost
    return ContextBlock(
        text="\n\n".join(parts), sources=sources, token_count=used, truncated=truncated
    )
