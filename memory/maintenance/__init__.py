"""Memory upkeep across the stores (docs/memory/maintenance.md, docs/memory/rot.md,
docs/memory/review.md): consolidation of short-term memory into long-term, cluster
maintenance (merges, rewrites) with its jobs and reports, the review of changes before they
apply (pending changes and change policies), and rot across stores. A sub-domain package of
``memory`` with its own layers (``models/``, ``services/``, ``selectors/``, ``apis/``,
``admin/``, ``mcp``, ``urls`` for /api/v1/maintenance/).

Its algorithm modules:

- ``clustering``: near-duplicate clusters of entries (what cluster maintenance works on);
- ``statements``: what a memory says, one claim at a time;
- ``fact_check``: whether what stays current still says every statement of what is archived."""
