"""BM25 keyword index on stock PostgreSQL: an inverted index of (term, unit) postings per search
space (``rag.spaces``): chunks, memory entries and the rest.

Writes are transactional and incremental (postings and per-term document frequencies change in
the same transaction as the units they describe). Reads take, for each query term, only its top
postings in impact order, then score them exactly with BM25 against the current statistics.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from core.db_router import read_connection

# Text analysis lives in rag.analysis; named here too for the index's callers.
from rag.analysis import FUNCTION_WORDS as FUNCTION_WORDS
from rag.analysis import STOP_WORDS as STOP_WORDS
from rag.analysis import analyze as analyze
from rag.analysis import analyze_query as analyze_query
from rag.spaces import CHUNKS, SearchSpace
from rag.tuning import TUNING

# Robertson/Sparck Jones BM25 with Lucene's idf; k1, b and the postings read per query term are
# ``TUNING.keyword`` (rag.tuning).


def idf(df: int, n: int) -> float:
    """Lucene's BM25 idf: always positive, so very common terms still count a little."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def tf_factor(tf: int, length: int, avg_length: float) -> float:
    k1, b = TUNING.keyword.k1, TUNING.keyword.b
    norm = 1 - b + b * (length / avg_length if avg_length > 0 else 1.0)
    return tf * (k1 + 1) / (tf + k1 * norm)


@dataclass(frozen=True)
class ChunkTerms:
    """The analysed form of one unit's text."""

    counts: Counter[str]

    @property
    def length(self) -> int:
        return sum(self.counts.values())


def chunk_terms(text: str) -> ChunkTerms:
    return ChunkTerms(Counter(analyze(text)))


# --- writes (call inside the transaction that writes the units) ------------------------------


@dataclass(frozen=True)
class IndexedUnit:
    """A unit to add to a space's index: its id, its extra posting values (in the space's
    ``posting_extra_columns`` order) and its analysed terms."""

    unit_id: int
    terms: ChunkTerms
    extra: tuple[object, ...] = ()


def postings_add(
    *, space: SearchSpace, scope_id: int, units: Sequence[IndexedUnit], avg_length: float
) -> None:
    """Insert the postings of new units and raise document frequencies accordingly.

    Uses COPY: postings are the bulk of every ingestion's writes. The caller keeps the scope's
    statistics (units, total terms) and the units' lengths.
    """
    df: Counter[str] = Counter()
    columns = ", ".join(
        [
            space.scope_column,
            "term",
            space.posting_unit_column,
            *space.posting_extra_columns,
            "tf",
            space.posting_length_column,
            "impact",
        ]
    )
    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg's own cursor, for COPY
        with raw.copy(f"COPY {space.posting_table} ({columns}) FROM STDIN") as copy:
            for unit in units:
                length = unit.terms.length
                for term, tf in unit.terms.counts.items():
                    df[term] += 1
                    impact = tf_factor(tf, length, avg_length or length)
                    copy.write_row(
                        (scope_id, term, unit.unit_id, *unit.extra, min(tf, 32767), length, impact)
                    )
    _df_apply(space, scope_id, df, sign=1)


def postings_forget(
    *, space: SearchSpace, scope_id: int, unit_ids: Sequence[int], delete: bool = False
) -> tuple[int, int]:
    """Lower document frequencies by the postings of these units of one scope; with ``delete``
    remove the postings too (otherwise the units' own deletion cascades to them).

    Returns (units, total terms) to take off the scope's corpus statistics.
    """
    if not unit_ids:
        return 0, 0
    ids = list(unit_ids)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT term, count(*) FROM {space.posting_table} "  # noqa: S608 - names are code
            f"WHERE {space.scope_column} = %s AND {space.posting_unit_column} = ANY(%s) "
            "GROUP BY term",
            [scope_id, ids],
        )
        df = Counter({term: count for term, count in cursor.fetchall()})
        cursor.execute(
            f"SELECT count(*), coalesce(sum({space.unit_length_column}), 0) "  # noqa: S608
            f"FROM {space.unit_table} WHERE id = ANY(%s) AND {space.scope_column} = %s",
            [ids, scope_id],
        )
        units, terms = cursor.fetchone()
        if delete:
            cursor.execute(
                f"DELETE FROM {space.posting_table} "  # noqa: S608 - names are code
                f"WHERE {space.scope_column} = %s AND {space.posting_unit_column} = ANY(%s)",
                [scope_id, ids],
            )
    _df_apply(space, scope_id, df, sign=-1)
    return int(units), int(terms)


