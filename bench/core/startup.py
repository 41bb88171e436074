"""Start and restart times of ``./engram run`` (issue 39: a warm restart ready in 20 s or less).

Each run starts ``./engram run`` as a user would, on a data directory of its own (embedded
PostgreSQL and Valkey) and a free port, and measures from the spawn:

- ``ready``: until ``/readyz`` answers 200 (polled here, independently of the launcher);
- ``banner``: until the launcher prints "Engram is up" (it must never come before ``ready``:
  ``banner_early`` counts the runs where /readyz was not yet 200 when the banner appeared);
- ``stopped``: from Ctrl-C (SIGINT) until the launcher has exited, database servers included.

The first run is a first start (a new data directory: initdb, migrations, the demo account);
the later ones are warm restarts of the same directory. The dependencies must be installed
already (``./engram`` installs them on its first call; that time is the network's, not
Engram's, and is not measured).

    uv run python bench/core/startup.py [--restarts 3]

Prints one JSON object. Reads no data.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import ROOT, free_port

PATIENCE = 300.0


def readyz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 0


def one_run(data_dir: Path, port: int) -> dict[str, Any]:
    env = {
        **os.environ,
        "ENGRAM_DATA_DIR": str(data_dir),
        "ENGRAM_PORT": str(port),
        "ENGRAM_HOST": "127.0.0.1",
    }
    started = time.monotonic()
    process = subprocess.Popen(
        [str(ROOT / "engram"), "run"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    banner: list[float] = []
    banner_early: list[bool] = []
    lines: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line.rstrip())
            if "Engram is up" in line and not banner:
                banner.append(time.monotonic() - started)
                banner_early.append(readyz(port) != 200)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    ready = None
    while time.monotonic() - started < PATIENCE and process.poll() is None:
        if readyz(port) == 200:
            ready = time.monotonic() - started
            break
        time.sleep(0.05)
    deadline = time.monotonic() + 30
    while not banner and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    stopping = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    stopped = time.monotonic() - stopping
    reader.join(timeout=5)
    if ready is None:
        sys.stderr.write("\n".join(lines[-40:]) + "\n")
        raise SystemExit(f"not ready within {PATIENCE:.0f} s")
    return {
        "ready_s": round(ready, 2),
        "banner_s": round(banner[0], 2) if banner else None,
        "banner_early": bool(banner_early and banner_early[0]),
        "stopped_s": round(stopped, 2),
        "exit_code": process.returncode,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restarts", type=int, default=3)
    args = parser.parse_args()
    # A short path: unix socket paths are limited to about 100 bytes.
    with tempfile.TemporaryDirectory(prefix="engram-start-", dir="/tmp") as tmp:
        data_dir = Path(tmp)
        first = one_run(data_dir, free_port())
        restarts = [one_run(data_dir, free_port()) for _ in range(args.restarts)]
    ready = sorted(r["ready_s"] for r in restarts)
    print(
        json.dumps(
            {
                "first_start": first,
                "restarts": restarts,
                "restart_ready_s": {
                    "median": ready[len(ready) // 2] if ready else None,
                    "max": ready[-1] if ready else None,
                },
                "cpus": os.cpu_count(),
                "load_average": [round(x, 2) for x in os.getloadavg()],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
