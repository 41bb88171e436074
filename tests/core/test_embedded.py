"""The embedded-server adapter on a private data directory: start, attach, crash recovery, stop."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psycopg
import pytest
import redis

from config.embedded import EmbeddedServices, _pid_alive, shared_buffers_mb

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
