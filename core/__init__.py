"""core: tenancy and the plumbing every app shares (docs/architecture.md). Its layers are the
usual modules and packages (``models``, ``models_assets``, ``services/``, ``selectors``,
``querysets``, ``apis``, ``urls``, ``admin``, ``tasks``, ``mcp/``: the MCP server and registry).

Its plumbing modules:

- ``actors``, ``permissions``, ``authentication``, ``api_keys``, ``key_cache``, ``throttling``:
  who acts, with which roles and scopes, and how a request proves it;
- ``admin_base``: the admin's base classes, scoped by account and role;
- ``errors``, ``middleware``, ``views``, ``serializers``, ``parsers``, ``pagination``,
  ``schema``, ``converters``: the API's shared pieces (error shape, strict input, cursors);
- ``writes``, ``audit``, ``transactions``, ``db``: writing rows (changed fields only, audit in
  the same transaction, database cascades);
- ``db_router``: which database a read goes to (read replicas for searches, the primary after a
  write; docs/operations.md, "Read replicas");
- ``jobs``, ``periodic``, ``queue``: job runs, periodic schedules, the queues by role and
  enqueueing on commit;
- ``embeddings``, ``llm``, ``openai_client``: the providers;
- ``search``, ``metadata``, ``digests``, ``side_by_side``: search input bounds, metadata
  echoes, the daily digests' registry, independent reads run side by side on threads;
- ``tuning``: the registry of every app's tunables (``<app>/tuning.py``; docs/tuning.md);
- ``redis_client``, ``redis_urls`` (Sentinel's included), ``process_cache``, ``heap``,
  ``health``, ``logging``: process plumbing;
- ``metrics``, ``metrics_scrape``: what Prometheus reads (recorded, and read at scrape time)."""
