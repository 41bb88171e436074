"""The benchmark evidence points at what exists (no database): every script in bench/ is described
in bench/README.md, every row of docs/benchmarks.md has a figure, a target, a command that names
an existing script or management command, and a date, and the links and row names the two
documents use resolve."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
README = BENCH / "README.md"
BENCHMARKS = ROOT / "docs" / "benchmarks.md"
LOG = ROOT / "docs" / "benchmarks-log.md"

SCRIPT_PATH = re.compile(r"\bbench/[\w/]+\.py\b")
MANAGE = re.compile(r"(?:\./engram manage|manage\.py) (\w+)")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
LOG_LINK = re.compile(r"\(benchmarks-log\.md#([\w-]+)\)")
QUOTED = re.compile(r'"([^"]+)"')


def _scripts() -> list[Path]:
    return sorted(p for p in BENCH.rglob("*.py") if p.name != "__init__.py")


def _cells(line: str) -> list[str]:
    """A Markdown table row's cells; ``\\|`` inside a cell is not a separator."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


@cache
def _rows() -> list[tuple[int, list[str], bool]]:
    """docs/benchmarks.md's capability rows: (line number, cells, first row of its table)."""
    rows = []
    first = True
    for number, line in enumerate(BENCHMARKS.read_text().splitlines(), 1):
        if not line.startswith("|"):
            first = True
            continue
        cells = _cells(line)
        if cells[0] == "capability" or set(cells[0]) <= {"-"}:
            continue
        rows.append((number, cells, first))
        first = False
    return rows


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def _log_headings() -> list[str]:
    """The log's section titles, each also without its leading date (``2026-11-27 evening: ``)."""
    found = []
    for line in LOG.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip()
            found.append(title)
            found.append(re.sub(r"^20\d\d-\d\d-\d\d[^:]*: ", "", title))
    return found


def _management_commands() -> set[str]:
    return {
        p.stem
        for app in ("core", "rag", "memory", "skills", "content")
        for p in (ROOT / app).glob("management/commands/*.py")
        if p.name != "__init__.py"
    }


def test_every_bench_script_is_in_the_readme() -> None:
    readme = README.read_text()
    missing = [
        str(p.relative_to(BENCH))
        for p in _scripts()
        if f"`{p.relative_to(BENCH).as_posix()}`" not in readme
    ]
    assert _scripts(), "bench/ has no scripts"
    assert not missing, f"bench/README.md does not describe: {missing}"


def test_the_scripts_are_grouped_by_app() -> None:
    loose = [p.name for p in BENCH.glob("*.py") if p.name not in {"__init__.py", "_setup.py"}]
    assert not loose, f"scripts at bench/'s top level, not in an app's folder: {loose}"


def test_every_script_path_the_documents_name_exists() -> None:
    named: dict[str, list[str]] = {}
    sources = [BENCHMARKS, LOG, README, ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    sources += _scripts()
    for source in dict.fromkeys(sources):
        for path in SCRIPT_PATH.findall(source.read_text()):
            named.setdefault(path, []).append(str(source.relative_to(ROOT)))
    gone = {path: where for path, where in named.items() if not (ROOT / path).is_file()}
    assert named
    assert not gone, f"paths to scripts that do not exist: {gone}"


def test_every_row_has_a_figure_a_target_a_command_and_a_date() -> None:
    commands = _management_commands()
    problems = []
    assert len(_rows()) >= 40
    for number, cells, first in _rows():
        if len(cells) != 5:
            problems.append(f"line {number}: {len(cells)} cells, not 5")
            continue
        _, figure, target, command, measured = cells
        if not figure or not target:
            problems.append(f"line {number}: no figure or no target")
        if not DATE.search(measured):
            problems.append(f"line {number}: no date in {measured!r}")
        scripts = SCRIPT_PATH.findall(command)
        managed = MANAGE.findall(command)
        gone = [s for s in scripts if not (ROOT / s).is_file()]
        problems += [f"line {number}: {s} does not exist" for s in gone]
        problems += [f"line {number}: no command {m}" for m in managed if m not in commands]
        same = command.startswith("the same") and not first
        if not (scripts or managed or same or command.startswith("no script")):
            problems.append(f"line {number}: no command in {command!r}")
    assert not problems, "\n".join(problems)


def test_the_links_into_the_log_resolve() -> None:
    anchors = {_slug(h) for h in _log_headings()}
    links = LOG_LINK.findall(BENCHMARKS.read_text())
    assert links
    assert not [a for a in links if a not in anchors]


def test_the_rows_the_readme_says_a_script_feeds_exist() -> None:
    capabilities = [cells[0] for _, cells, _ in _rows()]
    headings = _log_headings()
    unknown = []
    for line in README.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        for name in QUOTED.findall(_cells(line)[-1]):
            name = name.removesuffix(" ...")
            if not any(c.startswith(name) for c in capabilities + headings):
                unknown.append(name)
    assert not unknown, f"bench/README.md feeds rows that docs/benchmarks.md lacks: {unknown}"
