"""How core/ reads its collaborators: through their ports, never by probing them; and no `assert`
guards product code. (Size is not checked here: ruff's C901 and PLR0915 bound a function's
complexity, and modules are cut by their job, not by a line count.)"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_stage_asks_which_generator_it_serves() -> None:
    """A generator declares its mode on its port (core.ports.Generator.mode); core/ reads that,
    never an attribute it probes for."""
    probing = [f"{p.relative_to(ROOT)}:{node.lineno}" for p in (ROOT / "core").rglob("*.py")
               for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
               and node.args and "generator" in ast.unparse(node.args[0])]
    assert not probing, probing


def test_no_assert_guards_product_code() -> None:
    """`python -O` strips asserts: a product check that must hold raises a named error instead."""
    asserts = [f"{p.relative_to(ROOT)}:{node.lineno}" for top in ("core", "storage", "models", "bot", "adapters")
               for p in (ROOT / top).rglob("*.py")
               for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))) if isinstance(node, ast.Assert)]
    assert not asserts, asserts
