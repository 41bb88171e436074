"""BM25 keyword index on stock PostgreSQL: an inverted index of (term, chunk) postings.

Writes are transactional and incremental (postings and per-term document frequencies change in
the same transaction as the chunks they describe). Reads take, for each query term, only its top
postings in impact order, then score them exactly with BM25 against the current statistics.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import snowballstemmer
from django.db import connection

# Robertson/Sparck Jones BM25 with Lucene's idf; k1 and b as Anserini uses for BEIR.
K1 = 0.9
B = 0.4
# Postings read per query term: bounds the cost of common terms (chosen by measurement, see
# docs/benchmarks.md); rare terms have fewer postings than this anyway.
POSTINGS_PER_TERM = 1000
MAX_TERM_LENGTH = 64

# Lucene's English stop words (the classic analyzer's set).
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)
_TOKEN = re.compile(r"\w+", re.UNICODE)
# snowballstemmer hands out PyStemmer's C implementation of the same Snowball algorithm when it
# is installed (a dependency): identical stems, about twenty times faster.
_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def analyze(text: str) -> list[str]:
    """Lower-case word tokens without stop words, Porter2-stemmed: the index and query terms."""
    terms = []
    for token in _TOKEN.findall(text.lower()):
        if token in STOP_WORDS or len(token) > MAX_TERM_LENGTH:
            continue
        terms.append(_stem(token))
    return terms


def idf(df: int, n: int) -> float:
    """Lucene's BM25 idf: always positive, so very common terms still count a little."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def tf_factor(tf: int, length: int, avg_length: float) -> float:
    norm = 1 - B + B * (length / avg_length if avg_length > 0 else 1.0)
    return tf * (K1 + 1) / (tf + K1 * norm)


@dataclass(frozen=True)
class ChunkTerms:
    """The analysed form of one chunk."""

    counts: Counter[str]

    @property
    def length(self) -> int:
        return sum(self.counts.values())


def chunk_terms(text: str) -> ChunkTerms:
    return ChunkTerms(Counter(analyze(text)))


# --- writes (call inside the transaction that writes the chunks) -----------------------------


def postings_add(
    *,
    knowledge_base_id: int,
    chunks: Sequence[tuple[int, int, ChunkTerms]],
    avg_length: float,
) -> None:
    """Insert the postings of new chunks and raise document frequencies accordingly.

    ``chunks`` holds (chunk id, document id, terms) for each new chunk. Uses COPY: postings are
    the bulk of every ingestion's writes.
    """
    df: Counter[str] = Counter()
    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg's own cursor, for COPY
        columns = "knowledge_base_id, term, chunk_id, document_id, tf, chunk_length, impact"
        with raw.copy(f"COPY rag_keywordposting ({columns}) FROM STDIN") as copy:
            for chunk_id, document_id, terms in chunks:
                length = terms.length
                for term, tf in terms.counts.items():
                    df[term] += 1
                    impact = tf_factor(tf, length, avg_length or length)
                    copy.write_row(
                        (
                            knowledge_base_id,
                            term,
                            chunk_id,
                            document_id,
                            min(tf, 32767),
                            length,
                            impact,
                        )
                    )
    _df_apply(knowledge_base_id, df, sign=1)


def postings_remove_documents(
    *, knowledge_base_id: int, document_ids: Sequence[int]
) -> tuple[int, int]:
    """Lower document frequencies for documents' postings (their chunks' deletion removes them).

    Returns (chunks, total terms) removed from the corpus statistics.
    """
    if not document_ids:
        return 0, 0
    ids = list(document_ids)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.term, count(*) FROM rag_chunk c "
            "JOIN rag_keywordposting p ON p.chunk_id = c.id "
            "WHERE c.document_id = ANY(%s) GROUP BY p.term",
            [ids],
        )
        df = Counter({term: count for term, count in cursor.fetchall()})
        cursor.execute(
            "SELECT count(*), coalesce(sum(keyword_length), 0) FROM rag_chunk "
            "WHERE document_id = ANY(%s)",
            [ids],
        )
        chunks, terms = cursor.fetchone()
    _df_apply(knowledge_base_id, df, sign=-1)
    return int(chunks), int(terms)


def _df_apply(knowledge_base_id: int, df: Counter[str], *, sign: int) -> None:
    """Add (sign=1) or subtract (sign=-1) document frequencies.

    Precondition: the caller holds the knowledge base's row lock (every ingestion swap and
    deletion takes it), which serialises frequency changes within a knowledge base.
    """
    if not df:
        return
    terms = sorted(df)
    counts = [df[t] for t in terms]
    with connection.cursor() as cursor:
        if sign > 0:
            cursor.execute(
                """
                INSERT INTO rag_keywordterm (knowledge_base_id, term, df)
                SELECT %s, t.term, t.delta FROM unnest(%s::text[], %s::int[]) AS t(term, delta)
                ON CONFLICT (knowledge_base_id, term)
                DO UPDATE SET df = rag_keywordterm.df + EXCLUDED.df
                """,
                [knowledge_base_id, terms, counts],
            )
            return
        cursor.execute(
            """
            UPDATE rag_keywordterm AS k SET df = k.df - t.delta
            FROM unnest(%s::text[], %s::int[]) AS t(term, delta)
            WHERE k.knowledge_base_id = %s AND k.term = t.term
            """,
            [terms, counts, knowledge_base_id],
        )
        cursor.execute(
            "DELETE FROM rag_keywordterm WHERE knowledge_base_id = %s AND term = ANY(%s) "
            "AND df <= 0",
            [knowledge_base_id, terms],
        )


