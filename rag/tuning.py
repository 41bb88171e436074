"""rag's tunables: the search engine's ranking weights, depths and thresholds, the graph stage's,
graph RAG's and agentic RAG's, each with what it means and the benchmark that chose it
(``core.tuning``; docs/tuning.md lists them all). Code reads ``TUNING.<area>.<name>`` at call
time; bench/ overrides them with ``core.tuning.override("rag.<area>.<name>", value)``.

"log" below is docs/benchmarks-log.md (its section), "figures" docs/benchmarks.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.tuning import register, tunable

_SCIFACT = "log 'Retrieval quality: BEIR SciFact, train split'"
_RECALL = (
    "bench/rag/recall_sweep.py on LoCoMo dev and SciFact train (log 'Recall quality across"
    " search spaces')"
)
_MULTIHOP = "bench/rag/multihop.py (log 'Multi-hop questions: a benchmark of our own')"
_GRAPH = "log 'Graph retrieval and graph RAG'"
_AGENTIC = "log 'Agentic RAG'"


@dataclass(frozen=True)
class Search:
    candidate_factor: int = tunable(
        5,
        meaning="Candidates each stage of a fused search reads per requested result (every space"
        " searched through rag.search, graph nodes and skills alike).",
        bench=f"not swept: the stage depth since the first SciFact runs ({_SCIFACT})",
    )
    min_candidates: int = tunable(
        50,
        meaning="The fewest candidates each stage reads, however small top_k is.",
        bench=f"not swept: the stage depth since the first SciFact runs ({_SCIFACT})",
    )


@dataclass(frozen=True)
class Fusion:
    rrf_k: int = tunable(
        60,
        meaning="Reciprocal rank fusion's k: a rank r counts 1 / (k + r).",
        bench=f"bench/rag/fusion_sweep.py on SciFact train: k 60 0.7220, k 10 0.7317, both below"
        f" weighted fusion ({_SCIFACT}, 'choosing the constants')",
    )
    vector_weight: float = tunable(
        0.5,
        meaning="The vector stage's weight in a fused search when the caller gives none.",
        bench=f"bench/rag/fusion_sweep.py on SciFact train: min-max 0.5 / 0.5 0.7406, 0.4 / 0.6"
        f" 0.7361, 0.6 / 0.4 0.7339 ({_SCIFACT}, 'choosing the constants')",
    )
    keyword_weight: float = tunable(
        0.5,
        meaning="The keyword (BM25) stage's weight in a fused search when the caller gives none.",
        bench=f"bench/rag/fusion_sweep.py on SciFact train ({_SCIFACT}, 'choosing the constants')",
    )


@dataclass(frozen=True)
class Keyword:
    k1: float = tunable(
        0.9,
        meaning="BM25's term-frequency saturation.",
        bench=f"bench/rag/bm25_params.py: SciFact train flat over k1 x b, Anserini's kept"
        f" ({_SCIFACT}, 'choosing the constants'); LoCoMo dev alike (log 'BM25's k1 and b for"
        f" conversations')",
    )
    b: float = tunable(
        0.4,
        meaning="BM25's length normalisation.",
        bench=f"bench/rag/bm25_params.py, as k1 ({_SCIFACT}, 'choosing the constants'; log"
        f" 'BM25's k1 and b for conversations')",
    )
    postings_per_term: int = tunable(
        1000,
        meaning="Postings read per query term, in impact order: bounds the cost of common terms.",
        bench=f"bench/rag/bm25_params.py on SciFact train: 1,000 0.6958 nDCG@10 against all"
        f" 0.6965 at two thirds of the latency ({_SCIFACT}, 'choosing the constants')",
    )
    query_function_words: bool = tunable(
        True,
        meaning="Drop a question's own function words (what, did, she) when it names anything"
        " else; statements are never analysed so.",
        bench=f"bench/rag/recall_sweep.py: LoCoMo dev Recall@10 +0.016 / +0.021; on statements it"
        f" cost SciFact 0.0012 nDCG@10 ({_SCIFACT}, 'query analysis for questions only')",
    )


@dataclass(frozen=True)
class Feedback:
    units: int = tunable(
        10,
        meaning="prf: the best units of the first pass that feed the expansion.",
        bench=_RECALL,
    )
    terms: int = tunable(
        10,
        meaning="prf: the expansion terms mixed into the query.",
        bench=_RECALL,
    )
    original_weight: float = tunable(
        0.8,
        meaning="prf: the query's own terms' share of the expanded query (RM3's lambda).",
        bench=_RECALL,
    )
    min_term_chars: int = tunable(
        2,
        meaning="prf: terms shorter than this (single letters, stray digits) never expand.",
        bench=_RECALL,
    )
    idf_weighted: bool = tunable(
        False,
        meaning="prf: weigh each candidate term by its idf in the scope.",
        bench=_RECALL,
    )
    vector_feedback: float = tunable(
        0.3,
        meaning="prf: how far the query's embedding moves towards the feedback units' mean"
        " (Rocchio); 0 keeps the first pass's vector stage.",
        bench=_RECALL,
    )


@dataclass(frozen=True)
class Granularity:
    group_weight_all: float | None = tunable(
        None,
        meaning="When set, the group lift's weight in every space (a sweep's override); None:"
        " each space's own group_weight.",
        bench=f"bench/rag/recall_sweep.py and bench/memory/context_locomo.py sweeps of the group"
        f" lift ({_RECALL})",
    )
    group_top: int = tunable(
        3,
        meaning="A group's match: the sum of its best this-many units' scores.",
        bench=f"bench/rag/recall_sweep.py: GROUP_TOP 1, 3, 5 on LoCoMo dev ({_RECALL})",
    )
    diversity_depth: int = tunable(
        50,
        meaning="How many of the best candidates a diversified ranking reorders.",
        bench="bench/memory/context_locomo.py (log 'Sessions spread')",
    )


@dataclass(frozen=True)
class LateInteraction:
    depth: int = tunable(
        30,
        meaning="How many of a graph search's best candidates late interaction re-scores.",
        bench="bench/memory/memory_search.py on LoCoMo dev: 30, 50 and 100 rank alike (log 'Late"
        " interaction')",
    )
    content_only: bool = tunable(
        True,
        meaning="Match only the query's content tokens (no function or stop words).",
        bench="LoCoMo dev (log 'Late interaction')",
    )
    rarity_floor: float = tunable(
        0.1,
        meaning="The least weight of a query token that every candidate has.",
        bench="LoCoMo dev (log 'query words weighted by their rarity')",
    )


@dataclass(frozen=True)
class Evidence:
    intercept: float = tunable(
        -10.03,
        meaning="Calibrated evidence: the logistic fit's intercept.",
        bench=f"fitted on SciFact train by bench/rag/agentic_calibration.py ({_AGENTIC},"
        f" 'calibration of the scores')",
    )
    similarity: float = tunable(
        12.92,
        meaning="Calibrated evidence: the weight of the query - chunk cosine similarity.",
        bench=f"fitted on SciFact train by bench/rag/agentic_calibration.py ({_AGENTIC},"
        f" 'calibration of the scores')",
    )
    coverage: float = tunable(
        5.85,
        meaning="Calibrated evidence: the weight of the query's idf-weighted term coverage.",
        bench=f"fitted on SciFact train by bench/rag/agentic_calibration.py ({_AGENTIC},"
        f" 'calibration of the scores')",
    )
    context_min: float | None = tunable(
        0.01,
        meaning="A context (memory's documents, graph RAG) shows a chunk only when its"
        " calibrated evidence reaches this; None: no floor.",
        bench="bench/memory/context_floors.py on SciFact train, LoCoMo dev as documents and a"
        " synthetic set (log 'Every source on topic')",
    )


@dataclass(frozen=True)
class Vector:
    exact_scan_always: int = tunable(
        1_000,
        meaning="Scopes of at most this many units are always searched exactly (every unit"
        " compared: about 2 ms per 1,000, and exact by construction).",
        bench="bench/memory/context_assembly.py: a conversation of 1,000 turns in an account of"
        " 100k memories, 1.6 ms compared exactly (log 'small scopes searched exactly')",
    )
    exact_scan_units: int = tunable(
        5_000,
        meaning="Scopes of at most this many units are searched exactly when they hold at most"
        " exact_scan_share of the space's units; larger scopes go through the space's shared"
        " HNSW index.",
        bench="bench/memory/context_assembly.py: a conversation of 1,000 turns in an account of"
        " 100k memories (log 'small scopes searched exactly')",
    )
    exact_scan_share: float = tunable(
        0.25,
        meaning="The largest share of the space's units (the planner's estimate) a scope of"
        " exact_scan_always to exact_scan_units units may hold and still be searched exactly:"
        " above it, the index's walk mostly meets the scope's own units.",
        bench="bench/memory/memory_graph_latency.py: 5,000 turns alone in the table, 11.8 ms"
        " exact against 1.6 ms indexed, 98.5 % of the top 100 shared (log 'Graph-mode memory"
        " search latency')",
    )


@dataclass(frozen=True)
class SpaceWeights:
    """One search space's ranking weights (``rag.spaces.space_weights``)."""

    group_weight: float = tunable(
        0.0,
        meaning="How much a group's match (a chunk's document) lifts its units; 0: off.",
        bench=f"per space on development data ({_RECALL}; log 'the session lift again')",
    )
    graph_weight: float = tunable(
        0.3,
        meaning="The graph stage's weight when a search fuses it with the vector and keyword"
        " stages and the caller gives none.",
        bench="per space: SciFact train and bench/rag/locomo_documents.py (log 'Graph weight per"
        " space', 'Multi-hop questions over documents')",
    )
    hop_decay: float = tunable(
        0.5,
        meaning="What a node reached by the graph walk keeps of its parent's score per hop.",
        bench="per space on LoCoMo dev and SciFact train (log 'Hop decay per space')",
    )
    graph_similarity: float = tunable(
        0.2,
        meaning="A unit's graph-stage score mixes its PageRank mass with its cosine similarity"
        " to the query by this weight.",
        bench=f"per space: {_MULTIHOP}; docs/rag.md 'Graph mode'",
    )
    late_weight: float = tunable(
        0.0,
        meaning="How much a graph search's best candidates gain from late interaction; 0: off.",
        bench="per space on LoCoMo dev (log 'Late interaction', 'the late weight's plateau,"
        " finer')",
    )
    units_read_per_node: int = tunable(
        0,
        meaning="Per reached node that is no hub, at most this many of the units mentioning it"
        " are compared with the query (the most salient, the newest first among equals); 0: all."
        " It bounds the graph's units stage where the hub limit (hub_share of the units) grows.",
        bench="memory entries 250: LoCoMo dev and the 5,000-turn account (hub limit 250) cut"
        " nothing; 20,000 turns: graph p95 92.7 -> 81.1 ms, its units stage 58.6 -> 48.6 ms (log"
        " 'Graph-mode memory search at 20,000 turns'); chunks: not measured on SciFact, off",
    )

    passage_nodes_walked: bool = tunable(
        True,
        meaning="A candidate passage's entity that a query seed's walk reaches is walked on from"
        " as that seed's own (a longer chain goes on through it).",
        bench="chunks on: bench/rag/multihop.py three-hop top-5 0.06 -> 0.17 without the next"
        " hop's shift, two-hop 0.86 -> 0.89 (log 'The first hop's relation'); memory entries"
        " off: LoCoMo dev Recall@10 0.8637 -> 0.8615 (conv-30 0.8737 -> 0.8675, conv-26 the"
        " same)",
    )
    units_read_per_search: int = tunable(
        0,
        meaning="A graph search reads the units of its reached nodes that are no hubs from the"
        " least mentioned up, while the mentions so read (each node's counted up to"
        " units_read_per_node) stay within this; 0: every such node's. The most mentioned nodes"
        " carry the least specificity, and they cost the most.",
        bench="memory entries 600: LoCoMo dev Recall@10 unchanged from 150 up in both"
        " conversations (50: 0.8637 -> 0.8572), the 5,000-turn account's from 300 up; graph p95"
        " there 43.0 -> 36.0 ms (log 'A budget of units per graph search'); chunks: not"
        " measured, off",
    )


