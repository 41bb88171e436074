import os

from django.core.asgi import get_asgi_application

from config.embedded import ensure_environment

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
ensure_environment()
application = get_asgi_application()
