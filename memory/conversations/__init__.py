"""Conversations (docs/memory/conversations.md): messages stored as long-term entries of a
conversation context, turns, summaries, and the knowledge extracted from them (``extraction/``,
a sub-domain package of its own). A sub-domain package of ``memory`` with its own layers
(``models``, ``services``, ``selectors``, ``apis``, ``admin``, ``mcp``).

Its algorithm module:

- ``summaries``: a stretch of conversation summarised (by the model, or extractively offline)."""
