#!/usr/bin/env python
"""Django's command-line utility; attaches to (or starts) the embedded servers when unconfigured."""

import os
import signal
import sys
from typing import Any


def _release_on_termination(services: Any) -> None:
    """SIGTERM or SIGHUP (a desktop client quitting ``./engram mcp``, a closed terminal) ends the
    command as those signals do by default, but drops its lease first: the last user of the
    embedded servers stops them, instead of leaving them running for nobody. Immediately, as
    the default would: a blocked read (the MCP server's stdin) cannot hold the exit up."""

    def terminate(signum: int, frame: object) -> None:
        try:
            services.release()
        finally:
            os._exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, terminate)


def _default_termination() -> None:
    """The release below is under way: a signal now must not start a second one (its file lock
    would wait for the first forever)."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    from config.embedded import ensure_environment

    services = ensure_environment()
    if services is not None:
        _release_on_termination(services)
    try:
        execute_from_command_line(sys.argv)
    finally:
        # The last user of the embedded servers stops them; a launcher's keep running.
        if services is not None:
            _default_termination()
            services.release()


if __name__ == "__main__":
    main()
