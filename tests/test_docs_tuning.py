"""docs/tuning.md against the tuning registry (``core.tuning``): every tunable is listed with its
default, nothing listed is missing from the registry, and the table is what ``tuning_docs
--write`` makes. Also the registry's own rules: names and types are checked, overrides put the
defaults back, and the live view sees them."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from config.env import BASE_DIR
from core import tuning

ROW = re.compile(r"^\| `([a-z_]+(?:\.[a-z_0-9]+)+)` \| `([^`]*)` \|", re.MULTILINE)


def _listed() -> dict[str, str]:
    return dict(ROW.findall((BASE_DIR / "docs" / "tuning.md").read_text()))


def test_every_tunable_is_listed_with_its_default_and_nothing_else() -> None:
    registry = {item.name: repr(item.default) for item in tuning.tunables()}
    listed = _listed()
    assert sorted(set(registry) - set(listed)) == [], "missing from docs/tuning.md"
    assert sorted(set(listed) - set(registry)) == [], "listed in docs/tuning.md, not registered"
    assert {name: listed[name] for name in registry} == registry


def test_the_table_is_up_to_date() -> None:
    call_command("tuning_docs", "--check")


def test_each_app_has_its_home_and_every_tunable_says_why() -> None:
    items = tuning.tunables()
    assert {item.name.split(".")[0] for item in items} >= {"rag", "memory", "skills", "content"}
    assert all(item.meaning.strip() and item.bench.strip() for item in items)


def test_the_architecture_links_the_tunables() -> None:
    assert "tuning.md" in (BASE_DIR / "docs" / "architecture.md").read_text()


def test_an_override_is_seen_by_the_code_and_undone() -> None:
    from rag.tuning import TUNING

    assert TUNING.fusion.rrf_k == 60
    with tuning.override({"rag.fusion.rrf_k": 30, "rag.spaces.chunks.graph_weight": 1}):
        assert TUNING.fusion.rrf_k == 30 == tuning.get("rag.fusion.rrf_k")
        assert TUNING.spaces.chunks.graph_weight == 1.0
        assert isinstance(TUNING.spaces.chunks.graph_weight, float)
        assert TUNING.spaces.graph_nodes.graph_weight == 0.3  # its sibling untouched
    assert TUNING.fusion.rrf_k == 60 and TUNING.spaces.chunks.graph_weight == 0.1


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("rag.fusion.nope", 1, "has no 'nope'"),
        ("nowhere.at_all", 1, "unknown tunable"),
        ("rag.fusion", 1, "a group of tunables"),
        ("rag.fusion.rrf_k", "sixty", "takes int"),
        ("rag.fusion.rrf_k", True, "takes int"),
        ("rag.agentic.chain_mode", "walk", "one of 'hybrid', 'graph'"),
        ("rag.hops.walk_max", 3, "read once at import"),
    ],
)
def test_a_wrong_name_or_value_is_refused_and_nothing_changes(name, value, says) -> None:
    with (
        pytest.raises(tuning.TuningError, match=re.escape(says)),
        tuning.override({"rag.fusion.rrf_k": 30, name: value}),
    ):
        pass  # pragma: no cover
    assert tuning.get("rag.fusion.rrf_k") == 60


def test_a_stale_table_fails_the_check(tmp_path, settings) -> None:
    (tmp_path / "docs").mkdir()
    text = (BASE_DIR / "docs" / "tuning.md").read_text()
    (tmp_path / "docs" / "tuning.md").write_text(text.replace("`rag.fusion.rrf_k`", "`x`"))
    settings.BASE_DIR = tmp_path
    with pytest.raises(CommandError, match="Out of date"):
        call_command("tuning_docs", "--check")
