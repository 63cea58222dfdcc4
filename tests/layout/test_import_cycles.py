"""No import cycle anywhere in groundbot's four folders or in bench/ (import-linter's contracts
in pyproject.toml hold the direction between them; this holds every module to the same inside
them), counting the imports made only for type checking too."""

from __future__ import annotations

import grimp

PACKAGES = ("core", "storage", "models", "adapters", "bot", "bench")


def cycles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other round a cycle (Tarjan's strongly connected
    components of more than one module, or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(imports.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or v in imports.get(v, ()):
                found.append(sorted(group))

    for module in sorted(imports):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_itself_round_a_cycle() -> None:
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False)
    imports = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert cycles(imports) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
