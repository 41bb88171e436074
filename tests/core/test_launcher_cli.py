"""The launcher's parts that need no servers: help, output that cannot break, the orphan reaper."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from config.env import BASE_DIR


def _engram(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BASE_DIR / "engram"), *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_help_prints_usage_and_starts_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "ENGRAM_DATA_DIR": str(tmp_path / "data")}
    for args in (["--help"], ["-h"], ["help"], ["run", "--help"], ["run", "-h"]):
        done = _engram(*args, env=env)
        assert done.returncode == 0, (args, done.stderr)
        assert done.stdout.startswith("usage: ./engram"), (args, done.stdout)
        assert "run" in done.stdout and done.stderr == ""
    assert "ENGRAM_PORT" in done.stdout  # run's own help: the settings it reads
    for args in (["bogus"], ["run", "--bogus"]):
        done = _engram(*args, env=env)
        assert done.returncode == 2 and "usage: ./engram" in done.stderr, (args, done.stderr)
    assert not (tmp_path / "data").exists()  # nothing started, not even a data directory


def test_logging_to_a_pipe_whose_reader_went_away_never_raises() -> None:
    script = (
        "import sys, time\n"
        "from config.launcher import log\n"
        "time.sleep(0.5)\n"  # the reader is gone by now
        "for i in range(2000):\n"
        "    log('line %d ' % i + 'x' * 100)\n"
        "sys.stderr.write('still here\\n')\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=BASE_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0
    errors = proc.stderr.read()
    assert errors == "still here\n"  # no BrokenPipeError, not even at the interpreter's exit


def test_the_reaper_kills_only_the_processes_it_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    from config.launcher import Launcher

    # Its own session, like the launcher's children: the reaper kills the whole group.
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        started = psutil.Process(sleeper.pid).create_time()
        launcher = Launcher()
        launcher.run_dir.mkdir(parents=True)

        def reap(children: dict[str, object]) -> None:
            launcher.state_file.write_text(json.dumps({"launcher": 1, "children": children}))
            launcher._reap_orphans()
            assert not launcher.state_file.exists()

        # The pid was recorded for a process that started an hour earlier: reused since, by a
        # process that is none of ours. A state file of an older launcher (bare pids) proves
        # nothing either.
        reap({"web": {"pid": sleeper.pid, "create_time": started - 3600}, "beat": sleeper.pid})
        time.sleep(0.3)
        assert sleeper.poll() is None

        # Recorded with its own start time: it is the orphan, and it goes.
        reap({"web": {"pid": sleeper.pid, "create_time": started}})
        assert sleeper.wait(timeout=10) == -signal.SIGKILL
    finally:
        sleeper.kill()
        sleeper.wait()
