"""JSON bodies as RFC 8259 defines them: what the feedback API reads a request body with.

Python's ``json`` (which FastAPI reads bodies with) also takes ``NaN``, ``Infinity`` and
``-Infinity``, turns ``1e400`` into infinity and keeps an unpaired surrogate (``"\\ud800"``)
as a ``str`` no encoder can write. None of them is JSON that another program would send, and
each made a 500: the 422 that lists the problems repeats the value, and neither non-finite
numbers nor lone surrogates can be written back as JSON or UTF-8 (nor stored as BSON).
:class:`StrictJsonRoute` refuses them while the body is read, with a 400 and one line that
names the problem, never the value.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute

__all__ = ["MAX_DEPTH", "NOT_JSON", "StrictJsonRoute", "loads"]

#: The 400's detail starts with this; the rest says which rule the body broke.
NOT_JSON = "the body is not JSON the API can read"
#: Deeper arrays and objects are refused: the API's bodies are flat, and a 422 that repeats a
#: value nested about a thousand deep cannot be written (a RecursionError, a 500).
MAX_DEPTH = 32
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Refused(HTTPException):
    def __init__(self, why: str) -> None:
        super().__init__(400, f"{NOT_JSON}: {why}")


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused("a number is beyond the range of a 64-bit float")
    return value


def loads(body: bytes) -> Any:
    """``body`` read as JSON, or an HTTPException (400) for ``NaN``, ``Infinity``, a number
    beyond a float's range, an unpaired surrogate or nesting deeper than :data:`MAX_DEPTH`.
    Bytes that are not text in the encoding
    JSON's first bytes name raise :class:`UnicodeDecodeError`, and malformed JSON
    :class:`json.JSONDecodeError`, which FastAPI answers as it does for any body."""
    # json.loads(bytes) decodes with "surrogatepass", which lets an encoded surrogate through.
    text = body.decode(json.detect_encoding(body))
    value = json.loads(text, parse_constant=_constant, parse_float=_finite)
    # Decoded strictly, the text holds no surrogate; one in the value came from a \u escape
    # that no other escape completed to a pair.
    pending = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise _Refused("a \\u escape is an unpaired surrogate, which is not text")
        elif isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                raise _Refused(f"arrays and objects are nested deeper than {MAX_DEPTH} levels")
            inside = [*item, *item.values()] if isinstance(item, dict) else item
            pending.extend((part, depth + 1) for part in inside)
    return value


class _StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = loads(await self.body())
        return self._json


class StrictJsonRoute(APIRoute):
    """A route whose JSON body is read with :func:`loads` (FastAPI's documented way to
    change how a route reads its request: its own ``Request`` class)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(_StrictJsonRequest(request.scope, request.receive))

        return strict