@dataclass(frozen=True)
class Spaces:
    chunks: SpaceWeights = SpaceWeights(
        # SciFact train nDCG@10 by graph weight: 0.3 0.7368, 0.2 0.7375, 0.1 0.7404, 0.05 0.7406
        # (hybrid 0.7410), noise across its folds; LoCoMo dev as documents: 0.1 finds more
        # multi-hop evidence within five chunks than 0 at chunks of 64, 128 and 256 tokens.
        graph_weight=0.1,
    )
    graph_nodes: SpaceWeights = SpaceWeights()


@dataclass(frozen=True)
class Hops:
    """Every hop count of the graph, in one place: the bounds callers may ask for, the defaults
    they get, and the walk of the graph stage's own passages."""

    walk_max: int = tunable(
        5,
        meaning="The most hops a caller may ask a walk to take: a node's neighbourhood"
        " (/api/v1/graph/) and a graph search's or graph RAG's max_hops (an API bound).",
        bench="an API bound, not swept: bench/rag/graph_traversal.py times walks up to it (log"
        " 'Knowledge graph')",
        import_time=True,
    )
    path_max: int = tunable(
        6,
        meaning="A shortest path longer than this is reported as no path.",
        bench="an API bound, not swept: bench/rag/graph_traversal.py (log 'Knowledge graph')",
        import_time=True,
    )
    search_default: int = tunable(
        2,
        meaning="A graph search's max_hops when the caller gives none (API default).",
        bench=f"{_MULTIHOP}: two hops reach a 2-hop question's answer; {_GRAPH}",
        import_time=True,
    )
    graph_rag_default: int = tunable(
        3,
        meaning="Graph RAG context's max_hops when the caller gives none (API default).",
        bench=f"bench/rag/graph_rag.py ({_GRAPH})",
        import_time=True,
    )
    drawing_default: int = tunable(
        1,
        meaning="The admin's graph drawing: hops around a node by default.",
        bench="not measured: a readable drawing within its node cap (docs/admin.md)",
        import_time=True,
    )
    drawing_max: int = tunable(
        3,
        meaning="The admin's graph drawing: the most hops one may ask for.",
        bench="not measured: a readable drawing within its node cap (docs/admin.md)",
        import_time=True,
    )
    passage: int = tunable(
        0,
        meaning="How far the graph stage walks from a candidate passage's entities (their units"
        " are read whatever it is: passage -> entity -> passage is the first hop).",
        bench=_MULTIHOP,
    )


