"""Text extraction for every supported format and every error code (pure tests, no database)."""

from __future__ import annotations

import codecs
import io
import json
from pathlib import Path

import pypdf
import pytest

from core.errors import UnsupportedMediaType, ValidationFailed
from rag.chunking import chunk_markdown
from rag.extraction import ExtractedText, extract_text, resolve_content_type
from tests.support.data import SCIFACT

ROOT = Path(__file__).resolve().parents[2]
SCIFACT_CORPUS = SCIFACT / "corpus.jsonl"


def extract(data: bytes, filename: str | None = None, content_type: str | None = None):
    return extract_text(data=data, filename=filename, content_type=content_type)


def build_pdf(pages: list[str], *, title: str | None = None) -> bytes:
    """A minimal valid PDF: one Helvetica text line per page, optional /Title metadata."""

    def literal(text: str) -> str:
        return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"

    page_ids = [4 + 2 * i for i in range(len(pages))]
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: f"<< /Type /Pages /Kids [{' '.join(f'{i} 0 R' for i in page_ids)}]"
        f" /Count {len(pages)} >>".encode(),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    }
    for page_id, text in zip(page_ids, pages, strict=True):
        stream = f"BT /F1 12 Tf 72 720 Td {literal(text)} Tj ET".encode()
        objects[page_id] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {page_id + 1} 0 R"
            " /Resources << /Font << /F1 3 0 R >> >> >>"
        ).encode()
        objects[page_id + 1] = (
            f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream"
        )
    info_id = None
    if title is not None:
        info_id = max(objects) + 1
        objects[info_id] = f"<< /Title {literal(title)} >>".encode()
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = out.tell()
        out.write(f"{number} 0 obj\n".encode() + objects[number] + b"\nendobj\n")
    xref = out.tell()
    size = max(objects) + 1
    out.write(f"xref\n0 {size}\n0000000000 65535 f \n".encode())
    for number in range(1, size):
        out.write(f"{offsets[number]:010d} 00000 n \n".encode())
    info = f" /Info {info_id} 0 R" if info_id else ""
    out.write(f"trailer\n<< /Size {size} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def encrypt(pdf: bytes, user_password: str) -> bytes:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdf)))
    # RC4 needs no optional crypto dependency, unlike AES.
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# --- choosing the format --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("filename", "content_type", "expected"),
    [
        ("notes.txt", None, "text/plain"),
        ("README.md", None, "text/markdown"),
        ("guide.MARKDOWN", None, "text/markdown"),
        ("page.htm", None, "text/html"),
        ("page.html", None, "text/html"),
        ("paper.pdf", None, "application/pdf"),
        ("data.json", None, "application/json"),
        # An explicit supported type wins over the extension...
        ("notes.txt", "text/markdown; charset=utf-8", "text/markdown"),
        (None, "application/JSON", "application/json"),
        # ...and an unsupported or generic one falls back to it.
        ("notes.md", "application/octet-stream", "text/markdown"),
        ("C:\\Users\\me\\page.html", "", "text/html"),
    ],
)
def test_format_is_chosen_by_content_type_then_extension(
    filename: str | None, content_type: str | None, expected: str
) -> None:
    assert resolve_content_type(filename=filename, content_type=content_type) == expected


