"""Chunkers on real text: the project's own docs and code, and SciFact abstracts.

Pure tests (no database). Token counts are checked with rag.tokens, the embedding model's own
tokenizer, and the semantic tests use the real local embedding model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from rag.chunking import (
    MAX_CHUNK_SIZE,
    MIN_CHUNK_SIZE,
    STRATEGIES,
    ChunkPiece,
    chunk_code,
    chunk_document,
    chunk_markdown,
    chunk_recursive,
    chunk_semantic,
    markdown_outline,
    sentence_spans,
)
from rag.tokens import count_tokens, count_tokens_one
from tests.support.data import SCIFACT

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CONFIGURATION_DOC = ROOT / "docs" / "configuration.md"
# Evaluation data lives in the shared folder next to the repository and is never copied in.
SCIFACT_CORPUS = SCIFACT / "corpus.jsonl"
SCIFACT_DOCS = 200


@pytest.fixture(scope="module")
def scifact() -> list[str]:
    """The first abstracts of the SciFact corpus, each as "title, blank line, abstract"."""
    if not SCIFACT_CORPUS.exists():
        pytest.skip(f"SciFact corpus not found at {SCIFACT_CORPUS} (shared evaluation data)")
    texts: list[str] = []
    with SCIFACT_CORPUS.open(encoding="utf-8") as corpus:
        for line in corpus:
            record = json.loads(line)
            texts.append(f"{record['title']}\n\n{record['text']}")
            if len(texts) == SCIFACT_DOCS:
                break
    return texts


@pytest.fixture(scope="module")
def embed() -> Callable[[list[str]], np.ndarray]:
    from core.embeddings import create_embedding_provider

    return create_embedding_provider("local").embed_documents


def assert_valid(
    source: str,
    chunks: Sequence[ChunkPiece],
    chunk_size: int,
    *,
    oversized_allowed: Callable[[ChunkPiece], bool] = lambda chunk: False,
    leading_indent: bool = False,
) -> None:
    """Offsets, exact token counts, the size limit and coverage of every non-space character."""
    assert [chunk.position for chunk in chunks] == list(range(len(chunks)))
    counts = count_tokens([chunk.text for chunk in chunks])
    covered = bytearray(len(source))
    for chunk, count in zip(chunks, counts, strict=True):
        assert chunk.text == source[chunk.start_char : chunk.end_char]
        assert chunk.text.strip(), "empty chunk"
        assert chunk.text == (chunk.text.rstrip() if leading_indent else chunk.text.strip())
        assert chunk.token_count == count
        if not oversized_allowed(chunk):
            assert count <= chunk_size, (count, chunk.text[:80])
        covered[chunk.start_char : chunk.end_char] = b"\x01" * len(chunk.text)
    starts = [chunk.start_char for chunk in chunks]
    assert starts == sorted(starts)
    missed = [i for i, char in enumerate(source) if not char.isspace() and not covered[i]]
    assert not missed, f"uncovered text at {missed[:5]}: {source[missed[0] : missed[0] + 40]!r}"


def holds_oversized_fence(text: str, chunk_size: int) -> Callable[[ChunkPiece], bool]:
    """Whether a chunk contains a fenced code block that alone exceeds ``chunk_size``."""
    oversized = [
        (start, end)
        for start, end in markdown_outline(text).fences
        if count_tokens_one(text[start:end]) > chunk_size
    ]

    def check(chunk: ChunkPiece) -> bool:
        return any(chunk.start_char <= a and b <= chunk.end_char for a, b in oversized)

    return check


# --- arguments ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("chunk_size", "chunk_overlap", "message"),
    [
        (MIN_CHUNK_SIZE - 1, 0, "chunk_size"),
        (MAX_CHUNK_SIZE + 1, 0, "chunk_size"),
        (256, -1, "chunk_overlap"),
        (256, 256, "chunk_overlap"),
    ],
)
def test_sizes_are_validated(chunk_size: int, chunk_overlap: int, message: str) -> None:
    for strategy in STRATEGIES:
        with pytest.raises(ValueError, match=message):
            chunk_document(
                "Some text.",
                strategy=strategy,
                chunk_size=chunk_size,
                chunk_overlap=chunk_overlap,
                embed=lambda texts: np.ones((len(texts), 3)),
            )


def test_unknown_strategy_and_missing_embedder_are_rejected() -> None:
    with pytest.raises(ValueError, match="Unknown chunking strategy"):
        chunk_document("Text.", strategy="fixed", chunk_size=64, chunk_overlap=0)
    with pytest.raises(ValueError, match="embed"):
        chunk_document("Text.", strategy="semantic", chunk_size=64, chunk_overlap=0)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_blank_text_gives_no_chunks(strategy: str) -> None:
    chunks = chunk_document(
        " \n\n\t ",
        strategy=strategy,
        chunk_size=64,
        chunk_overlap=8,
        embed=lambda texts: np.ones((len(texts), 3)),
    )
    assert chunks == []


# --- sentences ------------------------------------------------------------------------------
def test_sentence_splitter_keeps_abbreviations_initials_and_decimals() -> None:
    text = (
        "Dr. Smith measured 3.14 mg/kg, e.g. in mice (Fig. 2). J. Doe et al. disagreed! "
        'Was it real? "Yes." 2019 was the year. The U.S. team agreed.'
    )
    sentences = [text[a:b] for a, b in sentence_spans(text)]
    assert sentences == [
        "Dr. Smith measured 3.14 mg/kg, e.g. in mice (Fig. 2).",
        "J. Doe et al. disagreed!",
        "Was it real?",
        '"Yes."',
        "2019 was the year.",
        "The U.S. team agreed.",
    ]


def test_sentence_splitter_on_scifact_abstracts(scifact: list[str]) -> None:
    decimal = re.compile(r"\d\.\d")
    for text in scifact[:50]:
        for start, end in sentence_spans(text):
            sentence = text[start:end]
            assert sentence == sentence.strip()
            # A cut never falls inside a number such as "0.05".
            assert not (start > 0 and decimal.match(text, start - 2))


# --- recursive ------------------------------------------------------------------------------
@pytest.mark.parametrize(("chunk_size", "chunk_overlap"), [(256, 32), (64, 16), (32, 0)])
def test_recursive_on_scifact_respects_limits_and_covers(
    scifact: list[str], chunk_size: int, chunk_overlap: int
) -> None:
    for text in scifact:
        chunks = chunk_recursive(text, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        assert chunks
        assert_valid(text, chunks, chunk_size)


def test_recursive_overlap_is_present_and_bounded(scifact: list[str]) -> None:
    chunk_size, chunk_overlap = 64, 16
    pairs = overlapping = 0
    for text in scifact:
        chunks = chunk_recursive(text, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        for previous, current in pairwise(chunks):
            pairs += 1
            assert current.start_char > previous.start_char
            assert current.end_char > previous.end_char  # every chunk adds new text
            if current.start_char < previous.end_char:
                overlapping += 1
                shared = text[current.start_char : previous.end_char]
                assert count_tokens_one(shared) <= chunk_overlap
                assert text[current.start_char - 1].isspace()  # starts at a word
    assert pairs > 100
    assert overlapping / pairs > 0.8


def test_recursive_without_overlap_does_not_repeat_text(scifact: list[str]) -> None:
    for text in scifact[:50]:
        chunks = chunk_recursive(text, chunk_size=48, chunk_overlap=0)
        for previous, current in pairwise(chunks):
            assert current.start_char >= previous.end_char


def test_recursive_prefers_paragraph_boundaries(scifact: list[str]) -> None:
    # The title is its own paragraph: with room for a whole abstract it stays joined, and when
    # the abstract has to be split the first cut is never inside the title.
    for text in scifact[:50]:
        title_end = text.index("\n\n")
        chunks = chunk_recursive(text, chunk_size=48, chunk_overlap=0)
        assert chunks[0].end_char >= title_end or count_tokens_one(text[:title_end]) > 48


@pytest.mark.parametrize("path", [README, CONFIGURATION_DOC], ids=lambda p: p.name)
def test_recursive_on_project_docs(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    chunks = chunk_recursive(text, chunk_size=64, chunk_overlap=16, content_type="text/markdown")
    assert_valid(text, chunks, 64)
    # Markdown content gets heading paths even from the recursive strategy.
    assert {chunk.heading_path[0] for chunk in chunks} <= {"Engram", "Configuration"}
    plain = chunk_recursive(text, chunk_size=64, chunk_overlap=16)
    assert all(chunk.heading_path == () for chunk in plain)


def test_a_word_longer_than_a_chunk_is_cut_between_characters() -> None:
    long_word = "-".join(["tokenization"] * 120)  # hundreds of tokens, no whitespace
    cjk = "東京大学の研究" * 40  # no spaces: every character is a token
    text = f"Before the word. {long_word} After it.\n\n{cjk}"
    chunks = chunk_recursive(text, chunk_size=32, chunk_overlap=8)
    assert_valid(text, chunks, 32)
    inside = [c for c in chunks if long_word.find(c.text) >= 0 and len(c.text) > 20]
    assert "".join(c.text for c in inside) == long_word


# --- markdown -------------------------------------------------------------------------------
def expected_heading_paths(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """(line offset, heading path) for every ATX heading outside ``` fences: the test oracle."""
    paths: list[tuple[int, tuple[str, ...]]] = []
    stack: list[tuple[int, str]] = []
    in_fence = False
    offset = 0
    for line in text.split("\n"):
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and (match := re.match(r"(#{1,6}) (.+)", line)):
            level = len(match.group(1))
            stack = [entry for entry in stack if entry[0] < level] + [(level, match.group(2))]
            paths.append((offset, tuple(title for _, title in stack)))
        offset += len(line) + 1
    return paths


@pytest.mark.parametrize("path", [README, CONFIGURATION_DOC], ids=lambda p: p.name)
@pytest.mark.parametrize(("chunk_size", "chunk_overlap"), [(64, 16), (256, 32)])
def test_markdown_heading_paths_on_project_docs(
    path: Path, chunk_size: int, chunk_overlap: int
) -> None:
    text = path.read_text(encoding="utf-8")
    chunks = chunk_markdown(text, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    assert_valid(
        text, chunks, chunk_size, oversized_allowed=holds_oversized_fence(text, chunk_size)
    )
    headings = expected_heading_paths(text)
    assert len(headings) >= 4
    for chunk in chunks:
        in_force = [path for offset, path in headings if offset <= chunk.start_char]
        assert chunk.heading_path == (in_force[-1] if in_force else ())
        # A chunk never runs into the next section.
        assert not any(chunk.start_char < offset < chunk.end_char for offset, _ in headings)
    for offset, heading_path in headings:
        first = next(chunk for chunk in chunks if chunk.end_char > offset)
        assert first.start_char == offset, "a section's first chunk starts with its heading"
        assert first.heading_path == heading_path


def test_markdown_real_headings_of_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    chunks = chunk_markdown(text, chunk_size=128, chunk_overlap=16)

    def path_of(snippet: str) -> tuple[str, ...]:
        return next(chunk.heading_path for chunk in chunks if snippet in chunk.text)

    assert path_of("self-hosted memory and knowledge server") == ("Engram",)
    assert path_of("Everything is configured through environment variables") == (
        "Engram",
        "Configuration",
    )
    assert path_of("Swagger UI") == ("Engram", "API")
    assert path_of("services for writes, selectors for reads") == ("Engram", "Code")
    assert path_of("docs/benchmarks.md): retrieval quality") == ("Engram", "Documentation")


def test_markdown_nested_sections_and_overlap_stay_inside_a_section() -> None:
    body = " ".join(f"Step {i} installs the package and checks the result." for i in range(30))
    text = (
        f"# Guide\n\nIntro text.\n\n## Install\n\n### Linux\n\n{body}\n\n"
        f"### macOS\n\nUse the installer.\n\n## Use\n\n{body}\n"
    )
    chunks = chunk_markdown(text, chunk_size=64, chunk_overlap=16)
    assert_valid(text, chunks, 64)
    linux = [c for c in chunks if c.heading_path == ("Guide", "Install", "Linux")]
    assert len(linux) > 2
    # The empty "Install" section is carried with its first subsection rather than alone.
    assert linux[0].text.startswith("## Install\n\n### Linux\n\nStep 0")
    assert not any(c.heading_path == ("Guide", "Install") for c in chunks)
    mac = [c for c in chunks if c.heading_path == ("Guide", "Install", "macOS")]
    assert [c.text for c in mac] == ["### macOS\n\nUse the installer."]
    assert [c.heading_path for c in chunks if "## Use" in c.text] == [("Guide", "Use")]
    # Overlap within a section, never across one.
    for previous, current in pairwise(linux):
        assert current.start_char < previous.end_char
    assert mac[0].start_char >= linux[-1].end_char


def test_markdown_code_fences_are_never_split() -> None:
    readme_lines = [line for line in README.read_text(encoding="utf-8").splitlines() if line]
    long_block = "\n".join(f"echo {line!r}" for line in readme_lines[:40])
    text = (
        "# Scripts\n\nThe setup script follows.\n\n"
        f"```sh\n{long_block}\n```\n\n"
        + "After the block comes an explanation. "
        * 6
        + "\n\n## Small\n\n~~~python\n# a comment, not a heading\nprint('hi')\n~~~\n\n"
        "Closing words.\n\n"
        "```\n# unclosed fence, not a heading\n" + "x = 1\n" * 60
    )
    chunk_size = 64
    chunks = chunk_markdown(text, chunk_size=chunk_size, chunk_overlap=16)
    outline = markdown_outline(text)
    assert len(outline.fences) == 3
    assert [h.title for h in outline.headings] == ["Scripts", "Small"]

    assert_valid(
        text, chunks, chunk_size, oversized_allowed=holds_oversized_fence(text, chunk_size)
    )
    for start, end in outline.fences:
        holders = [c for c in chunks if c.start_char < end and start < c.end_char]
        for chunk in holders:
            assert chunk.start_char <= start and end <= chunk.end_char, "fence was split"
    assert {c.heading_path for c in chunks} == {("Scripts",), ("Scripts", "Small")}
    oversized = [c for c in chunks if c.token_count > chunk_size]
    assert len(oversized) == 2
    assert oversized[0].text.startswith("```sh\necho")