@dataclass(frozen=True)
class Seeds:
    max_nodes: int = tunable(
        5,
        meaning="The most seed nodes a graph search starts from.",
        bench=f"bench/rag/graph_rag.py ({_GRAPH}); {_MULTIHOP}",
    )
    distance_threshold: float = tunable(
        0.8,
        meaning="A node found by embedding seeds only within this cosine distance of the query.",
        bench=f"bench/rag/graph_rag.py ({_GRAPH})",
    )
    embedding_weight: float = tunable(
        0.0,
        meaning="In the reset vector, an embedding-found seed's similarity is multiplied by this"
        " when the query named some node (a named node weighs 1).",
        bench=f"{_MULTIHOP}: the embedding's neighbours are often other documents' phrases",
    )
    concepts_with_names: bool = tunable(
        True,
        meaning="Key phrases (concept nodes) found by embedding seed a query that named a node.",
        bench=f"{_MULTIHOP}",
    )
    max_query_ngram: int = tunable(
        5,
        meaning="The longest run of query words matched against node names.",
        bench=f"{_MULTIHOP}",
    )
    embedding_spare: int = tunable(
        2,
        meaning="Nearest nodes read beyond the free seed slots, for the n-grams the filter"
        " refuses.",
        bench=f"{_MULTIHOP}",
    )


