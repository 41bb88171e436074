import re
from pathlib import Path

import yaml

from config.env import BASE_DIR, EngramEnv


def test_every_setting_is_documented() -> None:
    doc = (BASE_DIR / "docs" / "configuration.md").read_text()
    missing = [name for name in EngramEnv.model_fields if f"`{name}`" not in doc]
    assert missing == []


def test_ci_runs_the_readme_test_command() -> None:
    readme = (BASE_DIR / "README.md").read_text()
    commands = [
        line.split("#")[0].strip()
        for line in readme.split("```sh")[1].split("```")[0].splitlines()
        if line.strip()
    ]
    assert commands[:2] == ["./engram run", "./engram test"]
    assert "\n./engram test\n" in Path(BASE_DIR / ".ci" / "run").read_text()


# Settings docker-compose.yml deliberately does not pass to Engram's containers (its comment says
# why): the image fixes the data directory, production refuses DEBUG, ENGRAM_HOST / ENGRAM_PORT,
# CELERY_WORKER_PER_QUEUE and ENGRAM_RESTART_BACKOFF_MAX are ./engram run's (Compose runs a worker
# per queue and restarts containers itself), and eager tasks are for tests.
COMPOSE_NOT_PASSED = {
    "ENGRAM_DATA_DIR",
    "DEBUG",
    "ENGRAM_HOST",
    "ENGRAM_PORT",
    "CELERY_TASK_ALWAYS_EAGER",
    "CELERY_WORKER_PER_QUEUE",
    "ENGRAM_RESTART_BACKOFF_MAX",
}


def test_compose_passes_every_setting_through() -> None:
    compose = yaml.safe_load((BASE_DIR / "docker-compose.yml").read_text())
    passed = set(compose["x-engram-env"])
    missing = set(EngramEnv.model_fields) - COMPOSE_NOT_PASSED - passed
    assert missing == set()
    assert compose["x-engram-env"]["ENGRAM_ENV"] == "production"


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_documentation_links_stay_inside_the_repository() -> None:
    for page in [BASE_DIR / "README.md", *sorted((BASE_DIR / "docs").glob("*.md"))]:
        for target in _LINK.findall(page.read_text()):
            if target.startswith(("http://", "https://", "#")):
                continue
            resolved = (page.parent / target.split("#")[0]).resolve()
            assert resolved.is_relative_to(BASE_DIR), (page.name, target)
            assert resolved.exists(), (page.name, target)


def test_the_readme_lists_every_document() -> None:
    readme = (BASE_DIR / "README.md").read_text()
    documentation = readme.split("## Documentation")[1].split("\n## ")[0]
    for doc in sorted((BASE_DIR / "docs").glob("*.md")):
        assert f"](docs/{doc.name})" in documentation, doc.name
