"""Every test that imports mongoeco says so, so Python 3.11 and 3.12 skip it (CI runs the suite
there too, where mongoeco cannot be installed). Checked on 3.13, where forgetting would pass."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _imports_mongoeco(node: ast.AST) -> bool:
    for child in ast.walk(node):
        if isinstance(child, ast.ImportFrom) and (child.module or "").split(".")[0] == "mongoeco":
            return True
        if isinstance(child, ast.Import) and any(
            alias.name.split(".")[0] == "mongoeco" for alias in child.names
        ):
            return True
    return False


def _marks_mongoeco(decorators: list[ast.expr]) -> bool:
    return any("mongoeco" in ast.unparse(decorator) for decorator in decorators)


def _module_guarded(tree: ast.Module) -> bool:
    """``pytestmark`` naming the marker, or ``pytest.importorskip("mongoeco")`` at the top."""
    for statement in tree.body:
        text = ast.unparse(statement)
        if isinstance(statement, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark"
            for target in statement.targets
        ):
            if "mongoeco" in text:
                return True
        if "importorskip" in text and "mongoeco" in text:
            return True
    return False


def _unguarded(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if _module_guarded(tree):
        return []
    found = []
    for statement in tree.body:
        if isinstance(statement, ast.Import | ast.ImportFrom) and _imports_mongoeco(statement):
            found.append(f"{path.name}:{statement.lineno} imports mongoeco at module level")
        functions = [statement]
        if isinstance(statement, ast.ClassDef):
            if _marks_mongoeco(statement.decorator_list):
                continue
            functions = list(statement.body)
        for function in functions:
            if (
                isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
                and function.name.startswith("test")
                and _imports_mongoeco(function)
                and not _marks_mongoeco(function.decorator_list)
            ):
                found.append(f"{path.name}:{function.lineno} {function.name}")
    return found


def test_every_test_that_imports_mongoeco_is_skipped_without_it():
    unguarded = [entry for path in sorted(TESTS.rglob("test_*.py")) for entry in _unguarded(path)]
    assert unguarded == [], "mark these @pytest.mark.mongoeco: " + ", ".join(unguarded)


def test_the_check_sees_an_unguarded_import(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "import pytest\n\n"
        "async def test_a():\n    from mongoeco.engines import MemoryEngine\n\n"
        "@pytest.mark.mongoeco\nasync def test_b():\n    import mongoeco\n"
    )
    assert _unguarded(sample) == ["test_sample.py:3 test_a"]
    sample.write_text("import pytest\npytestmark = pytest.mark.mongoeco\n" + sample.read_text())
    assert _unguarded(sample) == []