@dataclass(frozen=True)
class Walk:
    max_communities: int = tunable(
        10,
        meaning="The most communities a graph search or graph RAG context names.",
        bench=f"bench/rag/graph_rag.py ({_GRAPH})",
    )
    community_min_size: int = tunable(
        3,
        meaning="Communities smaller than this are not kept (a level's community of twice this"
        " is split into the next level).",
        bench=f"bench/rag/graph_rag.py ({_GRAPH})",
    )
    fanout: int = tunable(
        25,
        meaning="The heaviest edges the walk follows from each node.",
        bench=f"bench/rag/graph_traversal.py latency and {_MULTIHOP}",
    )
    max_reached: int = tunable(
        300,
        meaning="The walk stops after reaching this many nodes.",
        bench=f"bench/rag/graph_traversal.py latency and {_MULTIHOP}",
    )
    units_per_node: int = tunable(
        100,
        meaning="Per reached node, the units most similar to the query that are read.",
        bench="LoCoMo dev: a speaker's node is mentioned by hundreds of turns (log 'Units per"
        " node')",
    )
    passage_candidates: int = tunable(
        20,
        meaning="The other stages' best candidates put in the PageRank's reset vector.",
        bench=f"{_MULTIHOP}",
    )
    passage_nodes: int = tunable(
        6,
        meaning="The most salient entities of each candidate passage where the walk starts too.",
        bench=f"{_MULTIHOP}",
    )
    hub_share: float = tunable(
        0.05,
        meaning="A node mentioned by more than this share of the searched units (and at least"
        " hub_min_mentions times) is reached but not walked from; its units are not read.",
        bench=f"{_MULTIHOP}; LoCoMo dev graph mode ({_GRAPH})",
    )
    hub_min_mentions: int = tunable(
        50,
        meaning="A node mentioned fewer times than this is never a hub.",
        bench=f"{_MULTIHOP}; LoCoMo dev graph mode ({_GRAPH})",
    )


