"""The launcher's parts that need no servers: help, output that cannot break, the orphan reaper."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
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
        "import sys\n"
        "from config.launcher import log\n"
        "sys.stdin.readline()\n"  # the test says when the reader is gone
        "for i in range(2000):\n"
        "    log('line %d ' % i + 'x' * 100)\n"
        "sys.stderr.write('still here\\n')\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=BASE_DIR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stdin.write("reader gone\n")
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    errors = proc.stderr.read()
    assert errors == "still here\n"  # no BrokenPipeError, not even at the interpreter's exit


def test_the_reaper_kills_only_the_processes_it_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    from config.launcher import Launcher

    launcher = Launcher()
    launcher.run_dir.mkdir(parents=True)

    def reap(children: dict[str, object]) -> None:
        launcher.state_file.write_text(json.dumps({"launcher": 1, "children": children}))
        launcher._reap_orphans()
        assert not launcher.state_file.exists()

    # Each in its own session, like the launcher's children: the reaper kills the whole group.
    spared = subprocess.Popen(["sleep", "60"], start_new_session=True)
    orphan = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        # The pid was recorded for a process that started an hour earlier: reused since, by a
        # process that is none of ours. A state file of an older launcher (bare pids) proves
        # nothing either.
        started = psutil.Process(spared.pid).create_time()
        reap({"web": {"pid": spared.pid, "create_time": started - 3600}, "beat": spared.pid})
        # A SIGKILL the reaper sent is pending by the time it returns (kill(2) marks the whole
        # group as exiting), and it would win over this SIGTERM: the exit status says which.
        spared.terminate()
        assert spared.wait(timeout=10) == -signal.SIGTERM

        # Recorded with its own start time: it is the orphan, and it goes.
        started = psutil.Process(orphan.pid).create_time()
        reap({"web": {"pid": orphan.pid, "create_time": started}})
        assert orphan.wait(timeout=10) == -signal.SIGKILL
    finally:
        for sleeper in (spared, orphan):
            sleeper.kill()
            sleeper.wait()
