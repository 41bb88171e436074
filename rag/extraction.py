"""Turn an uploaded file's bytes into normalised plain text for chunking.

Supported: plain text, markdown, HTML, PDF and JSON. HTML comes out markdown-like ("# " heading
lines, blank lines between blocks, fenced <pre> blocks) so the markdown chunker can follow its
structure. Every result is NFC-normalised, uses "\\n" line ends, has no NUL characters and has
no runs of more than one blank line.

Failures raise core errors the API maps to 4xx responses: UnsupportedMediaType
("unsupported_file_type") and ValidationFailed ("empty_file", "undecodable_file",
"invalid_pdf", "invalid_json").

``check_upload`` is what a web request runs: text formats are extracted there (it is linear and
catches every error up front), a PDF is only opened (magic bytes, cross-reference table, page
count): extracting every page's text is CPU work proportional to what the content streams expand
to, not to the upload's size, so it runs in the ingestion worker.
"""

from __future__ import annotations

import codecs
import io
import json
import logging
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

from core.errors import UnsupportedMediaType, ValidationFailed
from rag.chunking import markdown_outline

if TYPE_CHECKING:
    import pypdf

__all__ = [
    "SUPPORTED_CONTENT_TYPES",
    "CheckedUpload",
    "ExtractedText",
    "check_upload",
    "extract_text",
    "normalise_text",
    "resolve_content_type",
]

SUPPORTED_CONTENT_TYPES = (
    "text/plain",
    "text/markdown",
    "text/html",
    "application/pdf",
    "application/json",
)
_CONTENT_TYPE_ALIASES = {
    "text/x-markdown": "text/markdown",
    "application/xhtml+xml": "text/html",
}
_EXTENSIONS = {
    ".txt": "text/plain",
    ".text": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
    ".json": "application/json",
}

logger = logging.getLogger("engram.rag")
T = TypeVar("T")


@dataclass(frozen=True)
class ExtractedText:
    """Normalised text of a document, the type it was read as, and its title if it has one."""

    text: str
    content_type: str
    title: str | None


def extract_text(*, data: bytes, filename: str | None, content_type: str | None) -> ExtractedText:
    """Extract the text of one uploaded file.

    The format is the explicit ``content_type`` when it is a supported one (parameters such as
    "; charset=" are ignored: text must be UTF-8, or UTF-8/UTF-16 with a byte-order mark),
    else the extension of ``filename``. The returned text is non-empty and normalised (see
    normalise_text). Raises UnsupportedMediaType or ValidationFailed as the module describes.
    """
    kind = resolve_content_type(filename=filename, content_type=content_type)
    if not data:
        raise ValidationFailed("The file is empty.", code="empty_file")
    if kind == "application/pdf":
        text, title = _pdf(data)
    else:
        decoded = _decode(data)
        if kind == "text/html":
            text, title = _html(decoded)
        elif kind == "application/json":
            text, title = _json(decoded)
        else:
            text, title = decoded, None
    text = normalise_text(text)
    if not text:
        raise ValidationFailed("The file contains no text.", code="empty_file")
    if kind == "text/markdown":
        title = next((h.title for h in markdown_outline(text).headings if h.level == 1), None)
    return ExtractedText(text=text, content_type=kind, title=_clean_title(title))


@dataclass(frozen=True)
class CheckedUpload:
    """An upload that passed the web request's checks. ``text`` is None when its extraction is
    left to the worker (PDF)."""

    content_type: str
    title: str | None
    text: str | None


def check_upload(*, data: bytes, filename: str | None, content_type: str | None) -> CheckedUpload:
    """Validate an upload cheaply enough for a web request (see the module docstring).

    Raises what ``extract_text`` raises; a PDF that opens here can still fail extraction in the
    worker (a corrupt content stream, no text at all), which ends its document ``failed``.
    """
    kind = resolve_content_type(filename=filename, content_type=content_type)
    if not data:
        raise ValidationFailed("The file is empty.", code="empty_file")
    if kind == "application/pdf":
        return CheckedUpload(content_type=kind, title=_pdf_check(data), text=None)
    extracted = extract_text(data=data, filename=filename, content_type=kind)
    return CheckedUpload(content_type=kind, title=extracted.title, text=extracted.text)


def resolve_content_type(*, filename: str | None, content_type: str | None) -> str:
    """The supported content type a file will be read as; raises UnsupportedMediaType."""
    declared = (content_type or "").split(";", 1)[0].strip().lower()
    declared = _CONTENT_TYPE_ALIASES.get(declared, declared)
    if declared in SUPPORTED_CONTENT_TYPES:
        return declared
    suffix = PurePosixPath((filename or "").replace("\\", "/")).suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    raise UnsupportedMediaType(
        "Unsupported file type; upload .txt, .md, .html, .pdf or .json.",
        code="unsupported_file_type",
        details={
            "filename": filename,
            "content_type": content_type,
            "supported": list(SUPPORTED_CONTENT_TYPES),
        },
    )


_LINE_ENDS = re.compile(r"\r\n?")
_EXTRA_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n){2,}")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")


