"""A real streaming replica of the suite's embedded PostgreSQL, for the read-replica tests
(tests/core/test_db_replicas.py; docs/operations.md, "Read replicas").

``streaming_replica`` (one per xdist worker and session) takes a base backup of the test server
with ``pg_basebackup -R`` over its unix socket (pg_hba.conf allows ``local replication``), starts
it as a hot standby on a socket of its own in a short temporary directory, waits until it
answers in recovery, and stops and removes it at the end. ``replica_alias`` registers it as a
database alias (``replica1``) on the test database, with the router installed, for one test
(``replica_down``: an alias where nothing listens).
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connections
from psycopg.conninfo import make_conninfo

from config.embedded.files import _pid_alive
from config.embedded.postgres import PG_SOCKET_PORT, EmbeddedPostgres
from core.db_router import replicas_reset

#: The alias the tests read the replica through, and one where no server listens.
REPLICA = "replica1"
DOWN = "replica_down"
#: What a replica test's ``django_db`` mark names: Django refuses other aliases in a test.
DATABASES = ["default", REPLICA, DOWN]
#: How long a replica may take to replay what the primary wrote (seconds).
CATCH_UP_SECONDS = 120


@dataclass
class Standby:
    server: EmbeddedPostgres
    settings_dict: dict[str, Any]

    @property
    def socket_dir(self) -> Path:
        return self.server.socket_dir

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(
            make_conninfo(
                host=str(self.socket_dir),
                user=self.settings_dict["USER"],
                password=self.settings_dict["PASSWORD"],
                dbname=self.settings_dict["NAME"],
            ),
            autocommit=True,
        )


def wait_replayed(standby: Standby) -> None:
    """Until the standby has replayed everything the primary has written so far (its WAL
    position now), no fixed sleep: the replay position is polled."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text")
        target = cursor.fetchone()[0]
    deadline = time.monotonic() + CATCH_UP_SECONDS
    with standby.connect() as conn:
        while True:
            row = conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target]).fetchone()
            if row is not None and row[0]:
                return
            if time.monotonic() > deadline:
                state = conn.execute(
                    "SELECT pg_last_wal_receive_lsn()::text, pg_last_wal_replay_lsn()::text, "
                    "pg_get_wal_replay_pause_state()"
                ).fetchone()
                raise AssertionError(
                    f"the replica did not replay up to {target} in {CATCH_UP_SECONDS} s "
                    f"(received, replayed, pause state: {state})"
                )
            time.sleep(0.01)  # polling the replay position, not waiting a fixed time


def _primary_settings() -> dict[str, Any]:
    settings_dict = copy.deepcopy(connections["default"].settings_dict)
    host = settings_dict.get("HOST") or ""
    if not host.startswith("/") or not (Path(host) / f".s.PGSQL.{PG_SOCKET_PORT}").exists():
        pytest.skip("the read-replica tests base-backup the embedded PostgreSQL (a unix socket)")
    return settings_dict


_SLOT_PREFIX = "engram_test_replica_"


def _admin(primary: dict[str, Any]) -> psycopg.Connection[Any]:
    return psycopg.connect(
        make_conninfo(
            host=primary["HOST"], user=primary["USER"], password=primary["PASSWORD"],
            dbname="postgres",
        ),
        autocommit=True,
    )  # fmt: skip


def _slot_create(primary: dict[str, Any]) -> str:
    """A physical replication slot for this process, after dropping the idle ones of test
    processes that are gone (a run that was killed)."""
    name = f"{_SLOT_PREFIX}{os.getpid()}"
    with _admin(primary) as conn:
        stale = conn.execute(
            "SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE %s AND NOT active",
            [f"{_SLOT_PREFIX}%"],
        ).fetchall()
        for (old,) in stale:
            if not _pid_alive(int(old.removeprefix(_SLOT_PREFIX))):
                conn.execute("SELECT pg_drop_replication_slot(%s)", [old])
        conn.execute("SELECT pg_create_physical_replication_slot(%s, true)", [name])
    return name