def postings_remove_documents(
    *, knowledge_base_id: int, document_ids: Sequence[int]
) -> tuple[int, int]:
    """Lower document frequencies for documents' chunks (their deletion removes the postings).

    Returns (chunks, total terms) removed from the knowledge base's statistics.
    """
    if not document_ids:
        return 0, 0
    from rag.models import Chunk

    chunk_ids = list(
        Chunk.objects.filter(document_id__in=list(document_ids)).values_list("id", flat=True)
    )
    return postings_forget(space=CHUNKS, scope_id=knowledge_base_id, unit_ids=chunk_ids)


def _df_apply(space: SearchSpace, scope_id: int, df: Counter[str], *, sign: int) -> None:
    """Add (sign=1) or subtract (sign=-1) document frequencies.

    Precondition: the caller holds the scope's row lock (every ingestion swap and deletion takes
    it), which serialises frequency changes within a scope.
    """
    if not df:
        return
    terms = sorted(df)
    counts = [df[t] for t in terms]
    table, scope = space.term_table, space.scope_column
    with connection.cursor() as cursor:
        if sign > 0:
            cursor.execute(
                f"""
                INSERT INTO {table} ({scope}, term, df)
                SELECT %s, t.term, t.delta FROM unnest(%s::text[], %s::int[]) AS t(term, delta)
                ON CONFLICT ({scope}, term)
                DO UPDATE SET df = {table}.df + EXCLUDED.df
                """,  # noqa: S608 - names are code
                [scope_id, terms, counts],
            )
            return
        cursor.execute(
            f"""
            UPDATE {table} AS k SET df = k.df - t.delta
            FROM unnest(%s::text[], %s::int[]) AS t(term, delta)
            WHERE k.{scope} = %s AND k.term = t.term
            """,  # noqa: S608 - names are code
            [terms, counts, scope_id],
        )
        cursor.execute(
            f"DELETE FROM {table} WHERE {scope} = %s AND term = ANY(%s) AND df <= 0",  # noqa: S608
            [scope_id, terms],
        )


# --- reads ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeywordHit:
    unit_id: int
    score: float


@dataclass(frozen=True)
class CorpusStats:
    """What BM25 needs of a corpus for one query: its units, their total terms, and the
    document frequency of each query term found in it. Statistics of several corpora (the
    scopes of several spaces) add up, so that one idf serves them all and their scores compare
    (``merged``)."""

    units: int = 0
    total_terms: int = 0
    df: Mapping[str, int] = field(default_factory=dict)

    @property
    def avg_length(self) -> float:
        return self.total_terms / self.units if self.units else 0.0

    def idf(self, term: str) -> float | None:
        df = self.df.get(term)
        return idf(df, self.units) if df else None

    def upper_bound(self, terms: Sequence[str]) -> float:
        """The score no unit can reach for these terms: every term with its saturated term
        frequency (``k1 + 1``). A score over it is the fraction of the query a unit matches,
        weighted by the terms' rarity: 0 to 1, comparable between queries and corpora."""
        k1p1 = TUNING.keyword.k1 + 1
        return sum((self.idf(t) or 0.0) * k1p1 for t in set(terms))

    @staticmethod
    def merged(*stats: CorpusStats) -> CorpusStats:
        df: Counter[str] = Counter()
        for one in stats:
            df.update(one.df)
        return CorpusStats(
            units=sum(one.units for one in stats),
            total_terms=sum(one.total_terms for one in stats),
            df=dict(df),
        )


