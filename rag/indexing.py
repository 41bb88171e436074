"""What a chunk is indexed as: its text behind the document title and headings it sits under."""

from __future__ import annotations

from collections.abc import Sequence

# A context part already near the start of the chunk (its own heading line, the title of a
# document's first chunk) is not repeated.
_LEAD_CHARS = 300


def indexed_text(*, title: str, heading_path: Sequence[str], text: str) -> str:
    """The text a chunk is embedded and BM25-indexed as (the stored chunk text is unchanged).

    A passage cut from the middle of a document loses its subject; its title and heading path
    give it back, for both the vector and the keyword index.
    """
    lead = text[:_LEAD_CHARS]
    context = [part for part in (title, *heading_path) if part and part not in lead]
    if not context:
        return text
    return " › ".join(context) + "\n\n" + text
