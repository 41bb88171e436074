"""Working memory (docs/memory/working.md): an agent session's keys, task state, steps,
tool results, conversation and scratch pad, held in Redis with a TTL, shared between agents through
an inbox, persisted to and loaded from a snapshot row. A sub-domain package of ``memory`` with its
own layers (``models``, ``services``, ``selectors``, ``apis``).

Its algorithm module:

- ``store``: the Redis layout of a session (keys, kinds, TTLs) and its atomic scripts."""
