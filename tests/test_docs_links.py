"""Links between the documents resolve (no database): every relative Markdown link names a file
that exists, and its ``#anchor`` a heading of that file; every ``docs/....md`` a source file,
test or document names exists, and the section it quotes after it (``docs/memory/context.md,
"The budget"``) is a heading or a bold paragraph title there."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")
DOC_REF = re.compile(r"(?<!e\.g\. )\bdocs/[\w./-]+\.md\b")  # "e.g. docs/x.md" is an example
# A reference followed by the section it points to: docs/x.md, "Section" (the name may wrap).
SECTION_REF = re.compile(r"\b(docs/[\w./-]+\.md),\s+[\"']([^\"']{3,80})[\"']")


def _pages() -> list[Path]:
    pages = [
        ROOT / "README.md",
        ROOT / "bench" / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
    ]
    pages.append(ROOT / "clients" / "python" / "README.md")
    return pages


def _tracked() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", "*.json", "*.toml", "*.yml", "*.sh", "engram"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    here = Path(__file__).resolve()  # its own examples are not references
    return [ROOT / name for name in listed if (ROOT / name).is_file() and ROOT / name != here]


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def _anchors(page: Path) -> set[str]:
    return {
        _slug(line.lstrip("#"))
        for line in page.read_text().splitlines()
        if re.match(r"^#{1,6} ", line)
    }


@cache
def _titles(page: Path) -> str:
    """The page's headings and bold paragraph titles, lower-cased and on one line each."""
    text = page.read_text()
    found = [line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")]
    found += re.findall(r"\*\*([^*]+)\*\*", text)
    return "\n".join(" ".join(title.lower().split()) for title in found)


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in _pages():
        for target in LINK.findall(page.read_text()):
            if re.match(r"^(https?|mailto):", target) or target.startswith("<"):
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)} -> {target}"
            if not resolved.exists():
                broken.append(f"{where}: no such file")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{where}: no such heading")
    assert broken == [], "\n".join(broken)


def test_every_docs_path_named_anywhere_exists() -> None:
    missing = sorted(
        {
            f"{source.relative_to(ROOT)}: {ref}"
            for source in _tracked()
            for ref in DOC_REF.findall(source.read_text(errors="replace"))
            if not (ROOT / ref).is_file()
        }
    )
    assert missing == [], "\n".join(missing)


def test_the_sections_named_after_a_memory_page_exist() -> None:
    """References into the memory pages name a section that is there (they were one page)."""
    unknown = []
    for source in _tracked():
        text = source.read_text(errors="replace")
        for ref, section in SECTION_REF.findall(text):
            if not ref.startswith("docs/memory/") or not (ROOT / ref).is_file():
                continue
            wanted = " ".join(section.replace("#", " ").lower().split()).rstrip(".")
            if wanted not in _titles(ROOT / ref):
                unknown.append(f"{source.relative_to(ROOT)}: {ref}, {section!r}")
    assert unknown == [], "\n".join(unknown)
