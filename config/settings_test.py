"""Settings for the test suite: the real servers, with eager Celery and fast password hashing."""

import os

os.environ.setdefault("ENGRAM_ENV", "test")

from config.settings import *  # noqa: F403
from config.settings import CACHES, LOGGING

CELERY_TASK_ALWAYS_EAGER = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Each xdist worker gets its own cache namespace so parallel tests never see each other's keys.
CACHES["default"]["KEY_PREFIX"] = f"engram-test-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
LOGGING["root"]["level"] = "WARNING"
LOGGING["handlers"]["default"]["formatter"] = "console"
