"""The archive format (docs/portability.md): a gzipped tar holding ``manifest.json`` and one
JSONL file per kind, ``<kind>.jsonl``, one row a line.

Writing streams each kind's rows to a temporary file, hashing and counting as it goes, then
packs the manifest first and the files after it. Reading checks everything before the caller
writes anything (``archive_check``): the manifest (format, version, each file's count and
SHA-256), then every line of every file (JSON, an object, its fields, its id, each reference
pointing at a row of the right kind read before it); an error names the file inside the
archive and the line. The archive's identity is the SHA-256 of its manifest, which holds every
file's checksum: what makes a second import of the same file a no-op.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import tarfile
import tempfile
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

from core.errors import ValidationFailed
from core.portability import upgrades
from core.portability.idmaps import IdSet
from core.portability.kinds import ExportScope, Kind, Row, ref_parts

# Called with (kinds done, kinds in all) as a run moves on.
Progress = Callable[[int, int], None]

MANIFEST = "manifest.json"
# A line longer than this is refused (a document's original file, base64, is the largest row).
MAX_LINE_BYTES = 64 * 1024 * 1024


def _default(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, uuid.UUID | Decimal):
        return str(value)
    if hasattr(value, "tolist"):  # numpy arrays (pgvector's vectors)
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def dumps(value: Any) -> str:
    """One canonical JSON text: sorted keys, no spaces, UTF-8 as is."""
    return json.dumps(
        value, default=_default, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


@dataclass(frozen=True)
class Written:
    manifest: dict[str, Any]
    digest: str


def archive_write(
    out: Path,
    *,
    kinds: Sequence[Kind],
    scope: ExportScope,
    engram_version: str,
    on_progress: Progress | None = None,
) -> Written:
    """Write the archive of ``scope`` to ``out``: every kind's rows, then the manifest.
    ``on_progress(done, total)`` is called after each kind's file is written."""
    entries: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="engram-export-") as tmp:
        for position, kind in enumerate(kinds):
            if on_progress is not None and position:
                on_progress(position, len(kinds))
            path = Path(tmp) / kind.file
            digest = hashlib.sha256()
            count = 0
            models: Counter[tuple[str, int]] = Counter()
            with path.open("wb") as handle:
                for row in kind.rows(scope):
                    if kind.vector:
                        vector = row.get(kind.vector)
                        if not scope.with_vectors:
                            row.pop(kind.vector, None)
                        elif vector is not None:
                            models[(row.get("embedding_model", ""), len(vector))] += 1
                    line = (dumps(row) + "\n").encode()
                    handle.write(line)
                    digest.update(line)
                    count += 1
            entries.append(
                {
                    "name": kind.name,
                    "file": kind.file,
                    "count": count,
                    "sha256": digest.hexdigest(),
                    "schema": dict(kind.schema),
                    "vectors": (
                        {
                            "field": kind.vector,
                            "models": [
                                {"model": model, "dimensions": dims, "count": n}
                                for (model, dims), n in sorted(models.items())
                            ],
                        }
                        if kind.vector and scope.with_vectors
                        else None
                    ),
                }
            )
        manifest = {
            "format": upgrades.FORMAT_NAME,
            "format_version": upgrades.FORMAT_VERSION,
            "engram_version": engram_version,
            "created_at": dt.datetime.now(dt.UTC).isoformat(),
            "account": {"slug": scope.account.slug, "name": scope.account.name},
            "single_agent": scope.single_agent,
            "with_vectors": scope.with_vectors,
            "kinds": entries,
        }
        data = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
        with tarfile.open(out, "w:gz") as tar:
            info = tarfile.TarInfo(MANIFEST)
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
            for entry in entries:
                tar.add(Path(tmp) / entry["file"], arcname=entry["file"], recursive=False)
    return Written(manifest=manifest, digest=hashlib.sha256(data).hexdigest())


def _invalid(message: str, *, code: str = "import_invalid", **details: Any) -> ValidationFailed:
    where = ""
    if "file" in details:
        where = details["file"] + (f" line {details['line']}" if "line" in details else "") + ": "
    return ValidationFailed(where + message, code=code, details=details)