def normalise_text(text: str) -> str:
    """NFC, "\\n" line ends, no NUL, at most one blank line in a row, no blank lines at either
    end and no trailing whitespace (the first line's indentation is kept)."""
    text = unicodedata.normalize("NFC", text.replace("\x00", ""))
    text = _LINE_ENDS.sub("\n", text)
    text = _EXTRA_BLANK_LINES.sub("\n\n", text)
    return _LEADING_BLANK_LINES.sub("", text).rstrip()


def _decode(data: bytes) -> str:
    # Only encodings that announce themselves: guessing (say, Latin-1) always "succeeds" and
    # would index mojibake without anyone noticing.
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    else:
        encoding = "utf-8-sig"  # UTF-8, skipping a byte-order mark if there is one
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ValidationFailed(
            "The file is not valid UTF-8 text (nor UTF-16 with a byte-order mark);"
            " save it as UTF-8 and upload it again.",
            code="undecodable_file",
            details={"encoding": encoding.removesuffix("-sig"), "byte_offset": exc.start},
        ) from exc


def _clean_title(title: str | None) -> str | None:
    if title is None:
        return None
    cleaned = " ".join(unicodedata.normalize("NFC", title.replace("\x00", "")).split())
    return cleaned or None


# --- PDF ------------------------------------------------------------------------------------
# The header may follow some junk, but must start within the first kilobyte (PDF 1.7, annex H).
_PDF_MAGIC = b"%PDF-"
_PDF_MAGIC_WITHIN = 1024


def _pdf(data: bytes) -> tuple[str, str | None]:
    def read(reader: pypdf.PdfReader) -> tuple[str, str | None]:
        pages = [page.extract_text() or "" for page in reader.pages]
        return "\n\n".join(page.strip() for page in pages), _pdf_title(reader)

    return _pdf_open(data, read)


def _pdf_check(data: bytes) -> str | None:
    """Open a PDF and count its pages without extracting text; returns its title."""

    def count(reader: pypdf.PdfReader) -> str | None:
        if not len(reader.pages):
            raise ValidationFailed("The PDF has no pages.", code="empty_file")
        return _pdf_title(reader)

    return _pdf_open(data, count)


def _pdf_open(data: bytes, use: Callable[[pypdf.PdfReader], T]) -> T:
    """Open (and, with the empty password, unlock) a PDF and run ``use`` on it, turning pypdf's
    many failure types into invalid_pdf."""
    if _PDF_MAGIC not in data[:_PDF_MAGIC_WITHIN]:
        raise _invalid_pdf("The file is not a PDF (no %PDF- header).", reason="not_pdf")
    # pypdf is imported when a PDF comes: most processes never read one, and importing it
    # costs every start-up (docs/benchmarks.md, "Start and restart").
    import pypdf
    from pypdf.errors import FileNotDecryptedError, PdfReadError

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            # Many PDFs are encrypted only to restrict printing or copying and open with an
            # empty password; anything else needs a password we do not have.
            try:
                unlocked = reader.decrypt("")
            except Exception as exc:  # pypdf raises several types (e.g. a missing AES backend)
                raise _invalid_pdf("The PDF is encrypted.", reason="encrypted") from exc
            if not unlocked:
                raise _invalid_pdf("The PDF is password-protected.", reason="encrypted")
        return use(reader)
    except ValidationFailed:
        raise
    except FileNotDecryptedError as exc:
        raise _invalid_pdf("The PDF is password-protected.", reason="encrypted") from exc
    except PdfReadError as exc:
        raise _invalid_pdf(f"The file is not a readable PDF: {exc}", reason="corrupt") from exc
    except Exception as exc:  # malformed files surface as many exception types inside pypdf
        logger.info("PDF extraction failed", exc_info=True)
        raise _invalid_pdf("The file is not a readable PDF.", reason="corrupt") from exc


def _pdf_title(reader: pypdf.PdfReader) -> str | None:
    metadata = reader.metadata
    title = metadata.title if metadata is not None else None
    return title if isinstance(title, str) else None


def _invalid_pdf(message: str, *, reason: str) -> ValidationFailed:
    return ValidationFailed(message, code="invalid_pdf", details={"reason": reason})


# --- JSON -----------------------------------------------------------------------------------
def _json(decoded: str) -> tuple[str, str | None]:
    try:
        value = json.loads(decoded)
    except json.JSONDecodeError as exc:
        raise ValidationFailed(
            f"The file is not valid JSON: {exc.msg}.",
            code="invalid_json",
            details={"line": exc.lineno, "column": exc.colno},
        ) from exc
    except RecursionError as exc:
        raise ValidationFailed(
            "The JSON is nested too deeply.", code="invalid_json", details={}
        ) from exc
    title = value.get("title") if isinstance(value, dict) else None
    if isinstance(value, list):
        # A list of records: one paragraph per record, so chunkers split between records.
        records = ["\n".join(_json_lines(item, "")) for item in value]
        text = "\n\n".join(record for record in records if record)
    else:
        text = "\n".join(_json_lines(value, ""))
    return text, title if isinstance(title, str) else None


