"""``./engram run``: one command that runs all of Engram on its embedded defaults.

Starts (or re-attaches to) the embedded PostgreSQL and Valkey servers for any of DATABASE_URL /
REDIS_URL left unset, migrates, creates the periodic schedules and (first start only) a demo
account, then runs the web server, one Celery worker (consuming the three queues: interactive,
ingestion, maintenance; with ``CELERY_WORKER_PER_QUEUE`` one worker per queue) and Celery beat,
and supervises them.
"Engram is up" is printed once ``/readyz`` answers 200, never before. Web and worker processes
write their Prometheus metrics into one directory (``PROMETHEUS_MULTIPROC_DIR``, emptied at each
start; core/metrics.py) that ``/metrics`` adds up.

- A process that exits (web, worker, beat, or an embedded server) is started again after a
  backoff (1 s, doubling up to ``ENGRAM_RESTART_BACKOFF_MAX``, 30 s by default); the others keep
  running. Only repeated fast failures (a process failing ``RESTART_LIMIT`` times within
  ``RESTART_WINDOW`` seconds) stop everything, with the reason printed.
- Ctrl-C, SIGTERM or SIGHUP stops every process it started, servers included: each child's main
  process is asked to stop (a Celery worker finishes its current tasks and stops its own pool,
  gunicorn its workers), and what still runs after ``STOP_TIMEOUT`` is killed with its whole
  process group. Output never gets in the way: the children's output is relayed through the
  launcher, and when its own output goes away (a closed stdout, ``| head -1``, a ``| tee``
  killed by the same Ctrl-C) it keeps running and still stops everything.
- A launcher killed with ``kill -9`` leaves a state file behind (each child's pid and start
  time); the next start kills those orphans, and only processes that are still the ones recorded.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, BinaryIO, TextIO

import psutil

from config.embedded import (
    EmbeddedServiceError,
    EmbeddedServices,
    default_data_dir,
)
from config.env import BASE_DIR, load_env
from core.metrics import MULTIPROC_ENV, multiprocess_dir_clean
from core.queue import QUEUES

logger = logging.getLogger("engram.launcher")

STOP_TIMEOUT = 20.0
POLL_INTERVAL = 0.5
RESTART_LIMIT = 5  # failures of one process within RESTART_WINDOW stop Engram
RESTART_WINDOW = 60.0
BACKOFF_FIRST = 1.0  # doubling up to ENGRAM_RESTART_BACKOFF_MAX
# Two readings of one process's start time differ by clock adjustments at most.
CREATE_TIME_TOLERANCE = 1.0
# "Engram is up" waits for /readyz; past this many seconds the launcher says what is not ready.
READY_PATIENCE = 120.0
READY_PROBE_TIMEOUT = 10.0


class Output:
    """The launcher's stdout, shared by its messages and its children's relayed output.

    Writing never raises: once the reader is gone (or stdout was closed to begin with), output is
    dropped and stdout points at /dev/null, so not even the interpreter's last flush complains.
    """

    def __init__(self, stream: TextIO | None) -> None:
        self._fh: BinaryIO | None = getattr(stream, "buffer", None)
        # Reentrant: the signal handler logs, and may interrupt the main thread mid-write.
        self._lock = threading.RLock()

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._fh is None:
                return
            try:
                self._fh.write(data)
                self._fh.flush()
            except (OSError, ValueError):
                self._fh = None
                with contextlib.suppress(OSError, ValueError):
                    devnull = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(devnull, sys.stdout.fileno())
                    os.close(devnull)


OUTPUT = Output(sys.stdout)


def log(message: str) -> None:
    OUTPUT.write(f"[engram] {message}\n".encode())


def _relay(stream: IO[bytes]) -> None:
    """Copy a child's output to ours, line by line, until every writer has closed the pipe."""
    with stream:
        for line in iter(stream.readline, b""):
            OUTPUT.write(line)


@dataclass
class Failures:
    """Restart accounting for one process: backoff, and when to give up."""

    times: deque[float] = field(default_factory=deque)

    def record(self, now: float) -> int:
        """Count a failure; return how many happened within the window."""
        self.times.append(now)
        while self.times and now - self.times[0] > RESTART_WINDOW:
            self.times.popleft()
        return len(self.times)

    def backoff(self, most: float) -> float:
        return float(min(most, BACKOFF_FIRST * 2 ** max(0, len(self.times) - 1)))


@dataclass
class Child:
    name: str
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None
    restart_at: float = 0.0
    failures: Failures = field(default_factory=Failures)


