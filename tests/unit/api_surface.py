"""The public surface as data: every name a face offers, and for every callable the parameters
a caller may pass. ``tests/unit/api_surface.json`` holds the surface of the last release (its ``__version__``);
``tests/unit/test_api_surface.py`` fails when code stops accepting what that release accepted,
unless CHANGELOG.md says so under the new version after a release of deprecation.

    python -m tests.unit.api_surface            # print what changed against the file
    python -m tests.unit.api_surface --write    # at a release: record its surface
"""

from __future__ import annotations

import argparse
import enum
import importlib
import inspect
import json
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = Path(__file__).with_name("api_surface.json")

#: Every package face whose ``__all__`` is public (docs/api.md).
FACES = (
    "agent_memory",
    "agent_memory.api",
    "agent_memory.errors",
    "agent_memory.formation",
    "agent_memory.langgraph",
    "agent_memory.memory",
    "agent_memory.memory.conversation",
    "agent_memory.memory.episodic",
    "agent_memory.memory.knowledge",
    "agent_memory.memory.long_term",
    "agent_memory.memory.working",
    "agent_memory.ops",
    "agent_memory.providers.chat",
    "agent_memory.providers.embedders",
    "agent_memory.providers.rerankers",
)


#: What the file says of a callable that raised for every call in its release (0.1.0's sync
#: methods of the async-only MongoCheckpointer, NotImplementedError): no caller's code can rely
#: on how it was called, so any signature it gains later breaks nobody.
REFUSED = "refused every call"


