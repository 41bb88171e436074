"""Short-term memory (docs/memory/short-term.md): an agent's entries per session with an
expiry, searched by their own BM25 index (``memory.tier_index``), pruned by a periodic task. A
sub-domain package of ``memory`` with its own layers (``models``, ``services``, ``selectors``,
``apis``, ``admin``)."""
