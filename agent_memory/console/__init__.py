"""The memory console: what the agent remembers, per agent and user, in the browser.

``agent-memory console`` serves it on loopback. Pages are rendered on the server from the
stores' public methods; stored text is escaped everywhere; every state-changing request needs
the session's token and comes from the console's own pages.

>>> app = create_console_app(connection, settings=settings)   # doctest: +SKIP
"""

from __future__ import annotations

from agent_memory.console.app import create_console_app

__all__ = ["create_console_app"]
