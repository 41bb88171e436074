"""Loader for retrieval datasets in the BEIR layout.

```
<directory>/corpus.jsonl         {"_id": str, "title": str, "text": str} per line
<directory>/queries.jsonl        {"_id": str, "text": str} per line
<directory>/qrels/<split>.tsv    header "query-id<TAB>corpus-id<TAB>score", then one judgment a row
```

Files are read line by line (a BEIR corpus can be gigabytes), decoded as UTF-8. Every id stays a
string exactly as written: "01" and "1" are different documents, as they are in BEIR.
Malformed content raises :class:`BeirFormatError` naming the file and line; a missing file raises
``FileNotFoundError`` naming it, before anything is parsed.
"""

from __future__ import annotations

import errno
import json
import re
from collections.abc import Container, Iterator
from dataclasses import dataclass
from pathlib import Path

QRELS_HEADER = ("query-id", "corpus-id", "score")

# A split names a file inside qrels/; anything path-like could escape the dataset directory.
_SPLIT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

# int() would also take " 1", "1_0" and non-ASCII digits; a qrels score is plain decimal.
_SCORE = re.compile(r"[+-]?[0-9]+")

# How many offending ids an error message lists before it just counts them.
_SHOWN_IDS = 5


class BeirFormatError(ValueError):
    """A BEIR file whose content breaks the layout; ``path`` and ``line`` (1-based) locate it."""

    def __init__(self, path: Path, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


@dataclass(frozen=True, slots=True)
class BeirDoc:
    title: str
    text: str


@dataclass(frozen=True)
class BeirDataset:
    """One split of a BEIR dataset.

    ``queries`` holds only the queries judged in the split's qrels (in queries.jsonl order), and
    every judged query has its text. ``qrels`` may name documents absent from ``corpus``: BEIR
    keeps such judgments and so does the official scoring (they count as relevant-but-unfindable).
    """

    corpus: dict[str, BeirDoc]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_beir(directory: Path, split: str) -> BeirDataset:
    """Load ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` from ``directory``.

    Preconditions: ``split`` is a bare file stem such as ``"test"`` or ``"train"``.
    Raises ``FileNotFoundError`` (naming the file) if the directory or a file is missing, and
    :class:`BeirFormatError` for malformed content, duplicate ids, conflicting judgments, an
    empty qrels file, or judged queries missing from queries.jsonl.
    """
    if not _SPLIT_NAME.fullmatch(split):
        raise ValueError(f"split must be a plain name like 'test', got {split!r}")
    directory = Path(directory)
    corpus_path = directory / "corpus.jsonl"
    queries_path = directory / "queries.jsonl"
    qrels_path = directory / "qrels" / f"{split}.tsv"
    if not directory.is_dir():
        raise FileNotFoundError(
            errno.ENOENT, "BEIR dataset directory does not exist", str(directory)
        )
    # All three checked before parsing, so a typo in the split fails fast, not after the corpus.
    for path, what in (
        (corpus_path, "BEIR corpus file is missing"),
        (queries_path, "BEIR queries file is missing"),
        (qrels_path, f"BEIR qrels file for split {split!r} is missing"),
    ):
        if not path.is_file():
            raise FileNotFoundError(errno.ENOENT, what, str(path))

    qrels = _load_qrels(qrels_path)
    queries = _load_queries(queries_path, judged=qrels.keys())
    missing = [query_id for query_id in qrels if query_id not in queries]
    if missing:
        raise BeirFormatError(
            queries_path,
            None,
            f"{len(missing)} queries judged in {qrels_path.name} have no text here, e.g. "
            f"{missing[:_SHOWN_IDS]}",
        )
    corpus = _load_corpus(corpus_path)
    return BeirDataset(corpus=corpus, queries=queries, qrels=qrels)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` without the line ending, skipping blank lines."""
    # Binary read + per-line decode streams the file and pins a bad byte to its line number.
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise BeirFormatError(path, number, f"not valid UTF-8 ({exc.reason})") from exc
            if number == 1:
                line = line.removeprefix("\ufeff")  # editors on Windows add a byte-order mark
            line = line.rstrip("\r\n")
            if line.strip():
                yield number, line


def _json_records(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    for number, line in _lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BeirFormatError(path, number, f"invalid JSON ({exc.msg})") from exc
        if not isinstance(record, dict):
            raise BeirFormatError(path, number, "expected a JSON object")
        yield number, record


def _string_field(
    path: Path, number: int, record: dict[str, object], key: str, *, default: str | None = None
) -> str:
    if key not in record:
        if default is None:
            raise BeirFormatError(path, number, f"missing field {key!r}")
        return default
    value = record[key]
    if not isinstance(value, str):
        raise BeirFormatError(
            path, number, f"field {key!r} must be a string, got {_json_type(value)}"
        )
    return value


def _json_type(value: object) -> str:
    # Name the JSON type the file author wrote, not the Python type json.loads made of it.
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "array" if isinstance(value, list) else "object"


def _record_id(path: Path, number: int, record: dict[str, object], seen: dict[str, int]) -> str:
    record_id = _string_field(path, number, record, "_id")
    if not record_id:
        raise BeirFormatError(path, number, "field '_id' is empty")
    if record_id in seen:
        raise BeirFormatError(
            path, number, f"duplicate _id {record_id!r} (first on line {seen[record_id]})"
        )
    seen[record_id] = number
    return record_id


def _load_corpus(path: Path) -> dict[str, BeirDoc]:
    corpus: dict[str, BeirDoc] = {}
    seen: dict[str, int] = {}
    for number, record in _json_records(path):
        doc_id = _record_id(path, number, record, seen)
        # Some BEIR corpora omit titles; an absent title is an empty one, a non-string is an error.
        title = _string_field(path, number, record, "title", default="")
        text = _string_field(path, number, record, "text")
        corpus[doc_id] = BeirDoc(title=title, text=text)
    return corpus


def _load_queries(path: Path, *, judged: Container[str]) -> dict[str, str]:
    # Every line is validated, judged or not: a broken file should not pass because of the split.
    queries: dict[str, str] = {}
    seen: dict[str, int] = {}
    for number, record in _json_records(path):
        query_id = _record_id(path, number, record, seen)
        text = _string_field(path, number, record, "text")
        if query_id in judged:
            queries[query_id] = text
    return queries


def _load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    header_seen = False
    for number, line in _lines(path):
        fields = tuple(line.split("\t"))
        if not header_seen:
            if fields != QRELS_HEADER:
                raise BeirFormatError(
                    path, number, f"expected the header {'<TAB>'.join(QRELS_HEADER)!r}"
                )
            header_seen = True
            continue
        if len(fields) != 3:
            raise BeirFormatError(
                path, number, f"expected 3 tab-separated fields, got {len(fields)}"
            )
        query_id, doc_id, raw_score = fields
        if not query_id or not doc_id:
            raise BeirFormatError(path, number, "empty query-id or corpus-id")
        if not _SCORE.fullmatch(raw_score):
            raise BeirFormatError(path, number, f"score must be an integer, got {raw_score!r}")
        score = int(raw_score)
        judgments = qrels.setdefault(query_id, {})
        previous = judgments.get(doc_id)
        # A repeated identical row is harmless; two different grades for one pair are ambiguous.
        if previous is not None and previous != score:
            raise BeirFormatError(
                path,
                number,
                f"({query_id!r}, {doc_id!r}) judged {score} here but {previous} on line "
                f"{first_line[(query_id, doc_id)]}",
            )
        first_line.setdefault((query_id, doc_id), number)
        judgments[doc_id] = score
    if not qrels:
        raise BeirFormatError(path, None, "no judgments" if header_seen else "empty file")
    return qrels
