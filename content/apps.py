from django.apps import AppConfig


class ContentConfig(AppConfig):
    verbose_name = "Wiki"  # the admin's breadcrumbs and app pages
    name = "content"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from content.embedded_spaces import register_tables

        register_tables()

        # Page and article nodes are rewritten on every link sync, by the page's author, and
        # curated by operators: the graph's own write roles govern them (rag.graph.node_types).
        from content.services.links import ARTICLE, PAGE
        from core.actors import WRITE_GRAPH
        from rag.graph.services import node_type_register

        node_type_register(PAGE, WRITE_GRAPH)
        node_type_register(ARTICLE, WRITE_GRAPH)
