"""Fixtures of the browser tests (a fixture module, registered in tests/conftest.py): Playwright
drives Debian's Chromium against pytest-django's live server.

One browser for the whole session (pytest-playwright's `browser`); each test gets fresh contexts.
The launch and context arguments below override pytest-playwright's session fixtures of the same
names (a plugin registered after it wins, as a conftest would). Screenshots go to test-artifacts/
(git-ignored) so people can look at the pages.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from tests.support.browser import ARTIFACTS, CHROMIUM


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    if not Path(CHROMIUM).exists():
        # Fail, not skip: a suite that silently drops its browser tests looks green for nothing.
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does it)")
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
        ],
    }  # fmt: skip


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, "viewport": {"width": 1440, "height": 900}}


@pytest.fixture
def login(live_server) -> Callable:
    """Put a logged-in session cookie for `user` into a browser context (no login form)."""

    def log_in(context, user) -> None:
        client = Client()
        client.force_login(user)
        session = client.cookies[settings.SESSION_COOKIE_NAME].value
        context.add_cookies(
            [{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": live_server.url}]
        )

    return log_in


@pytest.fixture
def shot() -> Callable:
    ARTIFACTS.mkdir(exist_ok=True)

    def take(page, name: str, *, full_page: bool = False) -> Path:
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        return path

    return take


@pytest.fixture
def console_errors() -> Callable:
    """Collect page errors and console errors of a page, to assert none happened."""

    def watch(page) -> list[str]:
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        return errors

    return watch
