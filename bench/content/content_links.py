"""Pages and links at 10k pages: backlinks, unlinked mentions and link extraction latency.

The pages are real text: BEIR SciFact abstracts, read in place from --dataset (by default the
developers' copy in ../shared/data/scifact, see its README; the product never reads it). Three
kinds, 10,000 pages in all by default:

- concept pages (up to 1,000): the phrases SciFact defines with an acronym, "reactive oxygen
  species (ROS)", titled with the phrase and aliased with the acronym (acronyms that are common
  words, such as OR or NO, are left out; one extra page aliased "OR" measures that worst case
  on its own); their text is sentences of the abstracts that use the phrase;
- abstract pages: one per abstract, titled with its title;
- notes pages ("Reading notes N"): 4 to 8 sentences of random abstracts.

Links are what an author would write: in each page, up to three concepts its text names are
linked where they first occur (``[[reactive oxygen species]]`` or ``[[ROS]]``, so the other
occurrences, and the other pages naming them, are unlinked mentions), then a "See also" line
links one to three other pages chosen with a Zipf preference (a few pages become hubs with
hundreds of backlinks), and one page in fifty has a broken link. Creation and change times are
spread over two years.

The build inserts the pages in bulk (``bulk_create`` with the derived columns ``page_create``
writes), skipping the per-page Celery sync, then runs the real ``links_extract`` on every page,
which makes the nodes and exactly the ``references`` edges a sync would. Only the graph nodes'
embeddings are synthetic (a word-hash stand-in, as in bench/memory/memory_long_term.py: the local
model embeds about 25 texts a second); no figure below reads them. The pages are reused by later
runs (account ``bench-content``).

    uv run python bench/content/content_links.py [--dataset ../shared/data/scifact] [--pages 10000]

Measured, after ``pg_prewarm`` (pages with their TOAST, the indexes and edges), an ``ANALYZE``
of the pages and a warm-up, on a sample of the pages with the most backlinks
(hubs) and of random pages: backlinks as the API answers their first page
(``selectors.backlinks`` ordered like the cursor pagination, ``API_PAGE_SIZE`` + 1 rows, then
``selectors.backlink_items``); ``selectors.unlinked_mentions``; and ``services.links_extract`` of
a page with 100 links, unchanged and with some or all of its links changed (``extraction``).
Prints one JSON object; docs/benchmarks.md records the figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, django_session
from bench.memory.memory_long_term import WordHashEmbeddings

ACCOUNT_SLUG = "bench-content"
SEED = 20261123
BATCH = 1000
MAX_CONCEPTS = 1000
_ACRONYM = re.compile(r"((?:[A-Za-z][\w-]*\s){1,5})\(([A-Z][A-Za-z0-9]{1,7})\)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")
_WORD = re.compile(r"\w+")
_TOKEN = re.compile(r"[A-Za-z0-9][\w-]*")
_NOT_IN_TITLE = re.compile(r"[\[\]|#]")

# What the measured reads touch.
RELATIONS = (
    "content_page",
    "content_page_pkey",
    "content_page_words",
    "content_page_title",
    "content_page_aliases",
    "content_page_unique_slug",
    "content_page_node_id_key",
    "rag_graphedge",
    "graph_edge_unique",
)


@dataclass
class Concept:
    title: str
    alias: str
    sentences: list[str] = field(default_factory=list)


@dataclass
class PageText:
    title: str
    text: str
    aliases: list[str] = field(default_factory=list)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=300, help="pages measured (hubs + random)")
    parser.add_argument("--hubs", type=int, default=50, help="of which the most linked pages")
    parser.add_argument("--extractions", type=int, default=100)
    parser.add_argument("--no-build", action="store_true", help="measure the pages as they are")
    args = parser.parse_args()
    with django_session():
        report = run(args)
    print(json.dumps(report, indent=2))


# --- the text ----------------------------------------------------------------------------------


def load_corpus(directory: Path) -> list[tuple[str, str]]:
    with (directory / "corpus.jsonl").open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    return [(row["title"].strip(), row["text"].strip()) for row in rows if row["text"].strip()]


class Names:
    """Finds concepts in text by word n-grams: a phrase in any case, an acronym as written."""

    def __init__(self, concepts: Sequence[Concept]) -> None:
        self.phrases = {c.title.lower(): i for i, c in enumerate(concepts)}
        self.acronyms = {c.alias: i for i, c in enumerate(concepts)}
        self.longest = max((len(p.split()) for p in self.phrases), default=1)

    def find(self, text: str) -> list[tuple[int, int, int]]:
        """``(start, end, concept index)`` of each occurrence, in order."""
        tokens = [(m.start(), m.end(), m.group(0)) for m in _TOKEN.finditer(text)]
        found = []
        i = 0
        while i < len(tokens):
            start, end, word = tokens[i]
            step = 1
            if word in self.acronyms:
                found.append((start, end, self.acronyms[word]))
            else:
                for n in range(min(self.longest, len(tokens) - i), 0, -1):
                    phrase = " ".join(t[2] for t in tokens[i : i + n]).lower()
                    if phrase in self.phrases:
                        found.append((start, tokens[i + n - 1][1], self.phrases[phrase]))
                        step = n
                        break
            i += step
        return found


def find_concepts(corpus: Sequence[tuple[str, str]]) -> list[Concept]:
    """Phrases defined with an acronym ("body mass index (BMI)"), most widely used first."""
    words = Counter(w for _, text in corpus for w in _WORD.findall(text.lower()))
    common = {w for w, _ in words.most_common(300)}
    defined: dict[str, str] = {}
    aliases: set[str] = set()
    for title, text in corpus:
        for match in _ACRONYM.finditer(f"{title} {text}"):
            phrase, acronym = match.group(1).split(), match.group(2)
            letters = [c for c in acronym if c.isupper()]
            if len(letters) < 2 or len(letters) > len(phrase):
                continue
            phrase = phrase[-len(letters) :]
            if not all(w[0].lower() == c.lower() for w, c in zip(phrase, letters, strict=True)):
                continue
            key = " ".join(phrase).lower()
            if key in defined or acronym in aliases or acronym.lower() in common:
                continue
            defined[key] = acronym
            aliases.add(acronym)
    concepts = [Concept(title=p[0].upper() + p[1:], alias=a) for p, a in defined.items()]
    names = Names(concepts)
    # Rank by how many abstracts use the phrase or the acronym.
    uses: Counter[int] = Counter()
    for _, text in corpus:
        uses.update({index for _, _, index in names.find(text)})
    ranked = [concepts[i] for i, _ in uses.most_common(MAX_CONCEPTS)]
    kept = {id(c) for c in ranked}
    for _, text in corpus:  # each concept page's text: sentences that use its phrase
        for sentence in _SENTENCE_END.split(text):
            for _, _, index in names.find(sentence):
                concept = concepts[index]
                wanted = id(concept) in kept and len(concept.sentences) < 4
                if wanted and sentence not in concept.sentences:
                    concept.sentences.append(sentence)
    return [c for c in ranked if c.sentences]


def build_texts(
    corpus: Sequence[tuple[str, str]], concepts: Sequence[Concept], total: int, rng: random.Random
) -> list[PageText]:
    """Every page's title, aliases and linked text (deterministic for a seed)."""
    pages = [PageText(c.title, " ".join(c.sentences), [c.alias]) for c in concepts][:total]
    seen = {p.title.lower() for p in pages}
    for title, text in corpus:
        if len(pages) >= total:
            break
        title = _NOT_IN_TITLE.sub("", " ".join(title.split()))[:290].strip(" .")
        if not title or title.lower() in seen:
            continue
        seen.add(title.lower())
        pages.append(PageText(title, text))
    sentences = [s for _, text in corpus for s in _SENTENCE_END.split(text)]
    number = 0
    while len(pages) < total:
        number += 1
        chosen = rng.sample(sentences, rng.randint(4, 8))
        pages.append(PageText(f"Reading notes {number}", " ".join(chosen)))
    # Zipf preference over the non-concept pages for "See also" links: a few hubs.
    others = list(range(len(concepts), len(pages)))
    rng.shuffle(others)
    cumulative = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(others))))
    names = Names(concepts)
    for index, page in enumerate(pages):
        page.text = _linked(page.text, names, rng, itself=index if index < len(concepts) else None)
        picked = rng.choices(others, cum_weights=cumulative, k=rng.randint(1, 3))
        targets = sorted({t for t in picked if t != index})
        if targets:
            page.text += "\n\nSee also " + ", ".join(f"[[{pages[t].title}]]" for t in targets) + "."
        if index % 50 == 7:
            page.text += f"\n\nTo do: [[Missing topic {index}]]."
    return pages


