"""Knowledge extraction from conversation messages (docs/memory/conversations.md, "Extraction").

``offline``: a deterministic extractor (entities, dates and plain first-person statements);
``llm``: facts, entities and relations written by a model (JSON validated), and the decision on
each fact against the most similar knowledge items. Both only parse and propose: the writes are
``memory.conversations.extraction.services``'s."""
