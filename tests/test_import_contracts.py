"""The import contracts of pyproject.toml (``[tool.importlinter]``) hold: no app but rag imports
rag's models, and other apps reach the knowledge graph only through ``rag.graph.selectors`` and
``rag.graph.services`` (docs/architecture.md). CI runs ``lint-imports`` too; this test makes
``./engram test`` catch a broken contract as well."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return list(config["tool"]["importlinter"]["contracts"])


def test_the_contracts_forbid_rags_models_and_graph_internals_to_the_other_apps() -> None:
    forbidden = {
        module: set(contract["source_modules"])  # type: ignore[call-overload]
        for contract in _contracts()
        for module in contract["forbidden_modules"]  # type: ignore[attr-defined]
    }
    apps = {"core", "content", "skills", "memory"}
    for module in ("rag.models", "rag.graph.models", "rag.graph.nodes", "rag.graph.walks"):
        assert forbidden.get(module) == apps, module


def test_the_import_contracts_hold() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint_imports), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout
