"""Serving HTTP apps on a free loopback port in tests: aiohttp stubs of the providers, and the
feedback API under uvicorn (what a client sees on the wire)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
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


@contextmanager
def serve_asgi(app: Any) -> Iterator[int]:
    """Serve an ASGI ``app`` (such as the feedback API) with uvicorn on 127.0.0.1 and a free
    port, from a thread; yields the port once ``/health`` answers, stops it after."""
    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    else:  # pragma: no cover
        raise RuntimeError("the app did not start within 30 s")
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)
