"""The browser suite: Playwright driving Debian's Chromium against a live server and a real worker.

Skipped with the reason when Chromium or the services are missing, unless REQUIRE_BROWSER=1 (and
REQUIRE_SERVICES=1), as .ci/run sets, which turns that into a failure.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.services import flush_redis, services_problem, worker  # noqa: F401  (fixtures)

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

REQUIRE_BROWSER = os.environ.get("REQUIRE_BROWSER") == "1"
REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
OUTPUT = Path(os.environ.get("E2E_OUTPUT_DIR", Path(__file__).resolve().parents[2] / "test-output" / "e2e"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


def _browser_problem() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -r requirements-dev.txt)"
    return None


@pytest.fixture(scope="session", autouse=True)
def _require_browser_and_services() -> None:
    problem = _browser_problem()
    if problem is not None:
        if REQUIRE_BROWSER:
            pytest.fail(f"REQUIRE_BROWSER=1 but {problem}", pytrace=False)
        pytest.skip(problem)
    problem = services_problem()
    if problem is not None:
        if REQUIRE_SERVICES or REQUIRE_BROWSER:
            pytest.fail(f"the browser suite needs the real services but {problem}", pytrace=False)
        pytest.skip(problem)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class Shots:
    """Numbered screenshots of each step under test-output/e2e/<test name>/."""

    def __init__(self, page: Any, folder: Path):
        self.page = page
        self.folder = folder
        self.count = 0

    def __call__(self, step: str) -> Path:
        self.count += 1
        path = self.folder / f"{self.count:02d}-{re.sub(r'[^a-z0-9]+', '-', step.lower()).strip('-')}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def shot(page: Any, request: pytest.FixtureRequest) -> Shots:
    folder = OUTPUT / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return Shots(page, folder)


def login(page: Any, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(re.compile(r".*/admin/$"))
