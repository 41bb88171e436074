#!/usr/bin/env python
"""Django's command-line utility; attaches to (or starts) the embedded servers when unconfigured."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    from config.embedded import ensure_environment

    services = ensure_environment()
    try:
        execute_from_command_line(sys.argv)
    finally:
        # The last user of the embedded servers stops them; a launcher's keep running.
        if services is not None:
            services.release()


if __name__ == "__main__":
    main()