def test_markdown_heading_stays_with_an_oversized_fence() -> None:
    block = "\n".join(f"line {i} of a long listing" for i in range(80))
    text = f"# Listing\n\n```\n{block}\n```\n\nThe end."
    chunks = chunk_markdown(text, chunk_size=32, chunk_overlap=8)
    assert chunks[0].text.startswith("# Listing\n\n```\n")
    assert chunks[0].text.endswith("```")
    assert [c.text for c in chunks[1:]] == ["The end."]


# --- semantic -------------------------------------------------------------------------------
def test_semantic_breaks_between_different_topics(
    scifact: list[str], embed: Callable[[list[str]], np.ndarray]
) -> None:
    abstract = scifact[0].split("\n\n", 1)[1]
    medicine = abstract[: sentence_spans(abstract)[4][1]]
    readme = README.read_text(encoding="utf-8")
    start = readme.index("`./engram run` starts")
    software = readme[start : readme.index("\n\n", start)]
    text = f"{medicine}\n\n{software}"
    chunks = chunk_semantic(text, chunk_size=512, embed=embed)
    assert_valid(text, chunks, 512)
    boundaries = {c.start_char for c in chunks}
    assert len(text) - len(software) in boundaries
    assert not any(c.start_char < len(medicine) < c.end_char for c in chunks)
    assert chunk_semantic(text, chunk_size=512, embed=embed) == chunks  # deterministic


