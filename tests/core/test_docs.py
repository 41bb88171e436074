from pathlib import Path

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
