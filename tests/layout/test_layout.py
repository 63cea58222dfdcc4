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


MAX_TOP_MODULES = 10  # core/ and storage/ keep the rest in packages by role (docs/architecture.md)


@pytest.mark.parametrize("package", ["core", "storage"])
def test_the_top_of_core_and_storage_stays_small(package: str) -> None:
    top = sorted(p.name for p in (ROOT / package).glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, f"{package}/ holds {len(top)} modules at its top: {top}"


def test_no_stage_asks_which_generator_it_serves() -> None:
    """A generator declares its mode on its port (core.ports.Generator.mode); core/ reads that,
    never an attribute it probes for."""
    probing = [f"{p.relative_to(ROOT)}:{node.lineno}" for p in (ROOT / "core").rglob("*.py")
               for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
               and node.args and "generator" in ast.unparse(node.args[0])]
    assert not probing, probing
