"""The BEIR loader: on the real SciFact files, and on small malformed datasets built in tmp_path."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from rag.evaluation.beir import BeirDataset, BeirDoc, BeirFormatError, load_beir
from tests.support.data import SCIFACT

# --- SciFact -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scifact() -> BeirDataset:
    if not (SCIFACT / "corpus.jsonl").is_file():
        pytest.skip(f"SciFact evaluation data not found at {SCIFACT} (shared evaluation data)")
    return load_beir(SCIFACT, "train")


def _non_blank_lines(path: Path) -> list[str]:
    with path.open(encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle if line.strip()]


def test_scifact_counts(scifact: BeirDataset) -> None:
    assert len(scifact.corpus) == 5183
    assert len(scifact.queries) == 809
    assert len(scifact.qrels) == 809
    assert sum(len(judgments) for judgments in scifact.qrels.values()) == 919
    # The same counts, read off the files without the loader.
    assert len(scifact.corpus) == len(_non_blank_lines(SCIFACT / "corpus.jsonl"))
    assert len(scifact.queries) == len(_non_blank_lines(SCIFACT / "queries.jsonl"))
    qrels_rows = _non_blank_lines(SCIFACT / "qrels" / "train.tsv")
    assert qrels_rows[0] == "query-id\tcorpus-id\tscore"
    assert sum(len(j) for j in scifact.qrels.values()) == len(qrels_rows) - 1


def test_scifact_known_records(scifact: BeirDataset) -> None:
    first = json.loads(_non_blank_lines(SCIFACT / "corpus.jsonl")[0])
    assert first["_id"] == "4983"
    assert scifact.corpus["4983"] == BeirDoc(title=first["title"], text=first["text"])
    assert scifact.corpus["4983"].title.startswith(
        "Microstructural development of human newborn cerebral white matter"
    )
    assert next(iter(scifact.corpus)) == "4983"  # file order is kept
    assert scifact.queries["0"] == "0-dimensional biomaterials lack inductive properties."
    assert scifact.queries["1407"] == "β1/Ketel is able to bind microtubules."
    assert scifact.qrels["0"] == {"31715818": 1}
    assert len(scifact.qrels["378"]) == 5
    assert all(isinstance(doc_id, str) for doc_id in scifact.corpus)


def test_scifact_split_is_consistent(scifact: BeirDataset) -> None:
    assert set(scifact.queries) == set(scifact.qrels)
    judged_docs = {doc for judgments in scifact.qrels.values() for doc in judgments}
    assert judged_docs <= set(scifact.corpus)
    assert {score for j in scifact.qrels.values() for score in j.values()} == {1}


# --- small datasets ------------------------------------------------------------------------

CORPUS = [
    {"_id": "d1", "title": "Alpha", "text": "alpha text"},
    {"_id": "01", "title": "", "text": "zero one"},
    {"_id": "1", "title": "One", "text": "one"},
]
QUERIES = [
    {"_id": "q1", "text": "first"},
    {"_id": "q2", "text": "second, not judged in test"},
    {"_id": "q3", "text": "third"},
]
QRELS = "query-id\tcorpus-id\tscore\nq3\t1\t2\nq1\td1\t1\nq1\t01\t0\n"

WriteDataset = Callable[..., Path]


@pytest.fixture
def write_dataset(tmp_path: Path) -> WriteDataset:
    """Write a BEIR directory; each file's content may be overridden as raw text or bytes."""

    def write(
        *,
        corpus: str | bytes | None = None,
        queries: str | bytes | None = None,
        qrels: str | bytes | None = None,
        split: str = "test",
    ) -> Path:
        root = tmp_path / "dataset"
        (root / "qrels").mkdir(parents=True, exist_ok=True)
        contents = {
            root / "corpus.jsonl": corpus
            if corpus is not None
            else "".join(json.dumps(r) + "\n" for r in CORPUS),
            root / "queries.jsonl": queries
            if queries is not None
            else "".join(json.dumps(r) + "\n" for r in QUERIES),
            root / "qrels" / f"{split}.tsv": qrels if qrels is not None else QRELS,
        }
        for path, content in contents.items():
            data = content.encode("utf-8") if isinstance(content, str) else content
            path.write_bytes(data)
        return root

    return write


def test_small_dataset_loads(write_dataset: WriteDataset) -> None:
    dataset = load_beir(write_dataset(), "test")
    assert dataset.corpus == {
        "d1": BeirDoc(title="Alpha", text="alpha text"),
        "01": BeirDoc(title="", text="zero one"),
        "1": BeirDoc(title="One", text="one"),
    }
    # Only judged queries, in queries.jsonl order.
    assert dataset.queries == {"q1": "first", "q3": "third"}
    assert list(dataset.queries) == ["q1", "q3"]
    assert dataset.qrels == {"q3": {"1": 2}, "q1": {"d1": 1, "01": 0}}


def test_tolerated_variations(write_dataset: WriteDataset) -> None:
    corpus = (
        '\ufeff{"_id": "d1", "text": "no title"}\r\n\r\n{"_id": "d2", "title": "T", "text": ""}\n'
    )
    qrels = "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\n\nq1\td1\t1\nq1\tgone\t-1\n"
    dataset = load_beir(write_dataset(corpus=corpus, qrels=qrels), "test")
    assert dataset.corpus == {"d1": BeirDoc(title="", text="no title"), "d2": BeirDoc("T", "")}
    # A repeated identical judgment is harmless; judged docs absent from the corpus are kept.
    assert dataset.qrels == {"q1": {"d1": 1, "gone": -1}}