@dataclass(frozen=True)
class PageRank:
    damping: float = tunable(
        0.5,
        meaning="The probability of following an edge rather than jumping back.",
        bench=f"HippoRAG 2's value; {_MULTIHOP} ('graph mode ranks by personalized PageRank')",
    )
    iterations: int = tunable(
        40,
        meaning="Power iterations at most.",
        bench="converges within 40 on bench/rag/multihop.py",
    )
    tolerance: float = tunable(
        1e-7, meaning="Power iteration stops below this change.", bench="numerical, by inspection"
    )
    typed_edge_weight: float = tunable(
        2.0,
        meaning="A typed relation's edge weight against a co-occurrence's 1.",
        bench=f"{_MULTIHOP}",
    )
    passage_share: float = tunable(
        0.15,
        meaning="The candidate passages' share of the reset vector (the seeds have the rest).",
        bench=f"{_MULTIHOP}",
    )
    passage_power: float = tunable(
        2.0,
        meaning="A candidate's reset weight: its score between the last's and the best's to this"
        " power.",
        bench=f"{_MULTIHOP}",
    )
    chain_shift: float = tunable(
        1.0,
        meaning="Relation-chain question: the share of a named seed's restart that moves to its"
        " neighbours (the bridge).",
        bench=f"{_MULTIHOP}",
    )
    chain_passage_share: float = tunable(
        0.0,
        meaning="Relation-chain question naming a node: the candidate passages' share of the"
        " restart.",
        bench=f"{_MULTIHOP}",
    )
    chain_first_hop_rank: int = tunable(
        0,
        meaning="Relation-chain question: where the first hop's best passage ranks at the worst"
        " (0: anywhere).",
        bench=f"{_MULTIHOP}",
    )
    chain_first_hop: float = tunable(
        0.1,
        meaning="Relation-chain question: how much of their score the passages naming a named"
        " seed (the first hop) keep.",
        bench=f"{_MULTIHOP}",
    )
    chain_edge_prior: float = tunable(
        0.03,
        meaning="The bridge's weight from a co-occurrence edge alone.",
        bench=f"{_MULTIHOP}",
    )
    chain_typed_prior: float = tunable(
        0.1,
        meaning="The bridge's weight from a typed edge alone.",
        bench=f"{_MULTIHOP}",
    )
    chain_passages: float = tunable(
        0.3,
        meaning="The bridge's weight from the candidate passages naming both ends.",
        bench=f"{_MULTIHOP}",
    )
    chain_next_shift: float = tunable(
        1.0,
        meaning="A longer relation chain: the share of a bridge's restart that moves on to the"
        " nodes the next hop's relations join it to (typed edges only); 0: off.",
        bench=f"{_MULTIHOP}: three-hop top-5 0.17 / 0.58 / 0.65 at 0 / 0.5 / 1 (development"
        " worlds; 1 at least as good in each fold), unseen worlds 0.08 / 0.48 / 0.58; two-hop"
        " unchanged (log 'The first hop's relation')",
    )
    first_hop_bridge: bool = tunable(
        True,
        meaning="Relation-chain question: the bridge is weighed by the first hop's relations"
        " (the description around the named entity) instead of every relation the question"
        " names.",
        bench=f"{_MULTIHOP} (log 'The first hop's relation')",
    )
    relation_match: float = tunable(
        10.0,
        meaning="Typed edges of a relation the query names weigh this much more (walk and bridge).",
        bench=f"{_MULTIHOP}",
    )
    fact_weight: float = tunable(
        1.0,
        meaning="A unit stating a relation the query names is joined to both its ends with this"
        " weight.",
        bench=f"{_MULTIHOP}",
    )


