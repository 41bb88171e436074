"""What reaches an agent from every store at once (docs/memory.md): the router across the tiers
(search, read, write, stats: ``services/router``, ``selectors/router``, ``selectors/search``),
the memory tools of agent runs (``services/tools``, ``selectors/runs``) and context assembly
within a token budget. A sub-domain package of ``memory`` with its own layers (``services/``,
``selectors/``, ``apis/``, ``mcp/``, ``admin`` for the context preview).

Its algorithm modules (and packages):

- ``assembly``: an agent's LLM context for a query, from every store, within a hard budget;
- ``task_types``: what an agent is doing when it asks for context (its examples in ``data/``);
- ``run_budget``: an agent run's memory-tool counters in Redis, with its search budget;
- ``structuring``: the memory tools' structuring step (free text into a memory, or a refusal);
- ``evaluation``: retrieval and context evaluated on LoCoMo (``memory_eval``, bench/memory)."""