class ArchiveReader:
    """An archive opened for reading: its manifest (checked on opening) and its files' rows."""

    def __init__(self, path: Path, known: Sequence[Kind]) -> None:
        self.path = path
        try:
            self.tar = tarfile.open(path, "r:*")  # noqa: SIM115 - closed by close()
        except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
            raise _invalid(
                f"not an Engram export archive ({exc}).", code="import_not_an_archive"
            ) from exc
        try:
            self.members = {m.name: m for m in self.tar.getmembers()}
        except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
            self.tar.close()
            raise _invalid(
                f"the archive is damaged or truncated ({exc}).", code="import_not_an_archive"
            ) from exc
        try:
            raw = self._read(MANIFEST)
            self.digest = hashlib.sha256(raw).hexdigest()
            self.manifest = self._manifest(raw, known)
        except BaseException:
            self.tar.close()
            raise

    def close(self) -> None:
        self.tar.close()

    def __enter__(self) -> ArchiveReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self, name: str) -> IO[bytes]:
        member = self.members.get(name)
        if member is None or not member.isfile():
            raise _invalid("missing from the archive.", code="import_missing_file", file=name)
        handle = self.tar.extractfile(member)
        assert handle is not None  # a regular file
        return handle

    def _read(self, name: str) -> bytes:
        try:
            return self._open(name).read()
        except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
            raise _invalid(f"unreadable ({exc}).", file=name) from exc

    def _manifest(self, raw: bytes, known: Sequence[Kind]) -> dict[str, Any]:
        try:
            manifest = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise _invalid(f"not JSON ({exc}).", file=MANIFEST) from exc
        if not isinstance(manifest, dict) or manifest.get("format") != upgrades.FORMAT_NAME:
            raise _invalid("not an Engram account export.", file=MANIFEST)
        version = manifest.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise _invalid("format_version must be a positive integer.", file=MANIFEST)
        if version > upgrades.FORMAT_VERSION:
            raise _invalid(
                f"format version {version} is newer than this installation reads "
                f"({upgrades.FORMAT_VERSION}): upgrade Engram to import it.",
                code="import_format_too_new",
                file=MANIFEST,
            )
        by_name = {kind.name: kind for kind in known}
        entries = manifest.get("kinds")
        if not isinstance(entries, list):
            raise _invalid("kinds must be a list.", file=MANIFEST)
        seen: set[str] = set()
        for entry in entries:
            if not isinstance(entry, dict) or not {"name", "file", "count", "sha256"} <= set(entry):
                raise _invalid("each kind needs name, file, count and sha256.", file=MANIFEST)
            if entry["name"] not in by_name:
                raise _invalid(
                    f"unknown kind {entry['name']!r}.", code="import_unknown_kind", file=MANIFEST
                )
            if entry["file"] != by_name[entry["name"]].file or entry["name"] in seen:
                raise _invalid(f"kind {entry['name']!r} listed wrongly.", file=MANIFEST)
            seen.add(entry["name"])
        expected = {MANIFEST} | {entry["file"] for entry in entries}
        extra = sorted(set(self.members) - expected)
        if extra:
            raise _invalid(
                f"the archive holds files its manifest does not list: {extra}.", file=MANIFEST
            )
        return manifest

    @property
    def version(self) -> int:
        return int(self.manifest["format_version"])

    def entries(self, known: Sequence[Kind]) -> list[tuple[Kind, dict[str, Any]]]:
        """The archive's kinds in load order (the registry's), each with its manifest entry."""
        listed = {entry["name"]: entry for entry in self.manifest["kinds"]}
        return [(kind, listed[kind.name]) for kind in known if kind.name in listed]

    def rows(self, kind: Kind, entry: dict[str, Any]) -> Iterator[tuple[int, Row]]:
        """``(line, row)`` of one file, upgraded to the current format, checking as it reads
        that each line is a JSON object and, at the end, the file's count and checksum."""
        name = entry["file"]
        digest = hashlib.sha256()
        count = 0
        try:
            handle = self._open(name)
            for number, line in enumerate(
                iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""), 1
            ):
                if len(line) > MAX_LINE_BYTES:
                    raise _invalid("line too long.", file=name, line=number)
                digest.update(line)
                count = number
                try:
                    row = json.loads(line)
                except (ValueError, UnicodeDecodeError) as exc:
                    raise _invalid(f"not JSON ({exc}).", file=name, line=number) from exc
                if not isinstance(row, dict):
                    raise _invalid("a row must be a JSON object.", file=name, line=number)
                yield number, upgrades.row_upgrade(kind.name, row, from_version=self.version)
        except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
            raise _invalid(f"unreadable, damaged or truncated ({exc}).", file=name) from exc
        if count != entry["count"]:
            raise _invalid(
                f"{count} rows where the manifest says {entry['count']}.",
                code="import_count_mismatch",
                file=name,
            )
        if digest.hexdigest() != entry["sha256"]:
            raise _invalid(
                "checksum mismatch: the file was changed after the export.",
                code="import_checksum_mismatch",
                file=name,
            )


def archive_check(
    reader: ArchiveReader, known: Sequence[Kind], on_progress: Progress | None = None
) -> dict[str, int]:
    """Every file of the archive read and checked; nothing written. Returns the rows per kind.

    A row has exactly its kind's fields (plus ``id``, a positive integer unique in its file,
    and the vector field when the export carried vectors); each reference names a row of the
    kind its schema says, read before it."""
    declared: dict[str, IdSet] = {}
    counts: dict[str, int] = {}
    entries = reader.entries(known)
    for position, (kind, entry) in enumerate(entries):
        if on_progress is not None and position:
            on_progress(position, len(entries))
        name = kind.file
        required = {"id", *kind.schema}
        allowed = required | ({kind.vector} if kind.vector else set())
        references = kind.references()
        ids = declared.setdefault(kind.name, IdSet())
        for number, row in reader.rows(kind, entry):
            keys = set(row)
            if keys - allowed:
                raise _invalid(f"unknown fields {sorted(keys - allowed)}.", file=name, line=number)
            if required - keys:
                raise _invalid(f"missing fields {sorted(required - keys)}.", file=name, line=number)
            pk = row["id"]
            if not isinstance(pk, int) or isinstance(pk, bool) or pk < 1 or pk in ids:
                raise _invalid(f"bad or repeated id {pk!r}.", file=name, line=number)
            for field, (target, many) in references.items():
                values = row[field]
                if many and not isinstance(values, list):
                    raise _invalid(f"{field} must be a list.", file=name, line=number)
                for value in values if many else [values]:
                    try:
                        parts = ref_parts(value)
                    except ValueError as exc:
                        raise _invalid(f"{field}: {exc}.", file=name, line=number) from exc
                    if parts is None:
                        continue
                    if parts[0] != target or parts[1] not in declared.get(target, ()):
                        raise _invalid(
                            f"{field} refers to {value['ref']}, which the archive does not "
                            "hold before this row.",
                            file=name,
                            line=number,
                        )
            if kind.vector and row.get(kind.vector) is not None:
                vector = row[kind.vector]
                if not isinstance(vector, list) or not all(
                    isinstance(x, int | float) and not isinstance(x, bool) for x in vector
                ):
                    raise _invalid(
                        f"{kind.vector} must be a list of numbers.", file=name, line=number
                    )
            ids.add(pk)
        counts[kind.name] = len(ids)
    return counts
