"""Driving the console in a real browser: Debian's chromium, headless, through Debian's
chromedriver with selenium (the ``dev`` extra). Nothing is downloaded: the driver and the
browser are the system's, named by path, so Selenium Manager never runs.

The console is served by uvicorn inside the test's own event loop, because the database
connection it reads belongs to that loop. Selenium's calls block, so :class:`Browser` runs each
one in a thread (``asyncio.to_thread``) and the server keeps serving meanwhile.

Nothing here waits for a fixed time: every wait is for something on the page, with a deadline
(:data:`WAIT_SECONDS`) far beyond what a working console needs on a busy machine.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.waiting import until

HAS_SELENIUM = importlib.util.find_spec("selenium") is not None
if HAS_SELENIUM:
    from selenium import webdriver
    from selenium.common.exceptions import (
        NoAlertPresentException,
        StaleElementReferenceException,
    )
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.support.ui import WebDriverWait

__all__ = ["Browser", "browser_missing", "console_in_browser", "screenshot"]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WAIT_SECONDS = 30.0
WINDOW = (1280, 900)
#: Headless, and quiet on a machine without a network: no sandbox (tests may run as root), no
#: GPU, no QUIC, and none of the background fetches (updates, sync, first-run pages).
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    f"--window-size={WINDOW[0]},{WINDOW[1]}",
)


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (``None``: they can)."""
    reasons = []
    absent = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not _executable(path)]
    if absent:
        reasons.append(
            f"{' and '.join(absent)} missing: install Debian's chromium and its driver "
            "(`apt-get install chromium chromium-driver`)"
        )
        if os.environ.get("CI") == "true":
            reasons[-1] += "; .ci/run installs them only as root with apt-get, and could not here"
    if not HAS_SELENIUM:
        reasons.append("the selenium package is missing: pip install -e '.[dev]'")
    return "browser test: " + "; ".join(reasons) if reasons else None


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def start_chromium(profile: Path, log: Path | None = None) -> WebDriver:
    """Headless chromium with a fresh profile in ``profile`` (blocking); chromedriver's log
    goes to ``log`` when given."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    service = Service(str(CHROMEDRIVER), log_output=str(log) if log else None)
    driver = webdriver.Chrome(options=options, service=service)
    # The page itself WINDOW big, at one pixel per CSS pixel: headless chromium takes room
    # for its (invisible) toolbars out of --window-size.
    width, height = WINDOW
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    return driver


def screenshot(driver: WebDriver, path: str | Path) -> Path:
    """Save what the browser shows as a PNG at ``path`` (its folder is made); returns it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not driver.save_screenshot(str(path)):
        raise RuntimeError(f"chromium did not save a screenshot to {path}")
    return path


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """Serve the ASGI ``app`` with uvicorn on 127.0.0.1 and a free port, in this event loop;
    yields its base URL once it accepts connections, stops it after."""
    import uvicorn

    listener = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        await until(lambda: server.started or task.done(), "the console to serve")
        if task.done():
            task.result()  # its error, if it failed to start
            raise RuntimeError("the console's server stopped before serving")
        host, port = listener.getsockname()[:2]
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        await task
        listener.close()


class Browser:
    """A headless chromium on the console at ``base``, each call in a thread. Loading a page
    (:meth:`open`) waits for it to load; a click does not, so :meth:`sign_in`,
    :meth:`sign_out` and :meth:`heading` wait for the page that follows."""

    def __init__(self, driver: WebDriver, base: str) -> None:
        self.driver = driver
        self.base = base

    async def _run(self, call: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(call, *args)

    async def _until(self, condition: Callable[[WebDriver], Any], what: str) -> Any:
        wait = WebDriverWait(
            self.driver,
            WAIT_SECONDS,
            poll_frequency=0.05,
            ignored_exceptions=(StaleElementReferenceException,),
        )
        return await self._run(wait.until, condition, f"still waiting for {what}")

    async def path(self) -> str:
        """The path of the page shown (``/login``), with its query."""
        url = await self._run(lambda: self.driver.current_url)
        return url[len(self.base) :] if url.startswith(self.base) else url

    async def open(self, path: str) -> None:
        """Load ``path`` (a redirect may land elsewhere: see :meth:`path`)."""
        await self._run(self.driver.get, self.base + path)

    async def heading(self, text: str) -> None:
        """Wait for the page whose ``h2`` says ``text``."""
        await self._until(
            lambda d: any(h.text == text for h in d.find_elements(By.TAG_NAME, "h2")),
            f"a page headed {text!r}",
        )

    async def text(self) -> str:
        """The text the page shows (``body``), as a reader sees it."""
        return await self._run(lambda: self.driver.find_element(By.TAG_NAME, "body").text)

    async def texts(self, css: str) -> list[str]:
        """The text of each element matching the CSS selector ``css``, in document order."""
        return await self._run(
            lambda: [e.text for e in self.driver.find_elements(By.CSS_SELECTOR, css)]
        )

    async def source(self) -> str:
        """The document as the browser holds it now (serialised DOM)."""
        return await self._run(lambda: self.driver.page_source)

    async def follow(self, link_text: str) -> None:
        """Click the link whose text is ``link_text`` (then wait for its page: :meth:`heading`)."""
        await self._run(lambda: self.driver.find_element(By.LINK_TEXT, link_text).click())

    async def count(self, css: str) -> int:
        """How many elements of the document match the CSS selector ``css``."""
        return len(await self._run(self.driver.find_elements, By.CSS_SELECTOR, css))

    async def alert_open(self) -> bool:
        """Whether a JavaScript dialog (``alert``) is open."""

        def check() -> bool:
            try:
                self.driver.switch_to.alert  # noqa: B018  (raises when there is none)
            except NoAlertPresentException:
                return False
            return True

        return await self._run(check)

    async def sign_in(self, secret: str) -> None:
        """Type ``secret`` into the sign-in form and submit it; waits for the page after."""
        await self.open("/login")
        await self.heading("Sign in")

        def submit() -> None:
            field = self.driver.find_element(By.CSS_SELECTOR, 'main input[type="password"]')
            field.send_keys(secret)
            self.driver.find_element(By.CSS_SELECTOR, 'main button[type="submit"]').click()

        await self._run(submit)
        await self._until(
            lambda d: (
                not d.current_url.endswith("/login")
                or d.find_elements(By.CSS_SELECTOR, '[role="alert"]')
            ),
            "the page after signing in",
        )

    async def sign_out(self) -> None:
        """Press the header's "Sign out" button; waits for the sign-in page."""
        await self._run(
            lambda: self.driver.find_element(
                By.CSS_SELECTOR, 'header button[type="submit"]'
            ).click()
        )
        await self.heading("Sign in")


@asynccontextmanager
async def console_in_browser(app: Any, tmp_path: Path) -> AsyncIterator[Browser]:
    """The console ``app`` served here and a headless chromium on it (profile and
    chromedriver's log in ``tmp_path``); both stopped after."""
    profile = tmp_path / "chromium-profile"
    async with serving(app) as base:
        driver = await asyncio.to_thread(start_chromium, profile, tmp_path / "chromedriver.log")
        try:
            yield Browser(driver, base)
        finally:
            await asyncio.to_thread(driver.quit)
            shutil.rmtree(profile, ignore_errors=True)
