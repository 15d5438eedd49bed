"""Package faces whose names load on first use.

A face (a package's ``__init__.py``) names classes from modules that are slow to import or need
an optional SDK. It imports them under ``if TYPE_CHECKING:``, which is where type checkers and
readers look, lists every public name in a literal ``__all__``, and ends with

>>> __getattr__, __dir__ = lazy_names(__name__, __all__)  # doctest: +SKIP

:func:`lazy_names` reads the face's own ``TYPE_CHECKING`` imports as the table of which module
holds each name, so the face names each module once. A name is imported the first time it is
read and kept on the package, so the next read is a plain attribute.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path
from typing import Any

__all__ = ["lazy_names", "type_checking_imports"]


def type_checking_imports(source: str, package: str) -> dict[str, str]:
    """``name -> module`` for every ``from MODULE import NAME`` directly under an
    ``if TYPE_CHECKING:`` of ``source`` (relative modules resolved against ``package``)."""
    table: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and _is_type_checking(node.test)):
            continue
        for statement in node.body:
            if not isinstance(statement, ast.ImportFrom):
                raise ValueError(f"{package}: only `from M import N` belongs under TYPE_CHECKING")
            module = statement.module or ""
            if statement.level:
                base = package.rsplit(".", statement.level - 1)[0]
                module = f"{base}.{module}" if module else base
            for alias in statement.names:
                table[alias.asname or alias.name] = module
    return table


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def lazy_names(
    package: str, names: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the face ``package``: each name of ``names`` that
    the face does not define itself loads, on first use, from the module its
    ``TYPE_CHECKING`` import names. A name with neither is an error here, at import."""
    module = sys.modules[package]
    table = type_checking_imports(Path(module.__file__ or "").read_text("utf-8"), package)
    public = set(names)
    missing = sorted(public - set(table) - set(vars(module)))
    if missing:
        raise ImportError(
            f"{package} lists {missing} in __all__ but neither defines nor imports them"
        )
    extra = sorted(set(table) - public)
    if extra:
        raise ImportError(f"{package} imports {extra} under TYPE_CHECKING but not in __all__")

    def __getattr__(name: str) -> Any:
        where = table.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(where), name)
        setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(module)) | public)

    return __getattr__, __dir__
