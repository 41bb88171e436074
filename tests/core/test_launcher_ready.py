"""``./engram run`` tells the truth: "Engram is up" only once ``/readyz`` answers 200, and the
web server's ``/metrics`` adds up what the Celery worker's processes recorded (multiprocess
mode, the directory the launcher sets and empties)."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.core.test_launcher import Running, _free_port, _gone

pytestmark = [pytest.mark.slow, pytest.mark.embedded]

BANNER = "Engram is up"


def _scrape(base: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        f"{s.name}{sorted(s.labels.items())}": s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_the_banner_waits_for_readiness_and_metrics_span_processes(
    embedded_data_dir: Path,
) -> None:
    stale = embedded_data_dir / "run" / "metrics"
    stale.mkdir(parents=True)
    (stale / "counter_elsewhere-1.db").write_bytes(b"left by an earlier run")
    port = _free_port()
    run = Running(embedded_data_dir, port)
    try:
        # The banner is awaited on the launcher's own output, then readiness checked at once.
        deadline = time.monotonic() + 300
        while BANNER not in run.output():
            assert run.proc.poll() is None, run.output()[-3000:]
            assert time.monotonic() < deadline, run.output()[-3000:]
            time.sleep(0.05)
        status, body = run.readyz()
        assert status == 200, body
        output = run.output()
        assert output.index("waiting until") < output.index(BANNER)
        assert "ready in" in output
        assert not (stale / "counter_elsewhere-1.db").exists()

        # Beat sends its periodic tasks to the worker, whose pool processes record them; the
        # web server's scrape shows them.
        found: dict[str, float] = {}
        deadline = time.monotonic() + 120
        while not any(k.startswith("engram_celery_tasks_total") for k in found):
            assert time.monotonic() < deadline, sorted(found)[:50]
            time.sleep(0.2)
            found = _scrape(run.base)
        assert any(k.startswith("engram_http_request_duration_seconds_count") for k in found)
        assert list(stale.glob("*.db"))
    finally:
        assert run.stop() == 0
    _gone(embedded_data_dir, port)