@dataclass(frozen=True)
class Staged:
    graph_led_spaces: tuple[str, ...] = tunable(
        ("chunks",),
        meaning="The spaces whose graph mode the graph leads on a relation-chain question naming"
        " a node; elsewhere the graph is fused at the space's graph_weight.",
        bench="memory entries fuse: LoCoMo dev Recall@10 0.855 / 0.855 fused against 0.839 /"
        f" 0.811 led ({_GRAPH}); chunks lead ({_MULTIHOP})",
    )
    specific_led_spaces: tuple[str, ...] = tunable(
        ("memory_entries",),
        meaning="The spaces whose graph mode the graph leads on a relation-chain question only"
        " when a node it names is no hub (fewer mentions than the walk's hub limit: not a"
        " speaker who says most turns); elsewhere in them the graph is fused.",
        bench="LoCoMo dev, graph mode: every category's Recall@5 / @10 the same with and"
        " without it (multi-hop 0.364 / 0.5585); without it a hop-only entry never reached the"
        f" top 3 (tests/memory/test_long_term_api.py) ({_GRAPH})",
    )
    graph_leads_always: bool = tunable(
        False,
        meaning="The graph leads every graph-mode search of the graph-led spaces, chain or not.",
        bench=f"SciFact train nDCG@10 0.6783 led against hybrid's 0.7383 ({_GRAPH})",
    )
    hybrid_hop_gate: bool = tunable(
        True,
        meaning="Hybrid chunk search lets the graph lead a relation-chain question naming a node.",
        bench=f"{_MULTIHOP} hybrid top-5 ('the hop gate'); SciFact's claims unchanged",
    )


@dataclass(frozen=True)
class GraphRag:
    summary_share: int = tunable(
        3,
        meaning="Graph RAG: community summaries take at most 1 / this of the token budget.",
        bench=f"bench/rag/graph_rag.py ({_GRAPH})",
    )


