from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core: accounts, agents and keys"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core import (
            db_router,
            schema,  # noqa: F401  (registers the API key scheme with drf-spectacular)
        )
        from core.metrics import signals_connect

        signals_connect()
        db_router.signals_connect()
