"""A real Chromium (headless) driven through its matching chromedriver, both Debian packages
that ``./engram test`` installs when it can. Never downloads a browser."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.actors import Actor, actor_for_agent
from core.models import Account
from tests.e2e.admin_browser import AdminBrowser
from tests.factories import AccountFactory, AgentFactory

# Headless in a container: no sandbox, GPU, QUIC or background traffic, a fresh profile.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
]


def _first(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    binary = _first("chromium", "chromium-browser")
    driver = _first("chromedriver")
    if binary is None or driver is None:
        pytest.skip(
            "Chromium or chromedriver is not installed, and ./engram test could not install "
            "them (it needs apt-get as root or passwordless sudo): "
            "apt-get install chromium chromium-driver"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_OFFLINE", "true")  # Selenium Manager never downloads anything
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'profile'}")
    chrome = webdriver.Chrome(
        options=options,
        service=Service(executable_path=driver, log_output=str(tmp_path / "chromedriver.log")),
    )
    chrome.set_page_load_timeout(60)
    try:
        yield chrome
    finally:
        chrome.quit()


@pytest.fixture
def admin(browser: Any, live_server: Any) -> AdminBrowser:
    return AdminBrowser(browser, live_server.url)


@dataclass(frozen=True)
class TwoAccounts:
    """The person's account (Orchard, its agent ``ours``) and the intruder's (Bramble, its
    agent ``theirs``), for browser tests that check one never sees the other."""

    orchard: Account
    bramble: Account
    ours: Actor
    theirs: Actor


@pytest.fixture
def accounts() -> TwoAccounts:
    orchard = AccountFactory.create(name="Orchard", slug="orchard")
    bramble = AccountFactory.create(name="Bramble", slug="bramble")
    return TwoAccounts(
        orchard=orchard,
        bramble=bramble,
        ours=actor_for_agent(AgentFactory.create(account=orchard, name="orchard agent")),
        theirs=actor_for_agent(AgentFactory.create(account=bramble, name="bramble agent")),
    )
