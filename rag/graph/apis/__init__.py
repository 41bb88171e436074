"""The knowledge graph over HTTP: nodes, edges, neighbours and paths (``nodes``:
``/api/v1/graph/``), and graph RAG's retrieval, context and communities (``retrieval``:
``/api/v1/rag/graph/``)."""