@pytest.mark.parametrize(
    ("filename", "content_type"),
    [
        ("setup.exe", "application/octet-stream"),
        (
            "report.docx",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
        ("archive.tar.gz", None),
        (None, None),
        ("noextension", "image/png"),
    ],
)
def test_unsupported_types_are_refused(filename: str | None, content_type: str | None) -> None:
    with pytest.raises(UnsupportedMediaType) as caught:
        extract(b"MZ\x90\x00binary", filename, content_type)
    assert caught.value.code == "unsupported_file_type"
    assert caught.value.status_code == 415
    assert "text/plain" in caught.value.details["supported"]


# --- plain text and its normalisation -------------------------------------------------------
def test_plain_text_is_normalised() -> None:
    decomposed = "cafe\u0301"  # e + combining acute accent
    data = f"  \r\nFirst line\r\n\r\n\r\n\r\nSecond\x00 para {decomposed}\rend  \n\n".encode()
    result = extract(data, "notes.txt")
    assert result == ExtractedText(
        text="First line\n\nSecond para caf\u00e9\nend", content_type="text/plain", title=None
    )


@pytest.mark.parametrize(
    "data",
    [
        "Grüße, naïve café".encode(),
        codecs.BOM_UTF8 + "Grüße, naïve café".encode(),
        "Grüße, naïve café".encode("utf-16"),  # with a byte-order mark
        codecs.BOM_UTF16_BE + "Grüße, naïve café".encode("utf-16-be"),
    ],
    ids=["utf-8", "utf-8-bom", "utf-16", "utf-16-be-bom"],
)
def test_text_encodings_that_announce_themselves(data: bytes) -> None:
    assert extract(data, "a.txt").text == "Grüße, naïve café"


@pytest.mark.parametrize(
    "data",
    [b"caf\xe9 \xff", b"valid start \xc3\x28 invalid continuation", codecs.BOM_UTF16_LE + b"A"],
    ids=["latin-1", "bad-continuation", "odd-utf-16"],
)
def test_undecodable_text_is_refused_not_guessed(data: bytes) -> None:
    with pytest.raises(ValidationFailed) as caught:
        extract(data, "a.txt")
    assert caught.value.code == "undecodable_file"
    assert caught.value.status_code == 400
    assert "byte_offset" in caught.value.details


@pytest.mark.parametrize(
    ("data", "filename"),
    [
        (b"", "a.txt"),
        (b"", "a.pdf"),
        (b" \n\t\r\n  \n", "a.txt"),
        (b"\x00\x00\n", "a.md"),
        (b"<html><head><script>let x = 1;</script></head><body> </body></html>", "a.html"),
        (b'{"count": 3, "ok": true, "items": [1, 2]}', "a.json"),
        (b"[]", "a.json"),
    ],
)
def test_files_without_text_are_empty(data: bytes, filename: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        extract(data, filename)
    assert caught.value.code == "empty_file"


# --- markdown -------------------------------------------------------------------------------
def test_markdown_title_is_the_first_level_one_heading() -> None:
    text = "```sh\n# not a heading\n```\n\n## Subtitle\n\n# Real Title #\n\nBody.\n"
    result = extract(text.encode(), "doc.md")
    assert result.content_type == "text/markdown"
    assert result.title == "Real Title"
    assert result.text == text.strip()


def test_the_project_readme() -> None:
    data = (ROOT / "README.md").read_bytes()
    result = extract(data, "README.md")
    assert result.title == "Engram"
    assert result.text == data.decode().strip()
    assert extract(b"No headings here.", "a.md").title is None


# --- HTML -----------------------------------------------------------------------------------
PAGE = b"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title> Engram &amp; agents </title>
<style>body { color: red; }</style>
<script>document.write("<p>injected</p>");</script></head>
<body>
<nav><ul><li><a href="/">Home</a><li><a href="/docs">Docs</a></ul></nav>
<h1>Install</h1>
<p>Engram runs
   on <b>Python</b> 3.12.</p>
<div>First line<br>second line</div>
<h2>On <em>Linux</em></h2>
<ul><li>Download</li><li><p>Run it</p></li></ul>
<table><tr><th>name</th><th>value</th></tr><tr><td>port</td><td>8000</td></tr></table>
<pre><code>def main():
    return 0
</code></pre>
<p hidden>Not shown</p>
<noscript>Enable JavaScript</noscript>
<p>Caf&eacute; &lt;tags&gt; &#8212; done.</p>
</body></html>"""


def test_html_keeps_headings_and_blocks_and_drops_scripts() -> None:
    result = extract(PAGE, "index.html")
    assert result.content_type == "text/html"
    assert result.title == "Engram & agents"
    assert result.text == (
        "# Install\n\n"
        "Engram runs on Python 3.12.\n\n"
        "First line\nsecond line\n\n"
        "## On Linux\n\n"
        "- Download\n\n"
        "- Run it\n\n"
        "name | value\n\n"
        "port | 8000\n\n"
        "```\ndef main():\n    return 0\n```\n\n"
        "Café <tags> — done."
    )
    for hidden in ("color: red", "injected", "Home", "Docs", "Not shown", "JavaScript"):
        assert hidden not in result.text


def test_html_headings_feed_the_markdown_chunker() -> None:
    result = extract(PAGE, None, "text/html; charset=utf-8")
    chunks = chunk_markdown(result.text, chunk_size=32, chunk_overlap=0)
    paths = {chunk.heading_path for chunk in chunks}
    assert paths == {("Install",), ("Install", "On Linux")}
    fenced = [chunk for chunk in chunks if "def main" in chunk.text]
    assert len(fenced) == 1 and "return 0\n```" in fenced[0].text


def test_html_title_falls_back_to_the_first_h1() -> None:
    result = extract(b"<h2>Intro</h2><h1>The <i>Page</i></h1><p>x</p>", "a.html")
    assert result.title == "The Page"


# --- JSON -----------------------------------------------------------------------------------
def test_json_strings_become_key_value_lines() -> None:
    result = extract(json.dumps({"title": "X", "body": "Y", "tags": ["a"]}).encode(), "a.json")
    assert result == ExtractedText(
        text="title: X\nbody: Y\ntags: a", content_type="application/json", title="X"
    )


def test_json_nesting_uses_dotted_keys_and_skips_non_strings() -> None:
    document = {
        "meta": {"author": {"name": "Ada"}, "year": 1843, "draft": False, "note": None},
        "sections": [{"heading": "One", "text": "First"}, {"heading": "Two"}],
        "embedding": [0.1, 0.2, 0.3],
        "blank": "   ",
    }
    result = extract(json.dumps(document).encode(), None, "application/json")
    assert result.text == (
        "meta.author.name: Ada\nsections.heading: One\nsections.text: First\nsections.heading: Two"
    )
    assert result.title is None


def test_json_top_level_list_gives_one_paragraph_per_record() -> None:
    records = [{"title": "A", "text": "alpha"}, 42, {"title": "B"}, "loose string"]
    result = extract(json.dumps(records).encode(), "records.json")
    assert result.text == "title: A\ntext: alpha\n\ntitle: B\n\nloose string"


def test_json_deep_nesting() -> None:
    deep = '{"a":' * 500 + '"bottom"' + "}" * 500
    assert extract(deep.encode(), "deep.json").text == ".".join(["a"] * 500) + ": bottom"
    too_deep = '{"a":' * 100_000 + '"bottom"' + "}" * 100_000
    with pytest.raises(ValidationFailed) as caught:
        extract(too_deep.encode(), "deep.json")
    assert caught.value.code == "invalid_json"


def test_a_real_scifact_record_as_json() -> None:
    if not SCIFACT_CORPUS.exists():
        pytest.skip(f"SciFact corpus not found at {SCIFACT_CORPUS} (shared evaluation data)")
    with SCIFACT_CORPUS.open("rb") as corpus:
        line = corpus.readline()
    record = json.loads(line)
    result = extract(line, "record.json")
    assert result.title == record["title"]
    assert result.text.startswith(f"_id: {record['_id']}\ntitle: {record['title']}\ntext: ")
    assert record["text"][:200] in result.text


@pytest.mark.parametrize(
    "data", [b'{"a": 1,}', b"{'single': 'quotes'}", b'{"open": ', b"plain words"]
)
def test_invalid_json_is_refused(data: bytes) -> None:
    with pytest.raises(ValidationFailed) as caught:
        extract(data, "a.json")
    assert caught.value.code == "invalid_json"
    assert {"line", "column"} <= caught.value.details.keys()


# --- PDF ------------------------------------------------------------------------------------
def test_pdf_pages_are_joined_by_blank_lines_and_title_read() -> None:
    pdf = build_pdf(
        ["Engram keeps memories for agents.", "Second page (with parentheses)."],
        title="Engram Manual",
    )
    result = extract(pdf, "manual.pdf")
    assert result.content_type == "application/pdf"
    assert result.title == "Engram Manual"
    assert result.text == "Engram keeps memories for agents.\n\nSecond page (with parentheses)."


def test_pdf_without_metadata_has_no_title() -> None:
    result = extract(build_pdf(["Only page."]), None, "application/pdf")
    assert result.title is None
    assert result.text == "Only page."


def test_pdf_encrypted_with_an_empty_password_is_read() -> None:
    pdf = encrypt(build_pdf(["Readable without a password."]), user_password="")
    assert extract(pdf, "a.pdf").text == "Readable without a password."


def test_password_protected_pdf_is_invalid() -> None:
    pdf = encrypt(build_pdf(["Secret."]), user_password="secret")
    with pytest.raises(ValidationFailed) as caught:
        extract(pdf, "a.pdf")
    assert caught.value.code == "invalid_pdf"
    assert caught.value.details == {"reason": "encrypted"}


@pytest.mark.parametrize(
    "data",
    [
        b"this is not a pdf at all",
        b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog",
        build_pdf(["Truncated document."])[:150],
    ],
    ids=["not-pdf", "garbage-body", "truncated"],
)
def test_corrupt_pdf_is_invalid(data: bytes) -> None:
    with pytest.raises(ValidationFailed) as caught:
        extract(data, "a.pdf")
    assert caught.value.code == "invalid_pdf"


def test_pdf_without_text_is_empty() -> None:
    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=200, height=200)
    out = io.BytesIO()
    writer.write(out)
    with pytest.raises(ValidationFailed) as caught:
        extract(out.getvalue(), "scan.pdf")
    assert caught.value.code == "empty_file"