@dataclass
class Server:
    """An embedded server the launcher watches: ``alive`` checks it, ``start`` brings it back."""

    name: str
    alive: Callable[[], bool]
    start: Callable[[], object]
    down_since: float | None = None
    restart_at: float = 0.0
    failures: Failures = field(default_factory=Failures)


class GiveUp(Exception):
    """A process keeps failing: stop Engram (the message says why)."""


class Launcher:
    def __init__(self) -> None:
        self.env_settings = load_env()
        self.data_dir = default_data_dir()
        self.run_dir = self.data_dir / "run"
        self.state_file = self.run_dir / "launcher.json"
        self.children: dict[str, Child] = {}
        self.servers: list[Server] = []
        self.services: EmbeddedServices | None = None
        self.env = dict(os.environ)
        # Children write into a pipe the launcher drains: unbuffered, their lines come in order.
        self.env["PYTHONUNBUFFERED"] = "1"
        self._stopping = False
        self._supervising = False
        self._lock_fh: IO[str] | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def run(self) -> int:
        # Handlers first: a signal during start-up aborts it and still stops what was started.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        self.run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._take_lock()
        try:
            self._reap_orphans()
            self._start_services()
            self._manage("engram_prepare")  # migrate, schedules, first start's demo account
            self._metrics_dir()
            self._start_children()
            threading.Thread(target=self._announce_when_ready, daemon=True).start()
            return self._supervise()
        except KeyboardInterrupt:
            return 0
        except (GiveUp, EmbeddedServiceError) as exc:
            log(str(exc))
            return 1
        finally:
            self.shutdown()

    def _take_lock(self) -> None:
        # Held for the launcher's lifetime; the OS releases it however the process ends.
        self._lock_fh = (self.run_dir / "launcher.lock").open("a+")
        try:
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SystemExit(
                f"Another Engram launcher is running on {self.data_dir}; stop it first."
            ) from None

    def _reap_orphans(self) -> None:
        """Kill what a previous launcher (killed with -9) left running, and nothing else."""
        if not self.state_file.exists():
            return
        try:
            state = json.loads(self.state_file.read_text())
        except ValueError:
            state = {}
        for name, recorded in state.get("children", {}).items():
            if not isinstance(recorded, dict):
                continue  # an older launcher recorded no start time: the pid proves nothing
            pid, create_time = recorded.get("pid"), recorded.get("create_time")
            if not isinstance(pid, int) or not isinstance(create_time, int | float):
                continue
            try:
                proc = psutil.Process(pid)
                same = abs(proc.create_time() - create_time) <= CREATE_TIME_TOLERANCE
            except psutil.Error:
                continue  # gone
            if not same:
                continue  # the pid now belongs to an unrelated process
            log(f"stopping {name} (pid {pid}) left by a previous run")
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        self.state_file.unlink(missing_ok=True)
        # Servers left running are re-attached to (and owned) below; Valkey's stale pid and
        # PostgreSQL's postmaster.pid are handled by the adapter.

    def _start_services(self) -> None:
        need_pg = not self.env.get("DATABASE_URL")
        need_redis = not self.env.get("REDIS_URL")
        if not (need_pg or need_redis):
            return
        log("starting embedded servers in " + str(self.data_dir))
        services = self.services = EmbeddedServices(self.data_dir)
        self.env.update(services.ensure(postgres=need_pg, redis=need_redis))
        if need_pg:
            self.servers.append(
                Server(
                    "postgres",
                    alive=lambda: bool(services.postgres.pid()),
                    start=lambda: services.ensure(postgres=True, redis=False),
                )
            )
        if need_redis:
            self.servers.append(
                Server(
                    "valkey",
                    alive=lambda: bool(services.valkey._pid()),
                    start=lambda: services.ensure(postgres=False, redis=True),
                )
            )

    def _manage(self, *args: str) -> None:
        proc = subprocess.Popen(
            [sys.executable, str(BASE_DIR / "manage.py"), *args],
            env=self.env,
            cwd=BASE_DIR,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            assert proc.stdout is not None
            _relay(proc.stdout)
            code = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        if code != 0:
            raise GiveUp(f"manage.py {args[0]} failed with exit code {code}; stopping Engram")

    def _spawn(self, child: Child) -> None:
        # Own session: a terminal Ctrl-C reaches only the launcher, which stops children in order.
        proc = subprocess.Popen(
            child.argv,
            env=self.env,
            cwd=BASE_DIR,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert proc.stdout is not None
        threading.Thread(target=_relay, args=(proc.stdout,), daemon=True).start()
        child.proc = proc
        self._write_state()

    def _metrics_dir(self) -> None:
        """Web workers and Celery pool processes write their metrics into one directory, which
        /metrics adds up (core.metrics); what a previous run left there is removed first."""
        configured = self.env.get(MULTIPROC_ENV)
        directory = Path(configured) if configured else self.data_dir / "run" / "metrics"
        multiprocess_dir_clean(directory)
        self.env[MULTIPROC_ENV] = str(directory)

    def _start_children(self) -> None:
        s = self.env_settings
        bind = f"{s.ENGRAM_HOST}:{s.ENGRAM_PORT}"
        python = sys.executable
        argvs = {
            "web": [
                *(python, "-m", "gunicorn", "config.wsgi:application", "--bind", bind),
                *("--config", "python:config.gunicorn"),
                *("--workers", str(s.WEB_CONCURRENCY), "--threads", "4"),
                *("--worker-class", "gthread", "--timeout", "120", "--access-logfile", "-"),
            ],
            **self._workers(python),
            "beat": [
                *(python, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO"),
                *("--pidfile", str(self.run_dir / "beat.pid")),
            ],
        }
        for name, argv in argvs.items():
            self.children[name] = child = Child(name, argv)
            self._spawn(child)

    def _workers(self, python: str) -> dict[str, list[str]]:
        """One worker on every queue ("worker"), or with CELERY_WORKER_PER_QUEUE one per queue
        ("worker-<queue>"), each with CELERY_WORKER_CONCURRENCY pool processes."""
        s = self.env_settings
        base = [python, "-m", "celery", "-A", "config", "worker", "--loglevel", "INFO"]
        base += ["--concurrency", str(s.CELERY_WORKER_CONCURRENCY)]
        if not s.CELERY_WORKER_PER_QUEUE:
            return {"worker": [*base, "--queues", ",".join(QUEUES), "--hostname", "engram@%h"]}
        return {
            f"worker-{queue}": [*base, "--queues", queue, "--hostname", f"{queue}@%h"]
            for queue in QUEUES
        }

    def _write_state(self) -> None:
        children = {}
        for name, child in self.children.items():
            if child.proc is None:
                continue
            with contextlib.suppress(psutil.Error):
                create_time = psutil.Process(child.proc.pid).create_time()
                children[name] = {"pid": child.proc.pid, "create_time": create_time}
        state = {"launcher": os.getpid(), "children": children}
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        tmp.replace(self.state_file)

    def _announce_when_ready(self) -> None:
        """Say "Engram is up" once ``/readyz`` answers 200, not before: polled while the
        supervisor runs (a child that dies meanwhile is restarted as usual). Past
        ``READY_PATIENCE`` seconds it says what is not ready yet, and keeps waiting."""
        s = self.env_settings
        url = f"http://{s.ENGRAM_HOST}:{s.ENGRAM_PORT}"
        probe = _probe_url(s.ENGRAM_HOST, s.ENGRAM_PORT)
        host = _probe_host(s.ALLOWED_HOSTS)
        started = time.monotonic()
        log(f"starting; waiting until {url}/readyz answers")
        told = False
        while not self._stopping:
            status, body = _readyz(probe, host)
            if status == 200:
                if self._stopping:
                    return
                log(
                    f"Engram is up (ready in {time.monotonic() - started:.1f} s): {url}/  "
                    f"admin {url}/admin/  API docs {url}/api/docs/  MCP {url}/mcp"
                )
                log(f"Readiness: {url}/readyz  Metrics: {url}/metrics")
                log("Ctrl-C stops everything.")
                return
            if not told and time.monotonic() - started > READY_PATIENCE:
                told = True
                log(f"not ready after {READY_PATIENCE:.0f} s ({body}); still waiting")
            time.sleep(POLL_INTERVAL)

    # -- supervision -----------------------------------------------------------------------------

    def _failed(self, name: str, failures: Failures, what: str, now: float) -> float:
        """Record a failure; return the backoff before the restart, or give up."""
        count = failures.record(now)
        if count >= RESTART_LIMIT:
            raise GiveUp(
                f"{name} failed {count} times within {RESTART_WINDOW:.0f} s (last: {what}); "
                "stopping Engram"
            )
        delay = failures.backoff(self.env_settings.ENGRAM_RESTART_BACKOFF_MAX)
        log(f"{name} {what}; restarting it in {delay:.0f} s")
        return delay

    def _supervise(self) -> int:
        self._supervising = True
        while not self._stopping:
            now = time.monotonic()
            # Servers first: a worker that died with its broker restarts once the broker is back.
            for server in self.servers:
                self._check_server(server, now)
            for child in self.children.values():
                self._check_child(child, now)
            time.sleep(POLL_INTERVAL)
        return 0

    def _check_server(self, server: Server, now: float) -> None:
        if server.down_since is None:
            if server.alive():
                return
            server.down_since = now
            server.restart_at = now + self._failed(server.name, server.failures, "died", now)
        if self._stopping or now < server.restart_at:
            return
        try:
            server.start()
        except Exception as exc:  # whatever stopped it, it counts as one more failure
            failure = f"did not start ({(str(exc).splitlines() or [type(exc).__name__])[0]})"
            server.restart_at = now + self._failed(server.name, server.failures, failure, now)
            return
        server.down_since = None
        log(f"{server.name} is back")

    def _check_child(self, child: Child, now: float) -> None:
        if child.proc is None:
            if not self._stopping and now >= child.restart_at:
                self._spawn(child)
            return
        code = child.proc.poll()
        if code is None:
            return
        _kill_group(child.proc.pid)  # pool processes of a killed worker, a dead master's workers
        child.proc = None
        self._write_state()
        child.restart_at = now + self._failed(child.name, child.failures, f"exited ({code})", now)

    def _on_signal(self, signum: int, frame: object) -> None:
        if not self._stopping:
            log(f"received {signal.Signals(signum).name}; stopping")
        self._stopping = True
        if not self._supervising:
            raise KeyboardInterrupt  # unwinds start-up into run()'s clean shutdown

    def shutdown(self) -> None:
        # Ignore further signals while stopping so the shutdown itself is never cut short.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        try:
            self._stop_children()
        finally:
            self.state_file.unlink(missing_ok=True)
            if self.services is not None:
                log("stopping embedded servers")
                self.services.stop_all()
                self.services = None
            log("stopped")

    def _stop_children(self) -> None:
        # The main process only, never its group: a Celery worker's pool processes killed under
        # it would lose their tasks (WorkerLostError). Asked to stop, the worker finishes or
        # requeues them and stops its pool itself (warm shutdown), gunicorn stops its workers.
        running = [c.proc for c in self.children.values() if c.proc is not None]
        workers = sorted(name for name in self.children if name.startswith("worker"))
        for name in ("beat", "web", *workers):
            child = self.children.get(name)
            if child is not None and child.proc is not None and child.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    child.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for proc in running:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log(f"pid {proc.pid} did not stop in time; killing it")
                _kill_group(proc.pid)
                proc.wait()
        # Each child leads its own process group: make sure nothing of it outlives it.
        for proc in running:
            _kill_group(proc.pid)
        self.children.clear()


def _probe_url(host: str, port: int) -> str:
    """Where the launcher asks for readiness: the bound address, or loopback for a wildcard."""
    if host in ("", "0.0.0.0"):  # noqa: S104 - a wildcard bind is reached on loopback
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}/readyz"


def _probe_host(allowed_hosts: Sequence[str]) -> str:
    """A Host header Django accepts: the first allowed host (a wildcard means any)."""
    first = next((h.strip() for h in allowed_hosts if h.strip()), "localhost").lstrip(".")
    return "localhost" if first in ("", "*") else first


def _readyz(url: str, host: str) -> tuple[int, str]:
    """``/readyz``'s status (0: no answer) and, when not ready, what it says is failing."""
    request = urllib.request.Request(url, headers={"Host": host})  # noqa: S310 - http only
    try:
        with urllib.request.urlopen(request, timeout=READY_PROBE_TIMEOUT) as response:  # noqa: S310
            return int(response.status), ""
    except urllib.error.HTTPError as exc:
        try:
            components = json.loads(exc.read()).get("components", {})
            failing = [name for name, c in components.items() if not c.get("ok")]
        except (ValueError, AttributeError):
            failing = []
        return exc.code, f"HTTP {exc.code}, failing: {', '.join(failing) or 'unknown'}"
    except (OSError, ValueError) as exc:
        return 0, f"no answer: {exc}"


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="./engram run",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Run all of Engram: the web server, a Celery worker and Celery beat, on embedded\n"
            "PostgreSQL and Valkey servers unless DATABASE_URL / REDIS_URL are set. Processes\n"
            "that die are restarted; Ctrl-C stops everything."
        ),
        epilog=(
            "Configured by the environment (docs/configuration.md), e.g. ENGRAM_HOST,\n"
            "ENGRAM_PORT, ENGRAM_DATA_DIR, WEB_CONCURRENCY, CELERY_WORKER_CONCURRENCY,\n"
            "CELERY_WORKER_PER_QUEUE, DATABASE_URL, REDIS_URL."
        ),
    )
    return parser.parse_args(argv)


def main() -> None:
    parse_args(sys.argv[1:])  # --help prints and exits here, before anything starts
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.exit(Launcher().run())


if __name__ == "__main__":
    main()
