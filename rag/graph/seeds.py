"""The seeds of graph retrieval (``rag.graph.retrieval``, step 1): the nodes the query names
(its spans against the nodes' name and alias keys), then, when it names none, the nodes nearest
its embedding (docs/rag.md, "Graph mode")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from core.db_router import read_connection
from core.embeddings import get_embedding_provider
from rag.analysis import FUNCTION_WORDS, STOP_WORDS
from rag.graph.graph_types import Seed
from rag.graph.names import name_key
from rag.models import GraphScope
from rag.spaces import GRAPH_NODES, SearchSpace
from rag.tuning import TUNING
from rag.vector import vector_literal, vector_search

# Words that end no entity's name in a question: stop and question words, auxiliaries, and the
# verbs a relation chain is made of ("jonas lind was", "runs the harbor library": no seed slot).
_EDGE_WORDS_TEXT = """
    about after also an any before born by can could from has he her his i its me my our she so
    some their them they us we who whom whose would you your person people one"""
_EDGE_WORDS = STOP_WORDS | FUNCTION_WORDS | frozenset(_EDGE_WORDS_TEXT.split())
_POSSESSIVE = re.compile(r"['\u2019]s\b")


def query_names(query: str) -> list[tuple[str, int, int]]:
    """The spans of the query that may name a node: (name key, first word, word count), every
    run of up to ``TUNING.seeds.max_query_ngram`` words that neither starts nor ends with a
    function word, longest first ("the founder of Harbor Library's cafe" -> "founder of harbor
    library cafe", ..., "harbor library", "harbor", ...)."""
    words = [w.casefold() for w in re.findall(r"[^\W_]+", _POSSESSIVE.sub("", query))]
    spans = [
        (" ".join(words[i : i + n]), i, n)
        for n in range(min(TUNING.seeds.max_query_ngram, len(words)), 0, -1)
        for i in range(len(words) - n + 1)
        if words[i] not in _EDGE_WORDS and words[i + n - 1] not in _EDGE_WORDS
    ]
    return [(name_key(key), i, n) for key, i, n in spans if name_key(key)]


def _junk(key: str) -> bool:
    """An n-gram node that adds a function word or a verb to a name ("jonas lind was")."""
    words = key.split()
    return not words or words[0] in _EDGE_WORDS or words[-1] in _EDGE_WORDS


def seed_nodes(
    *,
    account_ids: Sequence[int],
    space: SearchSpace,
    scope_ids: Sequence[int],
    vector: Any,
    query: str = "",
) -> list[Seed]:
    """The query's seed nodes among those a unit of the scopes mentions (step 1), at most
    ``TUNING.seeds.max_nodes``: first the nodes the query names (a span's ``name_key`` equal to a
    node's name key or one of its alias keys; the longest spans first, a span inside a longer
    one that matched left out), then the nodes nearest the query's embedding, none farther
    than ``TUNING.seeds.distance_threshold`` and none whose name starts or ends with a function word
    (an n-gram that adds "was" to a name)."""
    with read_connection().cursor() as cursor:  # written out: asked on every graph search
        cursor.execute(
            f"SELECT id FROM {GraphScope._meta.db_table} WHERE account_id = ANY(%s)",  # noqa: S608
            [list(account_ids)],
        )
        graph_scopes = [row[0] for row in cursor.fetchall()]
    if not graph_scopes or not scope_ids:
        return []
    mentioned = (
        "EXISTS (SELECT FROM rag_graphmention m WHERE m.node_id = {n}.id "
        "AND m.space = %(g_space)s AND m.scope_id = ANY(%(g_scopes)s))"
    )
    params: dict[str, Any] = {"g_space": space.name, "g_scopes": list(scope_ids)}
    seeds: list[Seed] = []
    spans = query_names(query) if query else []
    if spans:
        keys = sorted({key for key, _, _ in spans})
        with read_connection().cursor() as cursor:
            cursor.execute(
                f"""
                SELECT n.id, n.name, n.entity_type, n.mention_count, n.name_key, n.alias_keys,
                       coalesce(CASE WHEN n.embedding_model = %(model)s
                                THEN 1 - (n.embedding <=> %(q)s::vector) END, 0) AS similarity
                FROM rag_graphnode n
                WHERE n.account_id = ANY(%(accounts)s) AND n.status = 'active'
                  AND (n.name_key = ANY(%(keys)s::varchar[]) OR n.alias_keys && %(keys)s::varchar[])
                  AND {mentioned.format(n="n")}
                """,  # noqa: S608 - the condition is code, its values parameters
                {**params, "q": vector_literal(vector), "accounts": list(account_ids),
                 "keys": keys, "model": get_embedding_provider().model_id},
            )  # fmt: skip
            rows = cursor.fetchall()
        by_key: dict[str, list[tuple[Any, ...]]] = {}
        for row in rows:
            for key in {row[4], *(row[5] or [])} & set(keys):
                by_key.setdefault(key, []).append(row)
        covered: set[int] = set()
        for key, first, count in spans:  # longest first
            span = set(range(first, first + count))
            if key not in by_key or span & covered:
                continue
            covered |= span
            for node_id, name, entity_type, mentions, node_key, _, similarity in sorted(
                by_key[key],
                key=lambda r: (r[3] or 0, r[0]),  # the rarer node first
            ):
                if all(s.node_id != node_id for s in seeds):
                    match = "name" if node_key == key else "alias"
                    seeds.append(
                        Seed(node_id, name, entity_type, float(similarity or 0.0), match,
                             mentions or 0)
                    )  # fmt: skip
        seeds = seeds[: TUNING.seeds.max_nodes]
    room = TUNING.seeds.max_nodes - len(seeds)
    if room <= 0 or (seeds and TUNING.seeds.embedding_weight <= 0):
        return seeds  # the embedding's seeds would weigh nothing next to the names
    nearest = vector_search(
        space=GRAPH_NODES,
        scope_ids=graph_scopes,
        query_vector=vector,
        limit=room + TUNING.seeds.embedding_spare,
        filter_sql="u.status = 'active' AND " + mentioned.format(n="u"),
        filter_params=params,
    )
    known = {s.node_id for s in seeds}
    kept = [
        (i, s) for i, s in nearest if 1.0 - s <= TUNING.seeds.distance_threshold and i not in known
    ]
    if not kept:
        return seeds
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT id, name, entity_type, name_key, mention_count FROM rag_graphnode "
            "WHERE id = ANY(%s)",
            [[i for i, _ in kept]],
        )
        names = {row[0]: row[1:] for row in cursor.fetchall()}
    named = [f" {name_key(s.name)} " for s in seeds]
    for node_id, similarity in kept:
        if len(seeds) >= TUNING.seeds.max_nodes:
            break
        if node_id not in names or _junk(names[node_id][2]):
            continue
        if any(key in f" {names[node_id][2]} " for key in named):
            continue  # a named node's n-gram ("selma jessley lives"): the name seeds already
        if named and not TUNING.seeds.concepts_with_names and names[node_id][1] == "concept":
            continue
        name, entity_type, _, mentions = names[node_id]
        seeds.append(Seed(node_id, name, entity_type, similarity, "embedding", mentions or 0))
    return seeds