def _linked(text: str, names: Names, rng: random.Random, itself: int | None) -> str:
    """``text`` with up to three of the other concepts it names linked where they first
    occur."""
    first: dict[int, tuple[int, int]] = {}
    for start, end, index in names.find(text):
        if index != itself:
            first.setdefault(index, (start, end))
    chosen = sorted(rng.sample(sorted(first.values()), min(3, len(first))), reverse=True)
    for start, end in chosen:
        text = f"{text[:start]}[[{text[start:end]}]]{text[end:]}"
    return text


# --- build and measure -------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    from unittest import mock

    from django.db import connection
    from tqdm import tqdm

    from content import selectors
    from content.models import Page
    from content.services import links_extract
    from content.services.pages import _derived
    from core import services as core_services
    from core.actors import actor_for_account
    from core.embeddings import get_embedding_provider
    from core.models import Account
    from core.pagination import CreatedCursorPagination
    from rag.evaluation import percentiles
    from rag.graph.services import nodes as graph_services
    from rag.models import GraphEdge

    rng = random.Random(SEED)
    corpus = load_corpus(Path(args.dataset))
    account = Account.objects.filter(slug=ACCOUNT_SLUG).first() or core_services.account_create(
        name="Engram content benchmark", slug=ACCOUNT_SLUG
    )
    actor = actor_for_account(account.pk)
    provider = get_embedding_provider()
    stand_in = WordHashEmbeddings(provider.model_id, provider.dimensions)
    build_seconds: dict[str, float] = {}

    # 1. Pages in bulk, then the real link extraction of each (nodes and references edges).
    texts: list[PageText] = []
    if not args.no_build:
        started = time.perf_counter()
        concepts = find_concepts(corpus)
        texts = build_texts(corpus, concepts, args.pages, rng)
        build_seconds["text"] = time.perf_counter() - started
        existing = set(Page.objects.filter(account=account).values_list("slug", flat=True))
        started = time.perf_counter()
        new = []
        for text in texts:
            derived = _derived(text.title, text.aliases)
            if derived["slug"] in existing:
                continue
            existing.add(derived["slug"])
            status = "draft" if rng.random() < 0.1 else "published"
            new.append(
                Page(
                    account=account,
                    title=text.title,
                    content=text.text,
                    aliases=text.aliases,
                    status=status,
                    **derived,
                )
            )
        Page.objects.bulk_create(new, batch_size=BATCH)
        with connection.cursor() as cursor:  # two years of history, deterministic
            cursor.execute("SELECT setseed(0.42)")
            cursor.execute(
                """
                UPDATE content_page p SET created_at = t.created, updated_at = t.created
                    + (now() - t.created) * random() * random()
                FROM (SELECT id, now() - random() * interval '730 days' AS created
                      FROM content_page WHERE account_id = %s AND id = ANY(%s)
                      ORDER BY id) t
                WHERE p.id = t.id
                """,
                [account.pk, [p.pk for p in new]],
            )
        build_seconds["insert"] = time.perf_counter() - started
        todo = list(
            Page.objects.filter(account=account)
            .exclude(node__edges_out__relation_type="references")
            .defer("embedding")
            .order_by("pk")
        )
        started = time.perf_counter()
        with mock.patch.object(graph_services, "get_embedding_provider", return_value=stand_in):
            for page in tqdm(todo, desc="links_extract"):
                links_extract(actor=actor, page=page)
        build_seconds["links_extract"] = time.perf_counter() - started
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE content_page")
            cursor.execute("VACUUM ANALYZE rag_graphedge")
            cursor.execute("VACUUM ANALYZE rag_graphnode")

    pages = Page.objects.filter(account=account).defer("embedding")
    page_count = pages.count()
    edges = GraphEdge.objects.filter(account=account, relation_type="references")
    backlink_counts = Counter(edges.values_list("target_id", flat=True))
    by_node = {p.node_id: p for p in pages.filter(node__isnull=False).only("id", "node_id")}
    hubs = [
        by_node[node].pk for node, _ in backlink_counts.most_common(args.hubs) if node in by_node
    ]
    own = pages.exclude(title__startswith="Bench: ")  # not the pages measured on their own
    rest = sorted(set(own.values_list("pk", flat=True)) - set(hubs))
    sample_rng = random.Random(SEED + 1)
    sample = hubs + sample_rng.sample(rest, min(len(rest), args.sample - len(hubs)))
    warmup = sample_rng.sample(rest, min(len(rest), 50))
    measured = {p.pk: p for p in pages.filter(pk__in=sample + warmup)}

    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        cursor.execute(  # the page text and stored words that do not fit in the row
            "SELECT t.oid::regclass::text, i.indexrelid::regclass::text FROM pg_class c "
            "JOIN pg_class t ON t.oid = c.reltoastrelid "
            "JOIN pg_index i ON i.indrelid = t.oid WHERE c.relname = 'content_page'"
        )
        toast = [name for row in cursor.fetchall() for name in row]
        for relation in (*RELATIONS, *toast):
            cursor.execute("SELECT pg_prewarm(%s)", [relation])
        cursor.execute("ANALYZE content_page")  # statistics as autovacuum keeps them

    page_size = CreatedCursorPagination.page_size  # the backlinks API's pages
    assert page_size is not None

    def backlinks(page: Page) -> int:
        first = list(selectors.backlinks(page=page).order_by("-created_at", "-id")[: page_size + 1])
        return len(selectors.backlink_items(page=page, sources=first[:page_size]))

    def mentions(page: Page) -> int:
        return len(selectors.unlinked_mentions(page=page))

    def timed(operation: Callable[[Page], int], ids: Sequence[int]) -> tuple[list[float], int]:
        times, found = [], 0
        for page_id in ids:
            started = time.perf_counter()
            found += operation(measured[page_id])
            times.append((time.perf_counter() - started) * 1000)
        return times, found

    def rounded(values: list[float]) -> dict[str, float]:
        return {k: round(v, 2) for k, v in percentiles(values, (50, 95, 99)).items()}

    for operation in (backlinks, mentions):
        timed(operation, warmup)
    report: dict[str, Any] = {
        "pages": page_count,
        "references_edges": len(edges),
        "pages_with_backlinks": len(backlink_counts),
        "most_backlinks": backlink_counts.most_common(1)[0][1] if backlink_counts else 0,
        "sample": {"pages": len(sample), "hubs": len(hubs)},
    }
    for name, operation in (("backlinks", backlinks), ("unlinked_mentions", mentions)):
        all_times, found = timed(operation, sample)
        report[f"{name}_ms"] = rounded(all_times)
        report[f"{name}_ms_hubs"] = rounded(all_times[: len(hubs)])
        report[f"{name}_ms_random_pages"] = rounded(all_times[len(hubs) :])
        report[f"{name}_found_per_page"] = round(found / len(sample), 1)

    # The worst case for mentions: an alias that is a common word ("OR" for odds ratio, which
    # the concept pages leave out) names most pages of the account.
    report["unlinked_mentions_ms_alias_OR"] = worst_alias(account.pk, mentions, rounded)

    # 2. Extraction of a 100-link page: two texts linking different pages, then unchanged.
    report["links_extract_100_links_ms"] = extraction(args, account.pk, actor, corpus, rounded)
    report["build_seconds_this_run"] = {k: round(v, 1) for k, v in build_seconds.items()}
    report["cpu"] = f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}"
    report["data"] = "BEIR SciFact abstracts, read from --dataset (benchmark only)"
    return report


