"""Settings for the test suite: the real servers, with eager Celery and fast password hashing."""

import os
import tempfile
from pathlib import Path

os.environ.setdefault("ENGRAM_ENV", "test")

from urllib.parse import parse_qsl, urlencode, urlsplit

from config.settings import *  # noqa: F403
from config.settings import CACHES, ENV, LOGGING, REDIS_URL, _celery_url


def _other_database(redis_url: str, db: int) -> str:
    parts = urlsplit(redis_url)
    if parts.scheme == "unix":
        query = dict(parse_qsl(parts.query))
        query["db"] = str(db)
        # urlunsplit would drop the empty host: unix:///path must keep its three slashes.
        return f"unix://{parts.netloc}{parts.path}?{urlencode(query)}"
    return parts._replace(path=f"/{db}").geturl()


# A test run may share the embedded Valkey with a running `./engram run`: the suite uses its own
# database there, so the server's worker never consumes the suite's tasks (nor the reverse).
# Configured servers (REDIS_URL) are the caller's choice and used as given.
if REDIS_URL.startswith("unix://") and not ENV.CELERY_BROKER_URL:
    REDIS_URL = _other_database(REDIS_URL, 1)
    CACHES["default"]["LOCATION"] = REDIS_URL
    CELERY_BROKER_URL = _celery_url(REDIS_URL)

CELERY_TASK_ALWAYS_EAGER = True
# Entries' token readings cost a model pass a write; the tests that need them turn them on
# (tests/memory/test_entry_readings.py), and every other graph search reads its candidates itself,
# with the same scores.
MEMORY_ENTRY_READINGS = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Each xdist worker gets its own cache namespace so parallel tests never see each other's keys.
CACHES["default"]["KEY_PREFIX"] = f"engram-test-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
# Likewise working memory's keys and the pools' channels: workers' databases hand out the same
# account and agent ids.
MEMORY_REDIS_PREFIX = f"engram-test-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
LOGGING["root"]["level"] = "WARNING"
LOGGING["handlers"]["default"]["formatter"] = "console"
# Export archives and uploaded imports (core.PortabilityJob) go to a directory of the run's own,
# never the data directory's media.
MEDIA_ROOT = Path(tempfile.gettempdir()) / (
    f"engram-test-media-{os.getpid()}-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
)