# --- reads ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeywordHit:
    chunk_id: int
    score: float


def keyword_search(
    *,
    knowledge_base_ids: Sequence[int],
    query: str,
    limit: int,
    filter_sql: str = "",
    filter_params: Mapping[str, Any] | None = None,
    postings_per_term: int = POSTINGS_PER_TERM,
) -> list[KeywordHit]:
    """BM25 top ``limit`` chunks of the given knowledge bases for ``query``.

    ``filter_sql`` is a condition on ``d`` (rag_document) with named placeholders, built by the
    search module from validated filters; postings are filtered before the per-term cut.
    """
    terms = sorted(set(analyze(query)))
    if not terms or not knowledge_base_ids:
        return []
    kb_ids = list(knowledge_base_ids)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(chunk_count), 0), coalesce(sum(total_terms), 0) "
            "FROM rag_knowledgebase WHERE id = ANY(%s)",
            [kb_ids],
        )
        n, total = cursor.fetchone()
        if not n:
            return []
        avg_length = total / n
        cursor.execute(
            "SELECT term, sum(df) FROM rag_keywordterm WHERE knowledge_base_id = ANY(%s) "
            "AND term = ANY(%s) GROUP BY term",
            [kb_ids, terms],
        )
        idfs = {term: idf(int(df), int(n)) for term, df in cursor.fetchall()}
        if not idfs:
            return []
        q_terms = sorted(idfs)
        q_idfs = [idfs[t] for t in q_terms]
        join = "JOIN rag_document d ON d.id = p.document_id" if filter_sql else ""
        where = f"AND {filter_sql}" if filter_sql else ""
        cursor.execute(
            f"""
            SELECT p.chunk_id,
                   sum(q.idf * p.tf * %(k1p1)s::float8
                       / (p.tf + %(k1)s::float8
                          * (1 - %(b)s::float8 + %(b)s::float8 * p.chunk_length
                             / %(avgdl)s::float8))) AS score
            FROM unnest(%(terms)s::text[], %(idfs)s::float8[]) AS q(term, idf)
            CROSS JOIN unnest(%(kbs)s::bigint[]) AS kb(id)
            CROSS JOIN LATERAL (
                SELECT p.chunk_id, p.tf, p.chunk_length
                FROM rag_keywordposting p {join}
                WHERE p.knowledge_base_id = kb.id AND p.term = q.term {where}
                ORDER BY p.impact DESC
                LIMIT %(per_term)s
            ) p
            GROUP BY p.chunk_id
            ORDER BY score DESC, p.chunk_id
            LIMIT %(limit)s
            """,  # noqa: S608 - filter_sql is built from validated, parameterised filters
            {
                "k1p1": K1 + 1,
                "k1": K1,
                "b": B,
                "avgdl": avg_length,
                "terms": q_terms,
                "idfs": q_idfs,
                "kbs": kb_ids,
                "per_term": postings_per_term,
                "limit": limit,
                **(filter_params or {}),
            },
        )
        return [KeywordHit(chunk_id=row[0], score=float(row[1])) for row in cursor.fetchall()]


def index_rebuild(*, knowledge_base_id: int) -> None:
    """Recompute every posting, term frequency and corpus statistic of a knowledge base from its
    chunks, in one transaction (searches see the old index until it commits)."""
    from django.db import transaction

    from rag.indexing import indexed_text
    from rag.models import Chunk, KnowledgeBase

    with transaction.atomic():
        KnowledgeBase.objects.select_for_update().get(pk=knowledge_base_id)
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM rag_keywordposting WHERE knowledge_base_id = %s", [knowledge_base_id]
            )
            cursor.execute(
                "DELETE FROM rag_keywordterm WHERE knowledge_base_id = %s", [knowledge_base_id]
            )
        rows = Chunk.objects.filter(knowledge_base_id=knowledge_base_id).values_list(
            "id", "document_id", "text", "heading_path", "document__title"
        )
        analysed = [
            (cid, doc, chunk_terms(indexed_text(title=title, heading_path=path, text=text)))
            for cid, doc, text, path, title in rows
        ]
        total = sum(t.length for _, _, t in analysed)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE rag_chunk c SET keyword_length = v.length "
                "FROM unnest(%s::bigint[], %s::int[]) AS v(id, length) WHERE c.id = v.id",
                [[cid for cid, _, _ in analysed], [t.length for _, _, t in analysed]],
            )
        postings_add(
            knowledge_base_id=knowledge_base_id,
            chunks=analysed,
            avg_length=total / len(analysed) if analysed else 0.0,
        )
        KnowledgeBase.objects.filter(pk=knowledge_base_id).update(
            chunk_count=len(analysed), total_terms=total
        )