def corpus_stats(
    *, space: SearchSpace, scope_ids: Sequence[int], terms: Sequence[str]
) -> CorpusStats:
    """The statistics of the given scopes of a space for the query ``terms``: one statement of
    two indexed reads (the scope rows, and the term rows as a JSON object)."""
    if not scope_ids:
        return CorpusStats()
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""
            SELECT coalesce(sum(s.{space.scope_count_column}), 0),
                   coalesce(sum(s.{space.scope_terms_column}), 0),
                   (SELECT coalesce(json_object_agg(t.term, t.df), '{{}}')
                    FROM (SELECT term, sum(df) AS df FROM {space.term_table}
                          WHERE {space.scope_column} = ANY(%(ids)s) AND term = ANY(%(terms)s)
                          GROUP BY term) t)
            FROM {space.scope_table} s WHERE s.{space.scope_key_column} = ANY(%(ids)s)
            """,  # noqa: S608 - names are code
            {"ids": list(scope_ids), "terms": sorted(set(terms))},
        )
        n, total, df = cursor.fetchone()
    return CorpusStats(int(n), int(total), {t: int(d) for t, d in df.items()} if n else {})


def keyword_search(
    *,
    space: SearchSpace,
    scope_ids: Sequence[int],
    query: str,
    limit: int,
    filter_sql: str = "",
    filter_params: Mapping[str, Any] | None = None,
    postings_per_term: int | None = None,
    stats: CorpusStats | None = None,
    idf_stats: CorpusStats | None = None,
    term_weights: Mapping[str, float] | None = None,
) -> list[KeywordHit]:
    """BM25 top ``limit`` units of the given scopes of a space for ``query``.

    ``term_weights`` (analysed terms to weights, e.g. an expanded query of ``rag.feedback``)
    replaces the query's terms: each term's BM25 contribution is multiplied by its weight.

    ``filter_sql`` is a condition over the space's ``posting_filter_join`` with named
    placeholders, built from validated filters; postings are filtered before the per-term cut.
    ``stats`` are these scopes' statistics when the caller read them already; ``idf_stats``
    the statistics idf comes from, when several corpora are ranked together (their merged
    statistics: then scores of different spaces compare). Length normalisation always uses the
    scopes' own average length.
    """
    terms = sorted(term_weights) if term_weights else sorted(set(analyze_query(query)))
    if not terms or not scope_ids:
        return []
    ids = list(scope_ids)
    scope = space.scope_column
    own = stats if stats is not None else corpus_stats(space=space, scope_ids=ids, terms=terms)
    if not own.units:
        return []
    source = idf_stats if idf_stats is not None else own
    q_terms = [t for t in terms if own.df.get(t)]
    if not q_terms:
        return []
    q_idfs = [
        (source.idf(t) or idf(own.df[t], own.units)) * (term_weights[t] if term_weights else 1.0)
        for t in q_terms
    ]
    join = space.posting_filter_join if filter_sql else ""
    where = f"AND {filter_sql}" if filter_sql else ""
    unit, length = space.posting_unit_column, space.posting_length_column
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""
            SELECT p.{unit},
                   sum(q.idf * p.tf * %(k1p1)s::float8
                       / (p.tf + %(k1)s::float8
                          * (1 - %(b)s::float8 + %(b)s::float8 * p.{length}
                             / %(avgdl)s::float8))) AS score
            FROM unnest(%(terms)s::text[], %(idfs)s::float8[]) AS q(term, idf)
            CROSS JOIN unnest(%(scopes)s::bigint[]) AS s(id)
            CROSS JOIN LATERAL (
                SELECT p.{unit}, p.tf, p.{length}
                FROM {space.posting_table} p {join}
                WHERE p.{scope} = s.id AND p.term = q.term {where}
                ORDER BY p.impact DESC
                LIMIT %(per_term)s
            ) p
            GROUP BY p.{unit}
            ORDER BY score DESC, p.{unit}
            LIMIT %(limit)s
            """,  # noqa: S608 - names are code; filter_sql is built from validated filters
            {
                "k1p1": TUNING.keyword.k1 + 1,
                "k1": TUNING.keyword.k1,
                "b": TUNING.keyword.b,
                "avgdl": own.avg_length,
                "terms": q_terms,
                "idfs": q_idfs,
                "scopes": ids,
                "per_term": postings_per_term or TUNING.keyword.postings_per_term,
                "limit": limit,
                **(filter_params or {}),
            },
        )
        return [KeywordHit(unit_id=row[0], score=float(row[1])) for row in cursor.fetchall()]