def worst_alias(
    account_id: int,
    mentions: Callable[[Any], int],
    rounded: Callable[[list[float]], dict[str, float]],
) -> dict[str, Any]:
    from django.db import connection

    from content.models import Page
    from content.services.pages import _derived

    title = "Bench: odds ratio"
    page = Page.objects.filter(account_id=account_id, title=title).first()
    if page is None:
        page = Page.objects.create(
            account_id=account_id,
            title=title,
            content="The odds ratio compares the odds of an outcome between two groups.",
            aliases=["OR"],
            **_derived(title, ["OR"]),
        )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM content_page WHERE account_id = %s AND "
            "to_tsvector('simple'::regconfig, COALESCE(content, '')) @@ "
            "plainto_tsquery('simple'::regconfig, 'or')",
            [account_id],
        )
        (naming,) = cursor.fetchone()
    mentions(page)
    times = []
    for _ in range(20):
        started = time.perf_counter()
        mentions(page)
        times.append((time.perf_counter() - started) * 1000)
    return {**rounded(times), "pages_with_the_word": naming}


def extraction(
    args: argparse.Namespace,
    account_id: int,
    actor: Any,
    corpus: Sequence[tuple[str, str]],
    rounded: Callable[[list[float]], dict[str, float]],
) -> dict[str, Any]:
    """``links_extract`` of a page with 100 links (95 to pages, by title or alias, 5 broken)
    below an opening paragraph, four ways: unchanged (as a re-sync finds it), 5 links changed
    (an edit), all links changed (every run removes 95 edges and makes 95, as much work as a
    first extraction and more), and links and opening changed (the page's graph node
    describes the page by its opening, so the node is also re-embedded by the configured
    model and re-indexed)."""
    from content import wikilinks
    from content.models import Page
    from content.services import links_extract
    from content.services.pages import _derived

    rng = random.Random(SEED + 2)
    title = "Bench: a page with 100 links"
    candidates = list(
        Page.objects.filter(account_id=account_id, node__isnull=False)
        .exclude(title=title)
        .order_by("pk")
        .values_list("title", "aliases")
    )
    picked = rng.sample(candidates, 195)
    openings = [text for _, text in corpus if len(text) > 800][:2]

    def text(opening: str, targets: Sequence[tuple[str, list[str]]]) -> str:
        lines = [opening, ""]
        for number, (name, aliases) in enumerate(targets):
            shown = aliases[0] if aliases and number % 3 == 0 else name
            lines.append(f"Point {number}: see [[{shown}|this]] and what it says.")
        lines += [f"Open question {n}: [[Unwritten page {n}]]." for n in range(100 - len(targets))]
        return "\n".join(lines)

    links = [picked[:95], picked[95:190]]
    five = [picked[:90] + picked[90:95], picked[:90] + picked[190:195]]
    page = Page.objects.filter(account_id=account_id, title=title).first()
    if page is None:
        page = Page.objects.create(
            account_id=account_id,
            title=title,
            content=text(openings[0], links[0]),
            **_derived(title, []),
        )
    variants = {
        "unchanged": lambda run: text(openings[0], links[0]),
        "5_links_changed": lambda run: text(openings[0], five[run % 2]),
        "all_links_changed": lambda run: text(openings[0], links[run % 2]),
        "links_and_opening_changed": lambda run: text(openings[run % 2], links[run % 2]),
    }
    report: dict[str, Any] = {}
    for kind, content_of in variants.items():
        runs = args.extractions if kind != "links_and_opening_changed" else args.extractions // 4
        times: list[float] = []
        edges: Counter[str] = Counter()
        for run in range(runs + 5):
            content = content_of(run)
            assert len(wikilinks.parse(content)) == 100
            Page.objects.filter(pk=page.pk).update(content=content)
            page = Page.objects.defer("embedding").get(pk=page.pk)
            started = time.perf_counter()
            result = links_extract(actor=actor, page=page)
            elapsed = (time.perf_counter() - started) * 1000
            if run >= 5:  # the first runs warm up (and bring the edges to the variant's)
                times.append(elapsed)
                edges.update(created=result.created, removed=result.removed)
                edges["broken"] += len(result.broken)
        report[kind] = {
            **rounded(times),
            "runs": runs,
            **{f"{k}_per_run": round(v / runs, 1) for k, v in sorted(edges.items())},
        }
    return report


if __name__ == "__main__":
    main()