def _json_lines(value: Any, key: str) -> list[str]:
    """ "key: value" lines for every string in ``value``, keys dotted by nesting.

    Only strings become text: numbers, booleans and nulls are left out because long numeric
    arrays (vectors, coordinates) would drown the words in digits. List items repeat their
    list's key.
    """
    lines: list[str] = []
    stack: list[tuple[Any, str]] = [(value, key)]
    # Iterative, so nesting that the parser accepted cannot exhaust the stack here, whatever
    # depth the caller is already at.
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if item.strip():
                lines.append(f"{path}: {item}" if path else item)
        elif isinstance(item, dict):
            children = [(v, f"{path}.{k}" if path else str(k)) for k, v in item.items()]
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend((child, path) for child in reversed(item))
    return lines


# --- HTML -----------------------------------------------------------------------------------
# Elements whose content is not part of the document's text.
_SKIPPED = frozenset(
    {"script", "style", "noscript", "template", "nav", "svg", "math", "iframe", "object"}
)
# Elements that start a new block; their content becomes its own paragraph.
_BLOCKS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "caption",
        "dd",
        "details",
        "dialog",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "header",
        "hr",
        "legend",
        "li",
        "main",
        "ol",
        "p",
        "section",
        "summary",
        "table",
        "tr",
        "ul",
    }
)
_CELLS = frozenset({"td", "th"})
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_VOID = frozenset(
    {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    }
)
_INLINE_SPACE = re.compile(r"\s+")
_BACKTICK_RUN = re.compile(r"`{3,}")


def _html(decoded: str) -> tuple[str, str | None]:
    parser = _HtmlText()
    parser.feed(decoded)
    parser.close()
    return parser.text(), parser.title


class _HtmlText(HTMLParser):
    """Collects an HTML page's visible text as markdown-like blocks.

    Skipped elements (scripts, navigation) are tracked by name only, so unclosed elements
    inside them (common in real pages) cannot leave the parser stuck skipping. Source line
    breaks are formatting and become spaces; <br> and table rows make lines, blocks make
    paragraphs, headings make "# " lines and <pre> becomes a fenced block kept verbatim.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title: str | None = None
        self._blocks: list[str] = []
        self._inline: list[str] = []
        self._skip: list[str] = []
        self._heading: int | None = None
        self._pre_depth = 0
        self._in_title = False
        self._title_parts: list[str] = []
        self._first_h1: str | None = None
        self._list_item = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip:
            if tag == self._skip[-1]:
                self._skip.append(tag)
            return
        if tag == "title":
            self._in_title = self.title is None
        elif tag in _SKIPPED or (tag not in _VOID and any(name == "hidden" for name, _ in attrs)):
            self._skip.append(tag)
        elif tag in _HEADINGS:
            self._flush()
            self._heading = _HEADINGS[tag]
        elif tag == "pre":
            if not self._pre_depth:
                self._flush()
            self._pre_depth += 1
        elif tag == "br":
            self._inline.append("\n")
        elif tag in _CELLS:
            line = "".join(self._inline).rsplit("\n", 1)[-1]
            if line.strip():
                self._inline.append(" | ")
        elif tag in _BLOCKS:
            self._flush()
            if tag == "li":
                self._list_item = True

    def handle_endtag(self, tag: str) -> None:
        if self._skip:
            if tag == self._skip[-1]:
                self._skip.pop()
            return
        if tag == "title" and self._in_title:
            self._in_title = False
            self.title = "".join(self._title_parts)
        elif tag in _HEADINGS and self._heading is not None:
            self._flush()
        elif tag == "pre" and self._pre_depth:
            if self._pre_depth == 1:
                self._flush()  # while still inside, so the text is kept verbatim
            self._pre_depth -= 1
        elif tag in _BLOCKS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title_parts.append(data)
        elif self._skip:
            return
        elif self._pre_depth:
            self._inline.append(data)
        else:
            self._inline.append(_INLINE_SPACE.sub(" ", data))

    def _flush(self) -> None:
        raw = "".join(self._inline)
        self._inline = []
        if self._pre_depth:
            code = raw.strip("\n")
            if code.strip():
                # A fence longer than any backtick run inside cannot be closed by the code.
                longest = max((len(run) for run in _BACKTICK_RUN.findall(code)), default=2)
                fence = "`" * (longest + 1)
                self._blocks.append(f"{fence}\n{code}\n{fence}")
            return
        lines = [_INLINE_SPACE.sub(" ", line).strip() for line in raw.split("\n")]
        level = self._heading
        if level is not None:
            title = " ".join(line for line in lines if line)
            if title:  # else keep waiting: the heading's text may sit in a nested block
                self._heading = None
                self._blocks.append("#" * level + " " + title)
                if level == 1 and self._first_h1 is None:
                    self._first_h1 = title
            return
        text = "\n".join(line for line in lines if line)
        if text:
            self._blocks.append(f"- {text}" if self._list_item else text)
            self._list_item = False

    def text(self) -> str:
        """The collected text; call once, after close()."""
        self._flush()
        if not (self.title and self.title.strip()):
            self.title = self._first_h1  # pages without <title> usually name themselves in <h1>
        return "\n\n".join(self._blocks)
