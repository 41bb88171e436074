"""What caching numba's compilation saves on a cluster maintenance run's first clustering in a
process (docs/configuration.md, ``NUMBA_CACHE_DIR``; docs/memory/maintenance.md, "Cluster
maintenance").

UMAP (and its nearest-neighbour search, pynndescent) is numba code compiled on first use. Each
measurement runs in a fresh Python process, as a new worker would: import umap, hdbscan and
``memory.maintenance.clustering`` (timed apart: ``import_s``), then cluster 300 synthetic
384-dimensional vectors (above MEMORY_MAINTENANCE_UMAP_MIN_ENTRIES, so UMAP runs), timing the first
call. Only functions numba may cache (``cache=True``: most of pynndescent's and UMAP's distances and
graph construction) are kept; UMAP's layout optimisation is compiled without caching, in every
process, cache or not. ``cold``: an empty cache directory (what every process
paid before the cache lived in the data directory, on a machine where numba could not write
next to site-packages, as in the image); ``warm``: the directory the cold run filled. Then a
second call in the warm process, which compiles nothing.

    uv run python bench/memory/numba_cache.py [--runs 2]

Prints one JSON object. No database, no Django: the clustering is pure numpy and numba.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys, time
start = time.perf_counter()
import hdbscan, numpy as np, umap
from memory.maintenance import clustering
imported = time.perf_counter() - start
params = clustering.ClusterParams(
    min_cluster_size=2, min_similarity=0.75, seed=42, umap_min_entries=50, umap_sample=5000
)
rng = np.random.default_rng(7)
vectors = rng.normal(size=(300, 384)).astype(np.float32)
start = time.perf_counter()
clustering.cluster(vectors, params)
first = time.perf_counter() - start
start = time.perf_counter()
clustering.cluster(vectors, params)
second = time.perf_counter() - start
print(json.dumps({"import_s": round(imported, 2), "first_s": round(first, 2),
                  "second_s": round(second, 2)}))
"""


def measure(cache: Path) -> dict[str, float]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2, help="cold/warm pairs, each fresh")
    args = parser.parse_args()
    pairs = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
            cold = measure(Path(cache))
            warm = measure(Path(cache))
        pairs.append({"cold": cold, "warm": warm})
    print(
        json.dumps(
            {
                "entries": 300,
                "dimensions": 384,
                "pairs": pairs,
                "cold_first_s": min(p["cold"]["first_s"] for p in pairs),
                "warm_first_s": min(p["warm"]["first_s"] for p in pairs),
                "warm_second_s": min(p["warm"]["second_s"] for p in pairs),
                "cold_import_s": min(p["cold"]["import_s"] for p in pairs),
                "warm_import_s": min(p["warm"]["import_s"] for p in pairs),
                "load": os.getloadavg()[0],
            }
        )
    )


if __name__ == "__main__":
    main()
