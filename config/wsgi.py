import os

from django.core.wsgi import get_wsgi_application

from config.embedded import ensure_environment

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
ensure_environment()
application = get_wsgi_application()
