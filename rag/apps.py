from django.apps import AppConfig


class RagConfig(AppConfig):
    verbose_name = "Documents, search and graph"  # the admin's breadcrumbs and app pages
    name = "rag"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from rag.embedded_spaces import register_tables

        register_tables()
