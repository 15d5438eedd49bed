"""Package faces whose names load on first use.

A face (a package's ``__init__.py``) names classes from modules that are slow to import or need
an optional SDK. It imports them under ``if TYPE_CHECKING:``, which is where type checkers and
readers look, lists every public name in a literal ``__all__``, and ends with

>>> __getattr__, __dir__ = lazy_names(__name__, __all__)  # doctest: +SKIP

:func:`lazy_names` takes the face's own imports as the table of which module holds each name,
so the face names each module once. It reads them from the face's compiled code, not its
source, so a face imports the same from a zip or an install without ``.py`` files. A name is
imported the first time it is read and kept on the package, so the next read is a plain
attribute.
"""

from __future__ import annotations

import dis
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from types import CodeType
from typing import Any

__all__ = ["face_imports", "lazy_names"]


def face_imports(code: CodeType) -> dict[str, tuple[str, str]]:
    """``bound name -> (module, name in it)`` for every ``from MODULE import NAME [as BOUND]``
    the module-level ``code`` runs or skips (those under ``if TYPE_CHECKING:`` included).
    Faces use absolute imports; a relative one is refused."""
    table: dict[str, tuple[str, str]] = {}
    recent: list[dis.Instruction] = []
    module = attribute = ""
    for instruction in dis.get_instructions(code):
        if instruction.opname == "IMPORT_NAME":
            # The level is the constant loaded two steps before (then the names, then this).
            level = recent[-2].argval if len(recent) >= 2 else 0
            if isinstance(level, int) and level > 0:
                raise ValueError(f"a package face imports {instruction.argval!r} relatively")
            module = instruction.argval
        elif instruction.opname == "IMPORT_FROM":
            attribute = instruction.argval
        elif instruction.opname in ("STORE_NAME", "STORE_GLOBAL") and attribute:
            table[instruction.argval] = (module, attribute)
            attribute = ""
        recent = [*recent[-1:], instruction]
    return table


def lazy_names(
    package: str, names: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the face ``package``: each name of ``names`` that
    the face does not define itself loads, on first use, from the module its import names.
    A name with neither, or an import under TYPE_CHECKING missing from ``names``, is an
    :class:`ImportError` here, at import."""
    module = sys.modules[package]
    spec = module.__spec__
    code = spec.loader.get_code(package) if spec is not None and spec.loader else None
    if code is None:
        raise ImportError(f"the code of {package} cannot be read to find its lazy names")
    table = face_imports(code)
    public = set(names)
    defined = set(vars(module))
    missing = sorted(public - set(table) - defined)
    if missing:
        raise ImportError(
            f"{package} lists {missing} in __all__ but neither defines nor imports them"
        )
    unlisted = sorted(set(table) - public - defined)
    if unlisted:
        raise ImportError(f"{package} imports {unlisted} under TYPE_CHECKING but not in __all__")

    def __getattr__(name: str) -> Any:
        where = table.get(name) if name in public else None
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(where[0]), where[1])
        setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(module)) | public)

    return __getattr__, __dir__
