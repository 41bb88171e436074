"""The knowledge graph (docs/rag.md, "Knowledge graph"; docs/architecture.md): nodes and typed
edges of an account, the graph built from text, its communities, graph retrieval and graph RAG.
A sub-domain package of ``rag`` with its own layers (``models``, ``services/``, ``selectors``,
``apis/``, ``urls``, ``admin/``); other apps use only ``rag.graph.selectors`` (reads) and
``rag.graph.services`` (writes, ``node_ensure``, node-type permissions), an import contract
(``[tool.importlinter]`` in pyproject.toml) enforces it.

Its algorithm modules (no views, no writes of their own):

- ``nodes``: one node or edge at a time, hybrid node search, what an actor may see;
- ``node_hits``: node search explained (every mode, graph mode's walk and communities), the one
  search behind ``GET /graph/nodes?query=`` and MCP ``search_knowledge_graph``;
- ``walks``: walks over many edges (neighbours, reachability, shortest paths, cycles);
- ``relations``: the relation types and walk directions apps give their edges;
- ``owned``: the reads other apps make of the nodes they own (through ``selectors``);
- ``node_types``: which roles govern the writes of each node type (registered by the apps);
- ``names``: name normalisation, sentence and name-run splitting;
- ``entities``, ``entities_llm``: entity (and relation) extraction, offline and by the model;
- ``relation_patterns``, ``relation_lexicon``: the offline extractor's relation patterns;
- ``graph_types``: the shapes graph search answers with;
- ``seeds``, ``ppr``, ``retrieval``, ``staged``, ``gate``, ``chunks``, ``bridges``: graph
  retrieval (seeds, personalised PageRank, the staged ranking, the gate, chunk search in graph
  mode, a hit's entities); ``questions``: the descriptions a question makes of an entity, which
  the gate reads hop by hop and agentic RAG resolves round by round;
- ``communities``: reading the Leiden communities an actor may see;
- ``graph_rag``: graph RAG's retrieval through communities and its token-budgeted context;
- ``drawing``: a node's neighbourhood laid out for the admin;
- ``portability``: the graph's kinds of an account's export and import (docs/portability.md).

Nothing is imported here: ``rag.models`` imports ``rag.graph.models`` while Django loads the
apps, before the modules above can be."""
