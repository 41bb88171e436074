"""Export and import at scale (issue 38; docs/portability.md): rows per second of
``manage.py export`` and ``manage.py import`` and the peak memory (RSS) of each, from 10,000
rows up, to show whether memory stays flat as an account grows.

Each size gets an account of its own (``bench-port-<rows>``) holding that many short-term
entries (one agent, loaded by SQL; they expire in a week), exported to a temporary archive by
the command in a process of its own, then imported into a new account
(``bench-port-<rows>-copy``) the same way; both accounts are deleted after. The peak RSS is the
child process's (``os.wait4``), Django and the apps included. Nothing is read from ../shared.

    uv run python bench/core/portability_scale.py [--rows 10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import ROOT, django_session


def _load(rows: int) -> str:
    from django.db import connection

    from core.models import Account, Agent

    slug = f"bench-port-{rows}"
    Account.objects.filter(slug__startswith=slug).delete()
    account = Account.objects.create(slug=slug, name=slug)
    agent = Agent.objects.create(account=account, name="loader")
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memory_shorttermentry (account_id, agent_id, session_id, key, value, "
            "memory_type, ttl_seconds, expires_at, access_count, keyword_length, created_at, "
            "updated_at) "
            "SELECT %s, %s, 's' || (n / 1000), 'k' || n, "
            "jsonb_build_object('note', 'entry ' || n || ' about harbour tides and copper'), "
            "'task_context', 604800, now() + interval '7 days', 0, 0, now(), now() "
            "FROM generate_series(1, %s) AS n",
            [account.pk, agent.pk, rows],
        )
    return slug


def _run(arguments: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of ``manage.py arguments`` in a child process."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), *arguments],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "LOG_LEVEL": "WARNING"},
    )
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(arguments)} failed ({child.returncode})")
    return time.perf_counter() - started, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="10000,100000", help="comma-separated sizes")
    args = parser.parse_args()
    sizes = [int(size) for size in args.rows.split(",")]

    results = []
    with django_session():
        from core.models import Account

        for rows in sizes:
            slug = _load(rows)
            with tempfile.TemporaryDirectory() as folder:
                archive = str(Path(folder) / "account.tar.gz")
                export_s, export_mb = _run(["export", "--account", slug, "--out", archive])
                size_mb = Path(archive).stat().st_size / 1e6
                import_s, import_mb = _run(["import", archive, "--account", f"{slug}-copy"])
            copied = Account.objects.get(slug=f"{slug}-copy")
            from memory.models import ShortTermEntry

            imported = ShortTermEntry.objects.filter(account=copied).count()
            Account.objects.filter(slug__startswith=slug).delete()
            results.append(
                {
                    "rows": rows,
                    "imported_rows": imported,
                    "archive_mb": round(size_mb, 1),
                    "export_s": round(export_s, 1),
                    "export_rows_per_s": round(rows / export_s),
                    "export_peak_rss_mb": round(export_mb),
                    "import_s": round(import_s, 1),
                    "import_rows_per_s": round(rows / import_s),
                    "import_peak_rss_mb": round(import_mb),
                }
            )
            print(json.dumps(results[-1]), flush=True)
    print(
        json.dumps(
            {
                "benchmark": "export and import at scale (issue 38)",
                "data": "synthetic short-term entries, one account per size",
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
