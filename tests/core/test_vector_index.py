"""pgvector: the HNSW index exists for the opclass we query with and the planner uses it."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

pytestmark = pytest.mark.django_db


def test_cosine_nearest_neighbour_query_uses_the_hnsw_index() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(2000, 384)).astype(np.float32)
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMP TABLE probe_vectors (id int PRIMARY KEY, embedding vector(384))"
        )
        cursor.executemany(
            "INSERT INTO probe_vectors VALUES (%s, %s::vector)",
            [(i, "[" + ",".join(f"{x:.5f}" for x in v) + "]") for i, v in enumerate(vectors)],
        )
        cursor.execute("CREATE INDEX ON probe_vectors USING hnsw (embedding vector_cosine_ops)")
        cursor.execute("ANALYZE probe_vectors")
        query = "[" + ",".join(f"{x:.5f}" for x in vectors[42]) + "]"
        cursor.execute(
            "EXPLAIN SELECT id FROM probe_vectors ORDER BY embedding <=> %s::vector LIMIT 10",
            [query],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute(
            "SELECT id FROM probe_vectors ORDER BY embedding <=> %s::vector LIMIT 1", [query]
        )
        nearest = cursor.fetchone()
    assert "probe_vectors_embedding_idx" in plan, plan
    assert "Index Scan" in plan, plan
    assert nearest == (42,)
