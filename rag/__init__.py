"""rag: THE search engine over any search space, knowledge bases and documents, and the knowledge
graph (docs/architecture.md). Its layers are the usual modules (``models``, ``services/``,
``selectors``, ``apis``, ``search_apis``, ``urls``, ``admin``, ``tasks``, ``mcp``, ``spaces``);
its sub-domains are packages with their own layers: ``graph/`` (the knowledge graph) and
``agentic/`` (agentic RAG).

Its algorithm modules (the engine and what it is built of):

- ``search``: the one engine over search spaces (vector, keyword, fusion, thresholds);
- ``keyword``, ``vector``, ``fusion``, ``rerank``, ``late_interaction``, ``granularity``: its
  stages (BM25 postings, pgvector HNSW, RRF and weighted fusion, rerankers, token-level
  rescoring, passage granularity);
- ``evidence``, ``feedback``, ``analysis``, ``tokens``: calibrated evidence, pseudo-relevance
  feedback, query analysis, token counting with the embedding model's tokenizer;
- ``visibility``: what an actor may read of derived data (the visibility of its source);
- ``indexing``, ``extraction``, ``context``, ``digest``: a chunk's indexed text, text extraction
  from uploaded files, a search's context block, the digest of a knowledge base;
- ``chunking``: the chunkers; ``evaluation``: retrieval metrics and BEIR evaluation."""