def bm25_rank(
    *, query: str, texts: Sequence[str], idf_stats: CorpusStats | None = None
) -> list[KeywordHit]:
    """BM25 over a few texts held in memory (one working-memory session), best first, the
    position in ``texts`` as the unit id; the same formula as the index. ``idf_stats``: the
    statistics idf comes from (the texts' own by default; merged with other corpora's when
    ranked together with them)."""
    terms = sorted(set(analyze_query(query)))
    analysed = [chunk_terms(text) for text in texts]
    own = texts_stats(analysed, terms)
    if not terms or not own.units:
        return []
    source = idf_stats if idf_stats is not None else own
    hits = []
    for position, unit in enumerate(analysed):
        score = sum(
            (source.idf(term) or 0.0) * tf_factor(unit.counts[term], unit.length, own.avg_length)
            for term in terms
            if unit.counts.get(term)
        )
        if score > 0:
            hits.append(KeywordHit(unit_id=position, score=score))
    hits.sort(key=lambda hit: (-hit.score, hit.unit_id))
    return hits


def texts_stats(analysed: Sequence[ChunkTerms], terms: Sequence[str]) -> CorpusStats:
    """The statistics of analysed texts held in memory, for the query ``terms``."""
    df = {t: sum(1 for unit in analysed if unit.counts.get(t)) for t in set(terms)}
    return CorpusStats(
        units=len(analysed),
        total_terms=sum(unit.length for unit in analysed),
        df={t: n for t, n in df.items() if n},
    )


#: Units analysed and written per step of ``index_rebuild``.
REBUILD_BATCH = 2000


def _lengths_write(space: SearchSpace, lengths: list[tuple[int, int]]) -> int:
    """Write the units' BM25 lengths; returns their sum."""
    if not lengths:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {space.unit_table} u SET {space.unit_length_column} = v.length "  # noqa: S608
            "FROM unnest(%s::bigint[], %s::int[]) AS v(id, length) WHERE u.id = v.id",
            [[unit for unit, _ in lengths], [length for _, length in lengths]],
        )
    return sum(length for _, length in lengths)


def index_rebuild(*, space: SearchSpace, scope_id: int) -> None:
    """Recompute every posting, term frequency and corpus statistic of one scope of a space from
    its units' text, in one transaction (searches see the old index until it commits)."""
    from django.db import transaction

    if space.rebuild_rows is None:
        raise ValueError(f"The {space.name} space cannot be rebuilt.")
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT 1 FROM {space.scope_table} "  # noqa: S608 - names are code
                f"WHERE {space.scope_key_column} = %s FOR NO KEY UPDATE",
                [scope_id],
            )
            cursor.execute(
                f"DELETE FROM {space.posting_table} WHERE {space.scope_column} = %s",  # noqa: S608
                [scope_id],
            )
            cursor.execute(
                f"DELETE FROM {space.term_table} WHERE {space.scope_column} = %s",  # noqa: S608
                [scope_id],
            )
        # Two passes over the units, streamed in batches, so that memory stays flat whatever
        # the scope's size: the lengths (and the corpus statistics every impact needs), then
        # the postings. Each text is analysed twice: CPU traded for memory.
        count = total = 0
        lengths: list[tuple[int, int]] = []
        for unit_id, _, text in space.rebuild_rows(scope_id):
            lengths.append((unit_id, chunk_terms(text).length))
            if len(lengths) >= REBUILD_BATCH:
                count, total = count + len(lengths), total + _lengths_write(space, lengths)
                lengths = []
        count, total = count + len(lengths), total + _lengths_write(space, lengths)
        average = total / count if count else 0.0
        units: list[IndexedUnit] = []
        for unit_id, extra, text in space.rebuild_rows(scope_id):
            units.append(IndexedUnit(unit_id=unit_id, extra=extra, terms=chunk_terms(text)))
            if len(units) >= REBUILD_BATCH:
                postings_add(space=space, scope_id=scope_id, units=units, avg_length=average)
                units = []
        if units:
            postings_add(space=space, scope_id=scope_id, units=units, avg_length=average)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {space.scope_table} SET {space.scope_count_column} = %s, "  # noqa: S608
                f"{space.scope_terms_column} = %s WHERE {space.scope_key_column} = %s",
                [count, total, scope_id],
            )
