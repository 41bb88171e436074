import os
import sys

from django.core.wsgi import get_wsgi_application

from config.embedded import ensure_environment
from core.heap import freeze_startup_objects

# gunicorn's status for a worker that cannot boot: the master stops instead of starting new
# workers forever (it does so for any other exit status).
WORKER_BOOT_ERROR = 3

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
try:
    ensure_environment()  # in production: refuses to run without SECRET_KEY, DATABASE_URL, ...
    application = get_wsgi_application()
except SystemExit as exc:  # invalid configuration: the message names the setting
    if exc.code not in (None, 0):
        sys.stderr.write(f"{exc.code if isinstance(exc.code, str) else 'invalid configuration'}\n")
        sys.exit(WORKER_BOOT_ERROR)
    raise

# Every view imported now, not on the worker's first request (the MCP SDK too, which the URLconf
# leaves to the first request: core.mcp.endpoint), and what start-up made (it lives as long as
# the worker) kept out of the collector's way (core.heap).
import core.mcp.http  # noqa: E402, F401 - the import is the point

freeze_startup_objects()
