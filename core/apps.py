from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core: accounts, agents and keys"
    default_auto_field = "django.db.models.BigAutoField"