def _signature(function: Any) -> str | None:
    """The parameters a caller may pass, compactly: ``a`` positional or by name, ``a=`` the
    same with a default, ``/a`` positional only, ``*a`` / ``*a=`` by name only, ``*args``,
    ``**kwargs``. ``None`` when Python cannot tell."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    tokens = []
    for parameter in signature.parameters.values():
        if parameter.name in ("self", "cls"):
            continue
        default = "" if parameter.default is inspect.Parameter.empty else "="
        kind = parameter.kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            tokens.append(f"*{parameter.name}...")
        elif kind is inspect.Parameter.VAR_KEYWORD:
            tokens.append(f"**{parameter.name}")
        elif kind is inspect.Parameter.KEYWORD_ONLY:
            tokens.append(f"*{parameter.name}{default}")
        elif kind is inspect.Parameter.POSITIONAL_ONLY:
            tokens.append(f"/{parameter.name}{default}")
        else:
            tokens.append(f"{parameter.name}{default}")
    return " ".join(tokens)


def _describe(value: Any, where: str, into: dict[str, str | None]) -> None:
    if inspect.isclass(value) and issubclass(value, enum.Enum):
        into[where] = "enum " + " ".join(sorted(member.name for member in value))
        return
    if inspect.isclass(value):
        into[where] = "class"
        into[f"{where}()"] = _signature(value)
        for name in sorted(dir(value)):
            if name.startswith("_"):
                continue
            owner = next((base for base in value.__mro__ if name in vars(base)), None)
            if owner is None or not owner.__module__.startswith("agent_memory"):
                continue  # pydantic's, LangGraph's and the standard library's are not ours
            raw = vars(owner)[name]
            if isinstance(raw, property):
                into[f"{where}.{name}"] = "property"
            elif isinstance(raw, staticmethod | classmethod) or inspect.isfunction(raw):
                into[f"{where}.{name}"] = _signature(getattr(value, name))
            else:
                into[f"{where}.{name}"] = "attribute"
        return
    into[where] = _signature(value) if callable(value) else "value"


def current_surface() -> dict[str, str | None]:
    """``face.Name``, ``face.Name()`` (how it is built) and ``face.Name.member``, each with
    what it is or the parameters it takes. A name a second face re-exports is described once,
    under the first, and listed under the others as an alias."""
    surface: dict[str, str | None] = {}
    seen: dict[int, str] = {}
    for face in FACES:
        module = importlib.import_module(face)
        for name in sorted(module.__all__):
            with warnings.catch_warnings():  # a deprecated name is still on the surface
                warnings.simplefilter("ignore", DeprecationWarning)
                value = getattr(module, name)
            where = f"{face}.{name}"
            first = seen.get(id(value)) if inspect.isclass(value) or callable(value) else None
            if first is not None:
                surface[where] = f"alias {first}"
                continue
            seen[id(value)] = where
            _describe(value, where, surface)
    return surface


def _parse(signature: str) -> list[tuple[str, str, bool]]:
    """``(name, how, has_default)`` per token; how is one of positional, either, keyword,
    *args, **kwargs."""
    parsed = []
    for token in signature.split() if signature else []:
        if token.startswith("**"):
            parsed.append((token[2:], "**kwargs", True))
        elif token.endswith("..."):
            parsed.append((token[1:-3], "*args", True))
        elif token.startswith("*"):
            parsed.append((token[1:].rstrip("="), "keyword", token.endswith("=")))
        elif token.startswith("/"):
            parsed.append((token[1:].rstrip("="), "positional", token.endswith("=")))
        else:
            parsed.append((token.rstrip("="), "either", token.endswith("=")))
    return parsed


def _broken_call(where: str, old: str, new: str) -> list[str]:
    """What a call written against signature ``old`` would no longer do against ``new``."""
    before, after = _parse(old), _parse(new)
    now_by_name = {name: (how, default) for name, how, default in after}
    hows_after = {how for _, how, _ in after}
    places_before = [name for name, how, _ in before if how in ("positional", "either")]
    places_after = [name for name, how, _ in after if how in ("positional", "either")]
    problems: list[str] = []
    for name, how, default in before:
        if how in ("*args", "**kwargs"):
            if how not in hows_after:
                problems.append(f"{where} no longer takes {how}")
            continue
        if name not in now_by_name:
            if not (how == "keyword" and "**kwargs" in hows_after):
                problems.append(f"{where} no longer takes the argument {name!r}")
            continue
        how_now, default_now = now_by_name[name]
        if how in ("either", "keyword") and how_now == "positional":
            problems.append(f"{where}: {name!r} can no longer be passed by name")
        if how == "keyword" and how_now not in ("either", "keyword"):
            problems.append(f"{where}: {name!r} can no longer be passed by name")
        if how in ("positional", "either"):
            place = places_before.index(name)
            if places_after[place : place + 1] != [name]:
                problems.append(f"{where}: {name!r} is no longer argument {place + 1}")
        if default and not default_now:
            problems.append(f"{where}: {name!r} lost its default")
    names_before = {name for name, _, _ in before}
    for name, how, default in after:
        if how in ("positional", "either", "keyword") and not default and name not in names_before:
            problems.append(f"{where} requires a new argument {name!r}")
    return problems


def broken(old: dict[str, str | None], new: dict[str, str | None]) -> list[str]:
    """Every way ``new`` stops accepting code written against ``old``, one line each."""
    problems: list[str] = []
    for where, was in old.items():
        if where not in new:
            problems.append(f"{where} is gone")
            continue
        now = new[where]
        if was is None or now is None or was == now or was == REFUSED:
            continue
        if was in ("class", "property", "attribute", "value") or was.startswith("alias "):
            if now != was and not (was.startswith("alias ") and now.startswith("alias ")):
                problems.append(f"{where} was {was!r} and is now {now!r}")
            continue
        if was.startswith("enum "):
            gone = sorted(set(was.split()[1:]) - set(now.split()[1:]))
            problems.extend(f"{where}.{value} is gone" for value in gone)
            continue
        problems += _broken_call(where, was, now)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the current surface")
    args = parser.parse_args(argv)
    surface = current_surface()
    if args.write:
        import agent_memory

        recorded = {"__version__": agent_memory.__version__, **surface}
        SNAPSHOT.write_text(json.dumps(recorded, indent=0, sort_keys=True) + "\n")
        print(f"wrote {SNAPSHOT.relative_to(ROOT)}")
        return 0
    recorded = json.loads(SNAPSHOT.read_text())
    recorded.pop("__version__")
    problems = broken(recorded, surface)
    print("\n".join(problems) or "nothing a caller relied on has changed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
