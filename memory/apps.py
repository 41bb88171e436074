from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # What the graph derives from long-term entries (their entities, mentions, relations)
        # is visible to the readers of the entry's context (rag.visibility): rag never imports
        # memory, so memory registers the rule.
        from memory.context_access import readable_scopes
        from memory.spaces import MEMORY_ENTRIES
        from rag.visibility import scope_reader_register

        scope_reader_register(MEMORY_ENTRIES.name, readable_scopes)
