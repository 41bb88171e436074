"""Knowledge items (docs/memory/knowledge.md; API under /api/v1/knowledge/): stores of
keyed, versioned items with their sources and relationships, searched by their own index. A
sub-domain package of ``memory`` with its own layers (``models``, ``services``,
``index_services`` for the index kept by every write, ``selectors``, ``apis``, ``urls``,
``admin``, ``mcp``)."""
