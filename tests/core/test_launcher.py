"""``./engram run`` end to end: start, serve, stop however its output is piped (the worker
finishing the task it runs), restart with data intact, recover from kill -9, restart what dies,
give up on a crash loop; and ``--help``.

Like a user's, one data directory (``Home``) lives through the module's runs: the restart test
starts it for the first time (initialising and migrating the database), the tests after it start
it again. A first start takes tens of seconds longer than a restart (the migrations), so it
happens once; a test run without the restart test makes one of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import psutil
import psycopg
import pytest
from celery import Celery

from config.embedded import EmbeddedServices
from config.env import BASE_DIR

# One worker runs the module's tests, in order: the second reuses the first one's data directory.
pytestmark = [pytest.mark.slow, pytest.mark.embedded, pytest.mark.xdist_group("launcher")]

KEY_RE = re.compile(r"agent API key\s+:\s+(eng_\S+)")
ADMIN_RE = re.compile(r"admin login\s+:\s+admin / (\S+)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _state(data_dir: Path) -> dict:
    """The launcher's state file: its pid and each child's pid and start time."""
    try:
        return json.loads((data_dir / "run" / "launcher.json").read_text())
    except (FileNotFoundError, ValueError):
        return {}


def _wait_for(condition: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _gone(data_dir: Path, port: int) -> None:
    """Every process of this data directory exits (the launcher has returned: its children and
    servers are on their way out)."""
    left: list[str] = []

    def none_left() -> bool:
        left[:] = _engram_processes(data_dir, port)
        return not left

    try:
        _wait_for(none_left, 5, "the processes to exit")
    except AssertionError:
        raise AssertionError(f"still running: {left}") from None


@dataclass
class Home:
    """The module's data directory, and the demo agent's key once its first start printed it."""

    data_dir: Path
    key: str | None = None


@pytest.fixture(scope="module")
def home() -> Iterator[Home]:
    """Under /tmp and short (unix socket paths), stopped and removed after the module."""
    path = Path(tempfile.mkdtemp(prefix="eng-", dir="/tmp"))
    yield Home(path)
    EmbeddedServices(path).stop_all()
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(autouse=True)
def _no_launcher_outlives_its_test(home: Home, embedded_data_dir: Path) -> Iterator[None]:
    """A failed test must not leave a launcher restarting servers in a removed data directory
    (this runs before ``home`` and ``embedded_data_dir`` stop and remove them)."""
    yield
    for run in Running.started:
        if run.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.proc.pid, signal.SIGTERM)
            try:
                run.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(run.proc.pid, signal.SIGKILL)
                run.proc.wait()
    Running.started.clear()


class Running:
    """The launcher, as a user starts it, in its own session: its output to a file, or through
    a shell redirection or pipeline (``output="| tee /dev/null"``, ``">&-"``) whose output and
    errors go to the file."""

    started: ClassVar[list[Running]] = []

    def __init__(self, data_dir: Path, port: int, output: str | None = None) -> None:
        self.data_dir = data_dir
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
        }
        env.update(
            ENGRAM_DATA_DIR=str(data_dir),
            ENGRAM_PORT=str(port),
            ENGRAM_ENV="development",
            WEB_CONCURRENCY="1",
            CELERY_WORKER_CONCURRENCY="1",
            LOG_FORMAT="console",
            # The crash loop comes in 4 s instead of 15 s (backoffs 1, 1, 1, 1 s, not 1, 2, 4, 8).
            ENGRAM_RESTART_BACKOFF_MAX="1",
        )
        self.log_path = data_dir.parent / f"{data_dir.name}-launcher-{time.monotonic_ns()}.log"
        self.log = open(self.log_path, "w")
        launcher = f"{shlex.quote(sys.executable)} -m config.launcher"
        if output is None:
            argv = [sys.executable, "-m", "config.launcher"]
        else:
            # No-op traps keep the shell alive to report the launcher's exit status, while the
            # pipeline's commands keep the default actions (tee and head die of Ctrl-C).
            argv = ["bash", "-c", f"trap : INT TERM; {launcher} {output}; exit ${{PIPESTATUS[0]}}"]
        self.proc = subprocess.Popen(
            argv,
            cwd=BASE_DIR,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.base = f"http://127.0.0.1:{port}"
        Running.started.append(self)

    def output(self) -> str:
        return self.log_path.read_text()

    def launcher_pid(self) -> int | None:
        """The launcher's pid, as recorded once it has started its children."""
        state = _state(self.data_dir)
        if "beat" not in state.get("children", {}):
            return None
        ours = {self.proc.pid}
        with_children = psutil.Process(self.proc.pid).children(recursive=True)
        ours.update(p.pid for p in with_children)
        return state["launcher"] if state["launcher"] in ours else None

    def readyz(self) -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(f"{self.base}/readyz", timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            return 0, {"error": str(exc)}

    def wait_ready(self, timeout: float = 180) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.output()[-3000:]
            # Not before this launcher's own children run: an orphan of an earlier run may still
            # answer on the port until the new launcher has reaped it.
            if self.launcher_pid() is None:
                time.sleep(0.1)
                continue
            status, body = self.readyz()
            if status == 200:
                return body
            time.sleep(0.1)
        raise AssertionError("not ready in time:\n" + self.output()[-3000:])

    def get(self, path: str, key: str) -> tuple[int, dict]:
        request = urllib.request.Request(
            f"{self.base}{path}", headers={"Authorization": f"Bearer {key}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def interrupt(self, sig: int = signal.SIGINT) -> None:
        """Signal the whole process group, as a terminal's Ctrl-C does."""
        os.killpg(self.proc.pid, sig)

    def wait(self) -> int:
        code = self.proc.wait(timeout=90)
        self.log.close()
        return code

    def stop(self, sig: int = signal.SIGINT) -> int:
        self.interrupt(sig)
        return self.wait()


def admin_login(base: str, username: str, password: str) -> str:
    """Log in through the admin's own form (CSRF cookie and token) and return the landing page."""
    import http.cookiejar
    import urllib.parse

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{base}/admin/login/", timeout=10).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    form = urllib.parse.urlencode(
        {
            "csrfmiddlewaretoken": token,
            "username": username,
            "password": password,
            "next": "/admin/",
        }
    ).encode()
    request = urllib.request.Request(
        f"{base}/admin/login/?next=/admin/", data=form, headers={"Referer": f"{base}/admin/login/"}
    )
    return opener.open(request, timeout=10).read().decode()


def _engram_processes(data_dir: Path, port: int) -> list[str]:
    found = []
    for proc in psutil.process_iter(["cmdline", "environ"]):
        try:
            cmd = " ".join(proc.info["cmdline"] or [])
            env = proc.info["environ"] or {}
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if str(data_dir) in cmd or env.get("ENGRAM_DATA_DIR") == str(data_dir):
            found.append(f"{proc.pid} {cmd}")
    return found


def _exited(pid: int) -> bool:
    """The process has exited (a zombie its parent has not waited for yet counts)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _celery(data_dir: Path) -> Celery:
    """A client of the launcher's own broker."""
    from config.embedded import EmbeddedValkey
    from config.settings import _celery_url

    return Celery(broker=_celery_url(EmbeddedValkey(data_dir).url), set_as_current=False)


def _db(data_dir: Path) -> psycopg.Connection:
    """A connection to the launcher's own database (autocommit)."""
    from config.embedded import EmbeddedPostgres

    return psycopg.connect(EmbeddedPostgres(data_dir).url, autocommit=True)


@contextlib.contextmanager
def _task_waiting_on_a_lock(data_dir: Path) -> Iterator[str]:
    """A task running in the worker's pool until the block ends: ``core.prune_api_keys`` waits
    for the API keys table, locked meanwhile. Yields the task's id once it waits."""
    with _db(data_dir) as lock, _db(data_dir) as watch:
        lock.execute("BEGIN")
        lock.execute("LOCK TABLE core_apikey IN ACCESS EXCLUSIVE MODE")
        app = _celery(data_dir)
        try:
            task_id = app.send_task("core.tasks.prune_api_keys", queue="maintenance").id
        finally:
            app.close()

        def waiting() -> bool:
            query = "SELECT 1 FROM pg_locks WHERE relation = 'core_apikey'::regclass"
            return watch.execute(f"{query} AND NOT granted").fetchone() is not None

        _wait_for(waiting, 60, "the task to wait for the API keys table")
        yield task_id
        lock.execute("ROLLBACK")


def test_run_serve_stop_restart_and_recover_from_kill_9(home: Home) -> None:
    data_dir = home.data_dir
    port = _free_port()

    # `./engram run | tee log`, then Ctrl-C: tee dies with the launcher's output still to come.
    first = Running(data_dir, port, output="| tee /dev/null")
    ready = first.wait_ready()
    assert ready["status"] == "ok", ready
    assert all(component["ok"] for component in ready["components"].values())
    key = home.key = KEY_RE.search(first.output()).group(1)  # type: ignore[union-attr]
    assert ADMIN_RE.search(first.output())
    status, me = first.get("/api/v1/me", key)
    assert status == 200 and me["name"] == "demo-agent"
    with urllib.request.urlopen(f"{first.base}/api/docs/", timeout=10) as response:
        assert response.status == 200
    password = ADMIN_RE.search(first.output()).group(1)  # type: ignore[union-attr]
    assert "Engram administration" in admin_login(first.base, "admin", password)

    # Ctrl-C while the worker runs a task: the worker is asked to stop, not its pool process,
    # which finishes the task (killed under the worker, it would lose it: WorkerLostError).
    children = _state(data_dir)["children"]
    with _task_waiting_on_a_lock(data_dir) as task_id:
        pool = psutil.Process(children["worker"]["pid"]).children()
        assert pool
        first.interrupt(signal.SIGINT)
        # Web and beat, asked to stop together with the worker, have stopped: the pool process
        # still runs the task.
        stopped = (children["web"]["pid"], children["beat"]["pid"])
        _wait_for(lambda: all(_exited(pid) for pid in stopped), 60, "web and beat to stop")
        assert not any(_exited(p.pid) for p in pool)
    assert first.wait() == 0  # the launcher's own exit status
    _gone(data_dir, port)

    # Restart: the data survived, first-start credentials are not printed again.
    second = Running(data_dir, port)
    second.wait_ready()
    assert "already set up" in second.output() and not KEY_RE.search(second.output())
    assert second.get("/api/v1/me", key)[0] == 200
    with _db(data_dir) as db:
        run = db.execute("SELECT status FROM core_jobrun WHERE task_id = %s", [task_id]).fetchone()
    assert run == ("succeeded",)  # the task stopped by Ctrl-C finished

    # kill -9 the launcher: its children and servers are orphaned; the next start cleans up,
    # this time with its stdout closed.
    os.kill(second.proc.pid, signal.SIGKILL)
    second.proc.wait()
    second.log.close()
    assert _engram_processes(data_dir, port) != []
    third = Running(data_dir, port, output=">&-")
    third.wait_ready()
    assert third.get("/api/v1/me", key)[0] == 200
    assert third.stop(signal.SIGTERM) == 0
    _gone(data_dir, port)
    assert "Traceback" not in third.output()


def test_output_reader_gone_from_the_start(home: Home, embedded_data_dir: Path) -> None:
    """`./engram run | head -1`: every line after the first meets a closed pipe, the children's
    output included; Engram still starts, serves, and stops everything on Ctrl-C."""
    # A restart of the module's home after the restart test; run alone, a first start.
    data_dir = home.data_dir if home.key else embedded_data_dir
    port = _free_port()
    run = Running(data_dir, port, output="| head -1")
    assert run.wait_ready()["status"] == "ok"
    assert run.stop(signal.SIGINT) == 0
    _gone(data_dir, port)
    assert run.output().startswith("[engram] ") and "Traceback" not in run.output()


def _worker_answers(data_dir: Path) -> bool:
    """A control ping through the launcher's own broker reaches its Celery worker."""
    app = _celery(data_dir)
    try:
        # The first reply ends the wait (without a limit, ping waits out its timeout).
        return bool(app.control.ping(timeout=2, limit=1))
    except Exception:  # the broker itself may be down for a moment
        return False
    finally:
        app.close()


def test_supervision_restarts_what_dies_and_stops_on_a_crash_loop(
    home: Home, embedded_data_dir: Path
) -> None:
    from config.embedded import EmbeddedPostgres, EmbeddedValkey

    # A restart of the module's home after the restart test; run alone, a first start.
    data_dir = home.data_dir if home.key else embedded_data_dir
    port = _free_port()
    run = Running(data_dir, port)
    run.wait_ready()
    key = home.key or KEY_RE.search(run.output()).group(1)  # type: ignore[union-attr]
    children = _state(data_dir)["children"]
    web, worker = children["web"]["pid"], children["worker"]["pid"]
    _wait_for(lambda: _worker_answers(data_dir), 60, "the worker to answer")

    # The worker dies: it is started again while the web server keeps serving.
    statuses: list[int] = []
    done = threading.Event()

    def keep_asking() -> None:
        while not done.is_set():
            try:
                statuses.append(run.get("/api/v1/me", key)[0])
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                statuses.append(0)
            time.sleep(0.1)

    asker = threading.Thread(target=keep_asking)
    asker.start()
    try:
        os.kill(worker, signal.SIGKILL)

        def new_worker() -> bool:
            pid = _state(data_dir).get("children", {}).get("worker", {}).get("pid")
            return pid not in (None, worker) and _worker_answers(data_dir)

        _wait_for(new_worker, 60, "a new worker")
    finally:
        done.set()
        asker.join()
    assert len(statuses) > 10 and set(statuses) == {200}, statuses
    assert _state(data_dir)["children"]["web"]["pid"] == web and psutil.pid_exists(web)
    assert "worker exited (-9); restarting it in 1 s" in run.output()

    # Valkey dies: /readyz is green again within 30 s, and the worker talks to the new server.
    valkey = EmbeddedValkey(data_dir)
    old_valkey = valkey._pid()
    os.kill(old_valkey, signal.SIGKILL)
    killed_at = time.monotonic()
    _wait_for(lambda: run.readyz()[0] == 200 and valkey._pid() not in (0, old_valkey), 30, "Valkey")
    assert time.monotonic() - killed_at < 30
    _wait_for(lambda: _worker_answers(data_dir), 60, "the worker on the new Valkey")

    # PostgreSQL dies: the same.
    postgres = EmbeddedPostgres(data_dir)
    old_postmaster = postgres.pid()
    os.kill(old_postmaster, signal.SIGKILL)
    _wait_for(
        lambda: run.readyz()[0] == 200 and postgres.pid() not in (0, old_postmaster),
        60,
        "PostgreSQL",
    )
    assert run.get("/api/v1/me", key)[0] == 200
    assert _state(data_dir)["children"]["web"]["pid"] == web  # never restarted
    _wait_for(lambda: "[engram] postgres is back" in run.output(), 30, "the launcher's word")
    assert "[engram] valkey died; restarting it in 1 s" in run.output()
    assert "[engram] valkey is back" in run.output()

    # Beat dies each time it comes back: the launcher gives up, says why, stops everything.
    killed: set[int] = set()
    deadline = time.monotonic() + 120
    while run.proc.poll() is None and time.monotonic() < deadline:
        pid = _state(data_dir).get("children", {}).get("beat", {}).get("pid")
        if pid is not None and pid not in killed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(0.05)
    assert run.proc.wait(timeout=90) == 1, run.output()[-3000:]
    run.log.close()
    assert re.search(r"beat failed 5 times within 60 s \(last: exited \(-9\)\)", run.output())
    _gone(data_dir, port)
