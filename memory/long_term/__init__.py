"""Long-term memory (docs/memory/long-term.md): contexts with their grants, entries with
their history and readings, snapshots, the access log, and the indexes every search of them
reads. A sub-domain package of ``memory`` with its own layers (``models``, ``queue_models`` for
the work a request leaves for a worker, ``services/``, ``selectors``, ``apis/``, ``admin``,
``mcp``).

Its algorithm modules:

- ``context_access``: who may read and write a context (and what was derived from it);
- ``indexing``: what an entry is indexed as (its text with its thread's neighbours);
- ``relevance``: an entry's effective relevance (similarity, importance, confidence, recency),
  read for a search's candidates in one statement;
- ``entry_loading``: entries loaded by id for a search's hits, with only the fields read."""
