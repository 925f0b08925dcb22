"""Fixtures of the browser tests: one Chromium for the run of browser tests, a fresh context
per page.

- `chromium`: the system's Chromium ($MNEMODB_CHROMIUM, else /usr/bin/chromium), launched
  through Playwright's sync API; never a downloaded browser. A machine without it fails
  the tests: the full run (`scripts/test`) installs it. It lives as long as this package's
  tests run one after another in a process (a whole session, unless a worker is given
  other tests between them): while Playwright's sync API is started, an asyncio loop
  counts as running in the main thread, and the suite's other tests, which run their own
  loops there, could not.
- `watch`: what the test's browser contexts did that they must not (`harness.Watch`);
  checked when the test ends.
- `open_page`: a new page in a new context whose every request is routed: one for anywhere
  but 127.0.0.1 is refused and fails the test, as do console errors, uncaught exceptions,
  server errors and Content-Security-Policy violations. `page` is one such page.

Each module starts its own servers (`harness.serve_inspector`), shared by its tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, expect, sync_playwright

from browser.harness import CHROMIUM_ARGS, CHROMIUM_ENV, TIMEOUT_MS, Watch, chromium_path


@pytest.fixture(scope="package")
def playwright_driver() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="package")
def chromium(playwright_driver: Playwright) -> Iterator[Browser]:
    executable = chromium_path()
    if not Path(executable).is_file():
        pytest.fail(
            f"no Chromium at {executable}: the browser tests drive the system's Chromium. Install it "
            f"(apt-get install --no-install-recommends chromium; scripts/test does, as root) or name "
            f"another with ${CHROMIUM_ENV}.",
            pytrace=False,
        )
    browser = playwright_driver.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
    expect.set_options(timeout=TIMEOUT_MS)
    yield browser
    browser.close()


@pytest.fixture
def watch() -> Watch:
    return Watch()


@pytest.fixture
def open_page(chromium: Browser, watch: Watch) -> Iterator[Callable[[], Page]]:
    contexts: list[BrowserContext] = []

    def new_page() -> Page:
        context = chromium.new_context(
            viewport={"width": 1280, "height": 800},
            locale="en-US",
            timezone_id="UTC",
            reduced_motion="reduce",
        )
        context.set_default_timeout(TIMEOUT_MS)
        watch.attach(context)
        contexts.append(context)
        return context.new_page()

    yield new_page
    for context in contexts:
        context.close()
    problems = watch.problems()
    assert not problems, "the browser saw:\n" + "\n".join(problems)


@pytest.fixture
def page(open_page: Callable[[], Page]) -> Page:
    return open_page()
