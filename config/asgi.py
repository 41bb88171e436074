import os

from django.core.asgi import get_asgi_application

from config.embedded import ensure_environment
from core.heap import freeze_startup_objects

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
ensure_environment()
application = get_asgi_application()
# As config.wsgi: every view imported at start-up, then what start-up made frozen (core.heap).
freeze_startup_objects()
