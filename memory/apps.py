from django.apps import AppConfig


class MemoryConfig(AppConfig):
    verbose_name = "Agents' memory"  # the admin's breadcrumbs and app pages
    name = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memory.embedded_spaces import register_tables

        register_tables()

        # What the graph derives from long-term entries (their entities, mentions, relations)
        # is visible to the readers of the entry's context (rag.visibility): rag never imports
        # memory, so memory registers the rule.
        from memory.long_term.context_access import readable_scopes
        from memory.spaces import MEMORY_ENTRIES
        from rag.visibility import scope_reader_register

        scope_reader_register(MEMORY_ENTRIES.name, readable_scopes)

        # Knowledge items' nodes, and the nodes and edges extraction derives from a context,
        # are memory's: the graph asks for memory's write role for them (rag.graph.node_types).
        from memory.knowledge.services import KNOWLEDGE_ENTITY_TYPE, WRITE_KNOWLEDGE
        from rag.graph.services import node_source_register, node_type_register

        node_type_register(KNOWLEDGE_ENTITY_TYPE, WRITE_KNOWLEDGE)
        node_source_register(MEMORY_ENTRIES.name, WRITE_KNOWLEDGE)
