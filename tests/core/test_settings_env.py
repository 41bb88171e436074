from __future__ import annotations

import pytest

from config.env import EngramEnv, load_env


def test_defaults_are_the_embedded_offline_setup(monkeypatch) -> None:
    for name in ("DATABASE_URL", "REDIS_URL", "EMBEDDING_PROVIDER", "LLM_PROVIDER", "ENGRAM_ENV"):
        monkeypatch.delenv(name, raising=False)
    env = EngramEnv()
    assert env.DATABASE_URL is None and env.REDIS_URL is None
    assert env.EMBEDDING_PROVIDER == "local" and env.EMBEDDING_DIMENSIONS == 384
    assert env.LLM_PROVIDER == "offline"


def test_invalid_values_stop_start_up_naming_the_variable(monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_PORT", "eighty")
    with pytest.raises(SystemExit) as exc:
        load_env()
    assert "ENGRAM_PORT" in str(exc.value)


def test_production_has_no_secret_defaults(monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_ENV", "production")
    for name in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit) as exc:
        load_env()
    assert "SECRET_KEY" in str(exc.value) and "DATABASE_URL" in str(exc.value)


def test_openai_providers_need_a_base_url(monkeypatch) -> None:
    monkeypatch.setenv("LLM_PROVIDER", "openai")
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    with pytest.raises(SystemExit) as exc:
        load_env()
    assert "LLM_BASE_URL" in str(exc.value)


def test_lists_are_comma_separated(monkeypatch) -> None:
    monkeypatch.setenv("ALLOWED_HOSTS", "engram.example.com, .internal")
    assert EngramEnv().ALLOWED_HOSTS == ["engram.example.com", ".internal"]


def test_generated_secret_key_is_stable_per_data_dir(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    first = EngramEnv().secret_key()
    assert len(first) > 40
    assert EngramEnv().secret_key() == first
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0


def test_production_entry_points_never_start_embedded_servers(monkeypatch, tmp_path) -> None:
    from config.embedded import ensure_environment

    monkeypatch.setenv("ENGRAM_ENV", "production")
    monkeypatch.setenv("SECRET_KEY", "x" * 50)
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/0")
    with pytest.raises(SystemExit) as exc:
        ensure_environment()
    assert "DATABASE_URL" in str(exc.value)
    assert not (tmp_path / "postgres").exists()


@pytest.mark.slow
def test_gunicorn_stops_on_a_configuration_error_instead_of_looping(tmp_path) -> None:
    """Production without its settings: the workers cannot boot, and the master stops."""
    import os
    import subprocess
    import sys

    from config.env import BASE_DIR

    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DJANGO_SETTINGS_MODULE"}}
    env.update(ENGRAM_ENV="production", DATABASE_URL="", REDIS_URL="")
    started = subprocess.run(
        [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", "127.0.0.1:0"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode != 0
    assert "production requires" in started.stderr