@dataclass(frozen=True)
class Agentic:
    min_relevant_results: int = tunable(
        3,
        meaning="A round is sufficient with at least this many results above min_avg_score.",
        bench=f"issue 19's seed constants; bench/rag/agentic_query.py ({_AGENTIC})",
    )
    min_avg_score: float = tunable(
        0.5,
        meaning="A round is sufficient when its best results' mean evidence reaches this.",
        bench=f"issue 19's seed constants, on calibrated evidence ({_AGENTIC}, 'calibration of"
        f" the scores')",
    )
    reformulated_weight: float = tunable(
        0.2,
        meaning="Sources: the n-th reformulation's results weigh this over n in the fusion"
        " (the question's own round 1).",
        bench=f"bench/rag/agentic_fusion.py on SciFact train: equal weights cost 0.011 nDCG@10"
        f" ({_AGENTIC}, 'Fusing the rounds')",
    )
    bridge_fusion: Literal["evidence", "resolved", "rrf", "interleave"] = tunable(
        "resolved",
        meaning="Sources when a round followed a bridge entity (docs/rag.md 'Agentic RAG').",
        bench=f"{_MULTIHOP}, agentic 2-hop top-5: resolved 0.60, evidence 0.59, interleave 0.53,"
        " rrf 0.24",
    )
    resolved_first: int = tunable(
        1,
        meaning="With 'resolved': the first results of the resolved question's round lead.",
        bench=f"{_MULTIHOP}, agentic",
    )
    graph_led_first: int = tunable(
        5,
        meaning="When the graph led round 1, its first results lead the sources.",
        bench=f"{_MULTIHOP}, agentic",
    )
    chain_mode: Literal["hybrid", "graph"] = tunable(
        "hybrid",
        meaning="The search mode of a round whose question describes an entity, and of the"
        " rounds that follow a bridge.",
        bench=f"{_MULTIHOP}, agentic",
    )
    bridge_weight: Literal["rank", "sentence"] = tunable(
        "sentence",
        meaning="How a bridge candidate's sentence weighs: its hit's rank or its cosine"
        " similarity to the description.",
        bench=f"{_MULTIHOP}, agentic",
    )
    bridge_mode: Literal["hybrid", "graph"] = tunable(
        "hybrid",
        meaning="The search mode of the round that looks for a bridge entity.",
        bench=f"{_MULTIHOP}, agentic",
    )
    context_results: int = tunable(
        20,
        meaning="The round's results whose text types the bridge candidates.",
        bench=f"{_MULTIHOP}, agentic",
    )
    covering_results: int = tunable(
        5,
        meaning="The results whose words count as covering the question (gap identification).",
        bench=f"bench/rag/agentic_query.py ({_AGENTIC})",
    )
    feedback_results: int = tunable(
        3,
        meaning="Offline reformulation: words taken from the round's best this-many results.",
        bench=f"bench/rag/agentic_query.py ({_AGENTIC})",
    )
    expansion_terms: int = tunable(
        5,
        meaning="Offline reformulation: the words added to the query.",
        bench=f"bench/rag/agentic_query.py ({_AGENTIC})",
    )
    llm_reformulation_results: int = tunable(
        5,
        meaning="The round's best results the model reads to reformulate or name a bridge.",
        bench=f"cost: bench/rag/agentic_query.py with a model ({_AGENTIC})",
    )
    answer_sentences: int = tunable(
        3,
        meaning="Offline synthesis: at most this many sentences.",
        bench="not measured: a short extractive answer",
    )
    answer_sources: int = tunable(
        5,
        meaning="Offline synthesis: sentences from at most this many sources.",
        bench="not measured: a short extractive answer",
    )
    llm_sources: int = tunable(
        8,
        meaning="The model's synthesis reads at most this many sources.",
        bench=f"cost: bench/rag/agentic_query.py with a model ({_AGENTIC})",
    )
    llm_source_chars: int = tunable(
        1500,
        meaning="Each source the model reads is cut to this many characters.",
        bench=f"cost: bench/rag/agentic_query.py with a model ({_AGENTIC})",
    )
    answer_max_tokens: int = tunable(
        600,
        meaning="The model's answer is at most this many tokens.",
        bench=f"cost: bench/rag/agentic_query.py with a model ({_AGENTIC})",
    )
    unit_entities: int = tunable(
        12,
        meaning="Per unit, the most salient graph mentions read for bridge candidates.",
        bench="an extractor keeps at most entities_per_unit (build) per unit",
    )
    bridge_results: int = tunable(
        5,
        meaning="The round's best hits whose entities may be the bridge.",
        bench=f"{_MULTIHOP}, agentic",
    )
    type_mismatch: float = tunable(
        0.25,
        meaning="A bridge candidate of another type than the description asks for keeps this"
        " share of its score.",
        bench=f"{_MULTIHOP}, agentic",
    )
    relation_bonus: float = tunable(
        1.0,
        meaning="A bridge sentence that also holds the description's relation words gains this.",
        bench=f"{_MULTIHOP}, agentic",
    )
    rank_mix: float = tunable(
        0.0,
        meaning="A bridge sentence's similarity is divided by (1 + its hit's rank) to this power.",
        bench=f"{_MULTIHOP} 2-hop top-5: 0 0.594, 0.5 0.573, 1 0.531",
    )


