import os

from django.core.asgi import get_asgi_application
from django.urls import get_resolver

from config.embedded import ensure_environment
from core.heap import freeze_startup_objects

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
ensure_environment()
application = get_asgi_application()
# As config.wsgi: every view imported at start-up, then what start-up made frozen (core.heap).
get_resolver().url_patterns  # noqa: B018 - the property imports the URLconf
freeze_startup_objects()
