"""A person at the admin in a real browser, shared by the browser tests."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.urls import reverse


def screenshot(driver: Any, name: str) -> Path:
    """Save what the browser shows as ``name``.png in ``ENGRAM_SCREENSHOT_DIR`` (default /tmp):
    docs/screenshots.sh points it at docs/images/ to regenerate the admin guide's pictures."""
    folder = Path(os.environ.get("ENGRAM_SCREENSHOT_DIR", "/tmp"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


# Set on the page before an action that navigates; the answer's page does not have it.
_LEAVING = "window.__engramLeaving = true;"
_ARRIVED = "return document.readyState === 'complete' && !window.__engramLeaving;"


class AdminBrowser:
    """A person at the admin: opens pages, signs in, and after each action that navigates waits
    until the answer's page has replaced this one and finished loading.

    The wait asks the new document itself, not whether an element of the old one went stale:
    chromedriver can answer a staleness probe that races the navigation with an "unknown error"
    (Node with given id does not belong to the document), which failed a CI run.
    """

    def __init__(self, driver: Any, base_url: str, timeout: float = 60) -> None:
        self.driver = driver
        self.base_url = base_url
        self.timeout = timeout

    def go(self, path: str) -> None:
        self.driver.get(f"{self.base_url}{path}")

    def find(self, by: str, value: str) -> Any:
        return self.driver.find_element(by, value)

    def navigate_by(self, action: Callable[[], object]) -> None:
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver.execute_script(_LEAVING)
        action()

        def arrived(driver: Any) -> bool:
            try:
                return bool(driver.execute_script(_ARRIVED))
            except WebDriverException:  # the navigation is under way
                return False

        WebDriverWait(self.driver, self.timeout).until(arrived)

    def submit(self, element: Any) -> None:
        self.navigate_by(element.click)

    def sign_in(self, username: str, password: str) -> None:
        from selenium.webdriver.common.by import By

        self.driver.delete_all_cookies()
        self.go(reverse("admin:login"))
        self.find(By.ID, "id_username").send_keys(username)
        self.find(By.ID, "id_password").send_keys(password)
        self.submit(self.find(By.CSS_SELECTOR, "input[type=submit]"))
        assert "Engram administration" in self.driver.title, self.driver.page_source[:2000]

    def messages(self) -> list[str]:
        from selenium.webdriver.common.by import By

        return [e.text for e in self.driver.find_elements(By.CSS_SELECTOR, ".messagelist li")]
