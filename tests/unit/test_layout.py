"""Small modules and small functions in the product code: at most 400 lines per module and
60 lines per function in core/, adapters/, storage/ and bot/ (ruff's C901 and PLR0915 bound
complexity and statements; this bounds what a reader has to scroll through)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "adapters", "storage", "bot")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
                  if "migrations" not in p.relative_to(ROOT).parts)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_module_and_its_functions_are_small(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert source.count("\n") <= MAX_MODULE_LINES, f"{path.name}: {source.count(chr(10))} lines"
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{path.name}: {', '.join(long)}"


def test_the_layout_check_finds_a_long_function(tmp_path: Path) -> None:
    """The check above measures what it claims to."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    tree = ast.parse(f"def f():\n{body}\n")
    [fn] = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert fn.end_lineno is not None and fn.end_lineno - fn.lineno + 1 == MAX_FUNCTION_LINES + 1
