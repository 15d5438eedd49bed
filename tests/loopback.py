"""Serving a stub HTTP app (aiohttp) on a free loopback port, for provider stubs in tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web


@asynccontextmanager
async def serve_app(app: web.Application) -> AsyncIterator[str]:
    """Serve ``app`` on 127.0.0.1 and a free port; yields its base URL, stops it after."""
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