# --- missing files -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("relative", "words"),
    [
        ("corpus.jsonl", "corpus"),
        ("queries.jsonl", "queries"),
        ("qrels/test.tsv", "split 'test'"),
    ],
)
def test_missing_file_is_named(write_dataset: WriteDataset, relative: str, words: str) -> None:
    root = write_dataset()
    (root / relative).unlink()
    with pytest.raises(FileNotFoundError, match=words) as caught:
        load_beir(root, "test")
    assert caught.value.filename == str(root / relative)
    assert str(root / relative) in str(caught.value)


def test_unknown_split_and_missing_directory(write_dataset: WriteDataset, tmp_path: Path) -> None:
    root = write_dataset()
    with pytest.raises(FileNotFoundError, match=r"dev\.tsv"):
        load_beir(root, "dev")
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_beir(tmp_path / "nowhere", "test")


@pytest.mark.parametrize("split", ["", "../test", "qrels/test", "/etc/passwd", ".hidden"])
def test_path_like_split_is_rejected(write_dataset: WriteDataset, split: str) -> None:
    with pytest.raises(ValueError, match="split"):
        load_beir(write_dataset(), split)


# --- malformed content ---------------------------------------------------------------------

GOOD_DOC = '{"_id": "d1", "title": "t", "text": "x"}\n'


@pytest.mark.parametrize(
    ("corpus", "line", "message"),
    [
        (GOOD_DOC + "{not json\n", 2, "invalid JSON"),
        (GOOD_DOC + '["_id", "d2"]\n', 2, "JSON object"),
        ('{"_id": 7, "title": "t", "text": "x"}\n', 1, "'_id' must be a string, got number"),
        ('{"title": "t", "text": "x"}\n', 1, "missing field '_id'"),
        ('{"_id": "", "title": "t", "text": "x"}\n', 1, "'_id' is empty"),
        ('{"_id": "d1", "title": "t"}\n', 1, "missing field 'text'"),
        ('{"_id": "d1", "title": null, "text": "x"}\n', 1, "'title' must be a string, got null"),
        ('{"_id": "d1", "title": ["t"], "text": "x"}\n', 1, "'title' must be a string, got array"),
        (GOOD_DOC + "\n" + GOOD_DOC, 3, "duplicate _id 'd1' (first on line 1)"),
        (GOOD_DOC.encode() + b'{"_id": "d2", "text": "\xff"}\n', 2, "not valid UTF-8"),
    ],
)
def test_malformed_corpus_reports_line(
    write_dataset: WriteDataset, corpus: str | bytes, line: int, message: str
) -> None:
    root = write_dataset(corpus=corpus)
    with pytest.raises(BeirFormatError) as caught:
        load_beir(root, "test")
    error = caught.value
    assert isinstance(error, ValueError)
    assert error.path == root / "corpus.jsonl"
    assert error.line == line
    assert f"corpus.jsonl:{line}: " in str(error)
    assert message in str(error)


def test_malformed_queries_even_unjudged_ones(write_dataset: WriteDataset) -> None:
    queries = '{"_id": "q1", "text": "first"}\n{"_id": "q3", "text": "third"}\n{"_id": "q9"}\n'
    with pytest.raises(BeirFormatError, match=r"queries.jsonl:3: missing field 'text'"):
        load_beir(write_dataset(queries=queries), "test")


def test_judged_query_without_text(write_dataset: WriteDataset) -> None:
    queries = '{"_id": "q1", "text": "first"}\n'
    with pytest.raises(BeirFormatError, match=r"1 queries judged in test.tsv .*'q3'") as caught:
        load_beir(write_dataset(queries=queries), "test")
    assert caught.value.line is None


HEADER = "query-id\tcorpus-id\tscore\n"


@pytest.mark.parametrize(
    ("qrels", "line", "message"),
    [
        ("q1\td1\t1\n", 1, "expected the header"),
        ("query-id corpus-id score\nq1\td1\t1\n", 1, "expected the header"),
        (HEADER + "q1\td1\n", 2, "expected 3 tab-separated fields, got 2"),
        (HEADER + "q1\td1\t1\textra\n", 2, "got 4"),
        (HEADER + "q1\td1\t1.0\n", 2, "score must be an integer, got '1.0'"),
        (HEADER + "q1\td1\t 1\n", 2, "score must be an integer"),
        (HEADER + "q1\td1\thigh\n", 2, "score must be an integer"),
        (HEADER + "q1\t\t1\n", 2, "empty query-id or corpus-id"),
        (HEADER + "q1\td1\t1\nq3\t1\t1\nq1\td1\t2\n", 4, "judged 2 here but 1 on line 2"),
    ],
)
def test_malformed_qrels_reports_line(
    write_dataset: WriteDataset, qrels: str, line: int, message: str
) -> None:
    root = write_dataset(qrels=qrels)
    with pytest.raises(BeirFormatError) as caught:
        load_beir(root, "test")
    assert caught.value.line == line
    assert f"test.tsv:{line}: " in str(caught.value)
    assert message in str(caught.value)


@pytest.mark.parametrize(("qrels", "message"), [(HEADER, "no judgments"), ("", "empty file")])
def test_qrels_without_judgments(write_dataset: WriteDataset, qrels: str, message: str) -> None:
    with pytest.raises(BeirFormatError, match=message) as caught:
        load_beir(write_dataset(qrels=qrels), "test")
    assert caught.value.line is None