def _slot_drop(primary: dict[str, Any], name: str) -> None:
    """Drop the slot once its sender has noticed the standby stopped (a moment, polled)."""
    deadline = time.monotonic() + 30
    with _admin(primary) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT active FROM pg_replication_slots WHERE slot_name = %s", [name]
            ).fetchone()
            if row is None:
                return
            if not row[0]:
                conn.execute("SELECT pg_drop_replication_slot(%s)", [name])
                return
            time.sleep(0.05)


@pytest.fixture(scope="session")
def streaming_replica(django_db_setup: None, django_db_blocker: Any) -> Iterator[Standby]:
    """A hot standby of the test server, streaming from it (see the module's docstring)."""
    with django_db_blocker.unblock():
        primary = _primary_settings()
    # Unix socket paths are short (about 100 bytes): a directory right under /tmp.
    root = Path(tempfile.mkdtemp(prefix="engram-rep-", dir="/tmp"))
    server = EmbeddedPostgres(root)
    started = False
    slot = ""
    try:
        server._prepare_dirs()  # private directories, owned by PostgreSQL's system user as root
        source = make_conninfo(
            host=primary["HOST"], user=primary["USER"], password=primary["PASSWORD"]
        )
        # A slot of its own, reserving WAL from now on: other workers write a lot of WAL (their
        # test databases), which the primary would otherwise recycle before the copy has it.
        slot = _slot_create(primary)
        # -R: standby.signal, primary_conninfo (this connection string) and the slot's name.
        server._pg(
            "pg_basebackup",
            ["-R", "-X", "stream", "-c", "fast", "-S", slot, "-d", source],
            timeout=300,
        )
        options = (
            f"-h '' -k {server.socket_dir} -c unix_socket_permissions=0700 "
            "-c max_connections=200 -c shared_buffers=32MB -c hot_standby=on"
        )
        server._pg(
            "pg_ctl",
            ["-w", "-t", "120", "-o", options, "-l", str(server.log_file), "start"],
            timeout=150,
        )
        started = True
        # Mirrors of the test database for Django's test cases: never flushed or created.
        settings_dict = {
            **primary,
            "HOST": str(server.socket_dir),
            "TEST": {**primary["TEST"], "MIRROR": "default"},
        }
        standby = Standby(server=server, settings_dict=settings_dict)
        with standby.connect() as conn:
            assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
        # Both aliases for the rest of this worker's session: a test case names its databases
        # before its fixtures run. Unused (no router) outside the replica tests.
        nowhere = root / "down"  # a socket directory where no server listens
        nowhere.mkdir()
        alias_add(REPLICA, settings_dict)
        alias_add(DOWN, {**settings_dict, "HOST": str(nowhere)})
        yield standby
    finally:
        alias_remove(REPLICA)
        alias_remove(DOWN)
        if started:
            server._pg("pg_ctl", ["-w", "-t", "60", "-m", "immediate", "stop"], timeout=90)
        if slot:
            _slot_drop(primary, slot)
        shutil.rmtree(root, ignore_errors=True)


def alias_add(alias: str, settings_dict: dict[str, Any]) -> None:
    # A copy of the primary's, complete already (Django's defaults filled in).
    connections.settings[alias] = copy.deepcopy(settings_dict)


def alias_remove(alias: str) -> None:
    if alias in connections.settings:
        connections[alias].close()
        del connections[alias]
        del connections.settings[alias]


@pytest.fixture
def replica_alias(streaming_replica: Standby, settings: Any) -> Iterator[Standby]:
    """``replica1``: the streaming replica on this test's database, the router installed."""
    settings.DATABASE_REPLICAS = (REPLICA,)
    settings.DATABASE_ROUTERS = ["core.db_router.ReplicaRouter"]
    replicas_reset()
    try:
        yield streaming_replica
    finally:
        with streaming_replica.connect() as conn:  # a test that paused replay never leaves it so
            conn.execute("SELECT pg_wal_replay_resume()")
        replicas_reset()
