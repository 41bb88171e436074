"""Memory: what agents remember, in sub-domain packages, each with its own layers
(docs/architecture.md, "memory"):

- ``working``: a session's working memory in Redis;
- ``short_term``: an agent's entries per session, with an expiry;
- ``long_term``: contexts, entries, snapshots, the access log and their indexes;
- ``pools``: JSON data shared between the agents of an account;
- ``conversations``: messages, turns, summaries, and the knowledge extracted from them;
- ``knowledge``: knowledge items (API under /api/v1/knowledge/);
- ``context``: what reaches an agent from every store (the router across tiers, the memory
  tools of runs, context assembly);
- ``maintenance``: consolidation, cluster maintenance with its jobs and reports, review before
  change, rot across stores.

The app's own layers hold what spans them: ``models`` (every model, imported from the
sub-domains' ``models`` so Django finds them under the ``memory`` label), ``urls`` (the routes
under /api/v1/memory/), ``admin`` and ``apis`` (their ``common`` helpers; ``admin`` imports
every sub-domain's admin), ``mcp`` (every tool), ``tasks``, ``spaces``, ``roles``.

Its shared modules (used by several sub-domains, or found by name by ``core``):

- ``names``: session ids, keys, pool ids and dot paths, checked;
- ``agents``: who a memory belongs to (working and short-term memory are an agent's own);
- ``errors``: the memory tiers' own errors;
- ``redis_store``: the Redis client of working memory and the pools' pub/sub;
- ``tier_index``: the search indexes of short-term memory and pools, kept by every write;
- ``converters``: URL converters for memory names (``urls``);
- ``account_setup``: what memory makes for a new account (``core.services.accounts``);
- ``digest``: what long-term memory took in during a day (``core.digests``)."""
