"""``make run``: one command that runs all of Engram on its embedded defaults.

Starts (or re-attaches to) the embedded PostgreSQL and Valkey servers for any of DATABASE_URL /
REDIS_URL left unset, migrates, creates the periodic schedules and (first start only) a demo
account, then runs the web server, one Celery worker and Celery beat. Ctrl-C or SIGTERM stops
every process it started, servers included. A launcher killed with ``kill -9`` leaves a state
file behind; the next start uses it to kill the orphans before starting fresh.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import time
from typing import IO

from config.embedded import EmbeddedServices, _pid_alive, default_data_dir
from config.env import BASE_DIR, load_env

logger = logging.getLogger("engram.launcher")

STOP_TIMEOUT = 20.0


class Launcher:
    def __init__(self) -> None:
        self.env_settings = load_env()
        self.data_dir = default_data_dir()
        self.run_dir = self.data_dir / "run"
        self.state_file = self.run_dir / "launcher.json"
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.services: EmbeddedServices | None = None
        self.env = dict(os.environ)
        self._stopping = False
        self._supervising = False
        self._lock_fh: IO[str] | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def run(self) -> int:
        # Handlers first: a signal during start-up aborts it and still stops what was started.
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._take_lock()
        try:
            self._reap_orphans()
            self._start_services()
            self._manage("migrate", "--noinput", "-v", "0")
            self._manage("setup_periodic_tasks")
            self._manage("engram_bootstrap")
            self._start_children()
            self._banner()
            return self._supervise()
        except KeyboardInterrupt:
            return 0
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
        """Kill what a previous launcher (killed with -9) left running."""
        if not self.state_file.exists():
            return
        try:
            state = json.loads(self.state_file.read_text())
        except ValueError:
            state = {}
        for name, pid in state.get("children", {}).items():
            if _pid_alive(pid):
                log(f"stopping {name} (pid {pid}) left by a previous run")
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
        self.state_file.unlink(missing_ok=True)
        # Servers left running are re-attached to (and owned) below; Valkey's stale pid and
        # PostgreSQL's postmaster.pid are handled by the adapter.

    def _start_services(self) -> None:
        need_pg = not self.env.get("DATABASE_URL")
        need_redis = not self.env.get("REDIS_URL")
        if need_pg or need_redis:
            log("starting embedded servers in " + str(self.data_dir))
            self.services = EmbeddedServices(self.data_dir)
            self.env.update(self.services.ensure(postgres=need_pg, redis=need_redis))

    def _manage(self, *args: str) -> None:
        subprocess.run(
            [sys.executable, str(BASE_DIR / "manage.py"), *args],
            env=self.env,
            cwd=BASE_DIR,
            check=True,
        )

    def _spawn(self, name: str, argv: list[str]) -> None:
        # Own session: a terminal Ctrl-C reaches only the launcher, which stops children in order.
        self.children[name] = subprocess.Popen(
            argv, env=self.env, cwd=BASE_DIR, start_new_session=True
        )
        self._write_state()

    def _start_children(self) -> None:
        s = self.env_settings
        bind = f"{s.ENGRAM_HOST}:{s.ENGRAM_PORT}"
        self._spawn(
            "web",
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--bind",
                bind,
                "--workers",
                str(s.WEB_CONCURRENCY),
                "--threads",
                "4",
                "--worker-class",
                "gthread",
                "--timeout",
                "120",
                "--access-logfile",
                "-",
            ],
        )
        self._spawn(
            "worker",
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(s.CELERY_WORKER_CONCURRENCY),
                "--hostname",
                "engram@%h",
            ],
        )
        self._spawn(
            "beat",
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "beat",
                "--loglevel",
                "INFO",
                "--pidfile",
                str(self.run_dir / "beat.pid"),
            ],
        )

    def _write_state(self) -> None:
        state = {"launcher": os.getpid(), "children": {n: p.pid for n, p in self.children.items()}}
        self.state_file.write_text(json.dumps(state))

    def _banner(self) -> None:
        s = self.env_settings
        url = f"http://{s.ENGRAM_HOST}:{s.ENGRAM_PORT}"
        log(f"Engram is up: {url}/  admin {url}/admin/  API docs {url}/api/docs/")
        log(f"Readiness: {url}/readyz")
        log("Ctrl-C stops everything.")

    def _supervise(self) -> int:
        self._supervising = True
        while not self._stopping:
            for name, proc in self.children.items():
                code = proc.poll()
                if code is not None:
                    log(f"{name} exited with code {code}; stopping Engram")
                    return 1
            time.sleep(0.5)
        return 0

    def _on_signal(self, signum: int, frame: object) -> None:
        if not self._stopping:
            log(f"received {signal.Signals(signum).name}; stopping")
        self._stopping = True
        if not self._supervising:
            raise KeyboardInterrupt  # unwinds start-up into run()'s clean shutdown

    def shutdown(self) -> None:
        # Ignore further signals while stopping so the shutdown itself is never cut short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for name in ("beat", "web", "worker"):
            proc = self.children.get(name)
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for name, proc in self.children.items():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log(f"{name} did not stop in time; killing it")
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        # Worker pool processes share the child's process group: make sure none outlive it.
        for proc in self.children.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        self.children.clear()
        self.state_file.unlink(missing_ok=True)
        if self.services is not None:
            log("stopping embedded servers")
            self.services.stop_all()
            self.services = None
        log("stopped")


def log(message: str) -> None:
    print(f"[engram] {message}", flush=True)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.exit(Launcher().run())


if __name__ == "__main__":
    main()
