"""Agentic RAG (docs/rag.md, "Agentic RAG"): search in rounds until the results suffice, then
answer with citations. A sub-domain package of ``rag``: ``services`` (``agentic_query``),
``apis`` and ``urls`` (``POST /api/v1/rag/agentic``).

Its algorithm modules (no views, no writes):

- ``bridge``: the entity a round's best hits name for a description of an entity the question
  makes (``rag.graph.questions``, which graph search's chain gate reads too);
- ``steps``: the steps of a round that read and write text (scoring, reformulation,
  synthesis)."""
