"""The MCP SDK (about a second of imports) is loaded by the web server and the first ``/mcp``
request, not by every process that loads the URLconf: the Celery worker and beat run Django's
checks, which load it (core.mcp.endpoint)."""

from __future__ import annotations

import subprocess
import sys

from config.env import BASE_DIR

PROBE = """
import os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from django.urls import get_resolver
get_resolver().url_patterns
print("mcp" in sys.modules)
"""


def test_loading_the_urlconf_leaves_the_sdk_unimported() -> None:
    probe = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=BASE_DIR, capture_output=True, text=True, timeout=120
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.strip().splitlines()[-1] == "False"
