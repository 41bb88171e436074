"""Embedded PostgreSQL (with pgvector) and Valkey servers for the zero-configuration default.

One small adapter: everything else in Engram only sees the URLs it returns. Both servers listen
only on unix sockets inside the data directory (no TCP port at all), so they can never collide with
system servers on 5432 / 6379, and they are private to the user running Engram: the data directory
and the socket directories are closed to other users (0700), PostgreSQL asks for a password
(scram-sha-256) and Valkey for its ``requirepass``. Both passwords are generated on first use into
0600 files in the data directory (``postgres.password``, ``valkey.password``) and travel in the
URLs this module returns.

Sharing: every process that calls ``EmbeddedServices.ensure()`` starts the servers if they are
down, or attaches to them, and takes a lease (a file named after its pid). ``release()`` drops the
lease, and the last process to leave stops the servers, so a test run that finishes never stops
a server that a long ``manage.py`` command is still using. The launcher stops everything on exit
(``stop_all``): Ctrl-C means "stop Engram". Leases of dead processes are ignored.

The servers themselves are ``postgres.py`` and ``valkey.py``; ``files.py`` holds what they share
(private files, secrets, the lock, process checks).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from config.embedded.files import EmbeddedServiceError, _file_lock, _pid_alive, make_private_dir
from config.embedded.postgres import EmbeddedPostgres
from config.embedded.valkey import EmbeddedValkey
from config.env import BASE_DIR

logger = logging.getLogger(__name__)


@dataclass
class EmbeddedServices:
    """Both embedded servers for one data directory."""

    data_dir: Path
    started: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.data_dir = self.data_dir.resolve()
        self.postgres = EmbeddedPostgres(self.data_dir)
        self.valkey = EmbeddedValkey(self.data_dir)
        self.lock_file = self.data_dir / "run" / ".lock"
        self.lease_dir = self.data_dir / "run" / "leases"
        self._lease = self.lease_dir / str(os.getpid())

    def _live_leases(self) -> list[Path]:
        live = []
        for lease in self.lease_dir.glob("*"):
            if lease.name.isdigit() and _pid_alive(int(lease.name)):
                live.append(lease)
            else:
                lease.unlink(missing_ok=True)  # its process is gone
        return live

    def ensure(self, *, postgres: bool = True, redis: bool = True) -> dict[str, str]:
        """Attach to or start the servers; return the env vars that point at them."""
        env: dict[str, str] = {}
        with _file_lock(self.lock_file):
            if postgres:
                if not self.postgres.is_running():
                    logger.info("starting embedded PostgreSQL in %s", self.postgres.pgdata)
                    self.postgres.start()
                    self.started.append("postgres")
                else:  # a server started by an older Engram may still be open: close it
                    self.postgres.secure_dirs()
                    try:
                        self.postgres.require_password()
                    except EmbeddedServiceError as exc:
                        # Started by an older Engram with other groups, it may be unable to
                        # reread its configuration in the directories just closed: restart it.
                        logger.warning("restarting embedded PostgreSQL: %s", exc)
                        self.postgres.stop()
                        self.postgres.start()
                env["DATABASE_URL"] = self.postgres.url
            if redis:
                if not self.valkey.is_running():  # also true of one that wants no password
                    logger.info("starting embedded Valkey in %s", self.valkey.dir)
                    self.valkey.start()
                    self.started.append("valkey")
                env["REDIS_URL"] = self.valkey.url
            make_private_dir(self.lease_dir)
            self._lease.touch()
        return env

    def release(self) -> bool:
        """Drop this process's lease; stop the servers if no live lease remains.

        Returns whether the servers were stopped.
        """
        with _file_lock(self.lock_file):
            self._lease.unlink(missing_ok=True)
            if self._live_leases():
                return False
            self.valkey.stop()
            self.postgres.stop()
            return True

    def stop_all(self) -> None:
        with _file_lock(self.lock_file):
            self.valkey.stop()
            self.postgres.stop()
            for lease in self.lease_dir.glob("*"):
                lease.unlink(missing_ok=True)


def default_data_dir() -> Path:
    configured = os.environ.get("ENGRAM_DATA_DIR")
    if configured:
        return Path(configured).expanduser().resolve()
    # The settings' default (config.env.ENGRAM_DATA_DIR): <project>/.engram.
    return (BASE_DIR / ".engram").resolve()


def ensure_environment(data_dir: Path | None = None) -> EmbeddedServices | None:
    """For entry points: start or attach to embedded servers for any URL the environment lacks.

    Sets ``DATABASE_URL`` / ``REDIS_URL`` in ``os.environ`` so child processes inherit them.
    Returns the services object (whose ``owned`` list says what this process must stop), or
    ``None`` when both URLs were configured already.
    """
    from config.env import load_env

    # Validate first: production refuses to run without configured servers (SystemExit naming
    # them) instead of quietly starting throwaway embedded ones.
    load_env()
    need_pg = not os.environ.get("DATABASE_URL")
    need_redis = not os.environ.get("REDIS_URL")
    if not (need_pg or need_redis):
        return None
    services = EmbeddedServices(data_dir or default_data_dir())
    os.environ.update(services.ensure(postgres=need_pg, redis=need_redis))
    return services