@dataclass(frozen=True)
class GraphBuild:
    """The graph built from text (``rag.graph.entities``, ``entities_llm``, ``services.index``):
    read when a graph is (re)built, so a change shows after ``graph_rebuild``."""

    entities_per_unit: int = tunable(
        12,
        meaning="The most entities a unit keeps (the most salient), offline and from the model.",
        bench="bench/rag/multihop.py and LoCoMo dev graph mode; 16 tried, not kept (log"
        " 'Speakers' names out of key phrases (tried, not kept)')",
    )
    keyphrases_per_unit: int = tunable(
        5,
        meaning="The most key phrases (concept nodes) a unit keeps.",
        bench=f"{_GRAPH}; not swept since",
    )
    pronoun_window: int = tunable(
        4,
        meaning="How many sentences back a pronoun looks for its antecedent.",
        bench=f"{_MULTIHOP} ('the graph built from text')",
    )
    cooccurrence_min_salience: float = tunable(
        0.44,
        meaning="A unit's entities of at least this salience (its six most salient) are joined"
        " by co-occurrence edges: twelve entities make 15 pairs, not 66.",
        bench="edge counts against bench/rag/multihop.py's recall when the graph was first"
        " built; not swept since",
    )
    llm_input_chars: int = tunable(
        12_000,
        meaning="Model extraction: units are batched into calls of at most this many characters"
        " (a unit longer is cut).",
        bench="cost: the model's context and answer size; not measured for quality",
    )


@dataclass(frozen=True)
class Communities:
    summary_members: int = tunable(
        12,
        meaning="An extractive community summary names at most this many members.",
        bench="not measured: a title and summary an agent reads at a glance",
    )
    summary_sentences: int = tunable(
        3,
        meaning="An extractive community summary holds at most this many sentences.",
        bench="not measured: a title and summary an agent reads at a glance",
    )
    llm_summary_limit: int = tunable(
        50,
        meaning="Communities summarised by the model per run (largest first); the rest"
        " extractively.",
        bench=f"cost: bench/rag/graph_traversal.py's community detection time ({_GRAPH})",
    )


@dataclass(frozen=True)
class Rerank:
    passage_chars: int = tunable(
        2000,
        meaning="Each passage is cut to this many characters before a reranker reads it.",
        bench="cost: a reranker's input; log 'stronger embedders and rerankers, searched again'",
    )


@dataclass(frozen=True)
class RagTuning:
    search: Search = Search()
    fusion: Fusion = Fusion()
    keyword: Keyword = Keyword()
    feedback: Feedback = Feedback()
    granularity: Granularity = Granularity()
    late: LateInteraction = LateInteraction()
    evidence: Evidence = Evidence()
    vector: Vector = Vector()
    spaces: Spaces = Spaces()
    hops: Hops = Hops()
    seeds: Seeds = Seeds()
    walk: Walk = Walk()
    ppr: PageRank = PageRank()
    staged: Staged = Staged()
    graph_rag: GraphRag = GraphRag()
    agentic: Agentic = Agentic()
    build: GraphBuild = GraphBuild()
    communities: Communities = Communities()
    rerank: Rerank = Rerank()


TUNING = register("rag", RagTuning())