def test_semantic_respects_limits_on_scifact(
    scifact: list[str], embed: Callable[[list[str]], np.ndarray]
) -> None:
    for text in scifact[:20]:
        chunks = chunk_document(
            text, strategy="semantic", chunk_size=48, chunk_overlap=8, embed=embed
        )
        assert_valid(text, chunks, 48)
        sentences = sentence_spans(text)
        sentence_starts = {start for start, _ in sentences}
        # Chunks are whole sentences unless one sentence alone is over the limit.
        for chunk in chunks:
            assert chunk.start_char in sentence_starts or any(
                a < chunk.start_char < b and count_tokens_one(text[a:b]) > 48 for a, b in sentences
            )


def test_semantic_rejects_an_embedder_returning_the_wrong_shape() -> None:
    with pytest.raises(ValueError, match="shape"):
        chunk_semantic(
            "One sentence here. Another one there.",
            chunk_size=64,
            embed=lambda texts: np.ones((1, 4)),
        )


# --- code -----------------------------------------------------------------------------------
PROJECT_PYTHON = sorted([*(ROOT / "core").rglob("*.py"), *(ROOT / "config").glob("*.py")], key=str)


@pytest.mark.parametrize(("chunk_size", "chunk_overlap"), [(32, 8), (128, 16), (512, 0)])
def test_code_on_project_sources_respects_limits_and_covers(
    chunk_size: int, chunk_overlap: int
) -> None:
    files = [path for path in PROJECT_PYTHON if "migrations" not in path.parts]
    assert len(files) > 10
    for path in files:
        text = path.read_text(encoding="utf-8")
        chunks = chunk_code(text, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        assert_valid(text, chunks, chunk_size, leading_indent=True)


def test_code_keeps_decorators_with_their_definition() -> None:
    checked = 0
    for path in PROJECT_PYTHON:
        text = path.read_text(encoding="utf-8")
        chunks = chunk_code(text, chunk_size=128, chunk_overlap=16)
        for match in re.finditer(
            r"^( *)@\w[^\n]*\n(?:\1[@ )][^\n]*\n)*\1(?:async )?(?:def|class) ", text, re.M
        ):
            decorated = [
                c for c in chunks if c.start_char <= match.start() and match.end() <= c.end_char
            ]
            assert decorated, f"{path.name}: {match.group(0)!r} split"
            checked += 1
    assert checked > 20


def test_code_definitions_in_several_languages() -> None:
    source = "\n".join(
        [
            "import os",
            "",
            "# Adds two numbers.",
            "@cache",
            "@trace(",
            "    level=2,",
            ")",
            "def add(a, b):",
            "    return a + b",
            "",
            "// Greets someone.",
            "export function greet(name) {",
            "  return `hi ${name}`;",
            "}",
            "",
            "/** A point. */",
            "interface Point { x: number; y: number }",
            "",
            "// Sum returns the sum.",
            "func Sum(xs []int) int {",
            "\treturn 0",
            "}",
            "",
            "#[derive(Debug)]",
            "pub struct Pair(i32, i32);",
            "",
            "impl Pair {",
            "    pub fn first(&self) -> i32 { self.0 }",
            "}",
            "",
            "async def fetch():",
            "    pass",
        ]
    )
    chunks = chunk_code(source, chunk_size=32, chunk_overlap=0)
    assert_valid(source, chunks, 32, leading_indent=True)
    expected_starts = [
        "import os",
        "# Adds two numbers.\n@cache\n@trace(\n    level=2,\n)\ndef add",
        "// Greets someone.\nexport function greet",
        "/** A point. */\ninterface Point",
        "// Sum returns the sum.\nfunc Sum",
        "#[derive(Debug)]\npub struct Pair",
        "impl Pair {",
        "async def fetch",
    ]
    for snippet in expected_starts:
        offset = source.index(snippet)
        end = offset + len(snippet)
        assert any(c.start_char <= offset and end <= c.end_char for c in chunks), snippet
        assert not any(offset < c.start_char < end for c in chunks), snippet
    assert len(chunks) > 3
    # Definitions are packed together when they fit.
    packed = chunk_code(source, chunk_size=512, chunk_overlap=0)
    assert len(packed) == 1 and packed[0].text == source.strip()


def test_code_splits_an_oversized_class_at_its_methods() -> None:
    methods = "\n\n".join(
        f"    @property\n    def value_{i}(self) -> int:\n"
        f'        """Value number {i} of the table."""\n        return self._values[{i}]'
        for i in range(12)
    )
    source = f"class Table:\n    _values: list[int]\n\n{methods}\n\n\ndef after():\n    pass\n"
    chunks = chunk_code(source, chunk_size=64, chunk_overlap=8)
    assert_valid(source, chunks, 64, leading_indent=True)
    assert chunks[0].text.startswith("class Table:")
    for i in range(12):
        assert any(f"@property\n    def value_{i}(" in c.text for c in chunks)
    assert chunks[-1].text == "def after():\n    pass"


# --- all strategies -------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_strategies_are_deterministic(
    strategy: str, scifact: list[str], embed: Callable[[list[str]], np.ndarray]
) -> None:
    texts = [README.read_text(encoding="utf-8"), *scifact[:5]]
    for text in texts:
        runs = [
            chunk_document(
                text,
                strategy=strategy,
                chunk_size=64,
                chunk_overlap=16,
                content_type="text/markdown",
                embed=embed,
            )
            for _ in range(2)
        ]
        assert runs[0] == runs[1]
        assert runs[0]
