"""Every `python -m bench...` command the documentation names runs as written: the module exists
and its `--help` exits 0. The docs are where a reader copies commands from (README.md,
bench/README.md, docs/, the model cards) and the code names training commands too (a model
that cannot load says how to rebuild it), so a module moved or renamed without them fails here.
Every other dotted `bench.` name they mention resolves to a module or a name defined in one."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMAND = re.compile(r"python\s+-m\s+(bench(?:\.[A-Za-z_]\w*)+)")
DOTTED = re.compile(r"(?<![\w./-])(bench(?:\.[A-Za-z_]\w*)+)")

# Runs each module as `python -m` does (runpy, run_name "__main__") with `--help`, in one fresh
# process so the heavy imports they share are paid once; prints {module: [exit code, output]}.
DRIVER = """
import contextlib, io, json, runpy, sys
out = {}
for module in sys.argv[1:]:
    buf = io.StringIO()
    sys.argv = [module, "--help"]
    code = 0
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException as e:
            code, _ = 1, buf.write(repr(e))
    out[module] = [code, buf.getvalue()]
print(json.dumps(out))
"""


def documents() -> list[Path]:
    docs = [ROOT / "README.md", ROOT / "bench" / "README.md", ROOT / "config.toml"]
    docs += sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "models").glob("*.md"))
    docs += sorted(p for pkg in ("core", "storage", "models", "bot", "adapters") for p in (ROOT / pkg).rglob("*.py"))
    return [p for p in docs if p.is_file()]


def named(pattern: re.Pattern[str]) -> dict[str, list[str]]:
    """Each name the pattern finds, with the files that name it."""
    found: dict[str, list[str]] = {}
    for path in documents():
        for name in pattern.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name.rstrip("."), []).append(str(path.relative_to(ROOT)))
    return found


COMMANDS = sorted(named(COMMAND))


@cache
def helps() -> dict[str, list]:
    proc = subprocess.run([sys.executable, "-c", DRIVER, *COMMANDS], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_the_docs_name_the_benchmarks_and_the_training_commands() -> None:
    """The scan finds what it should: the headline benchmarks and each shipped model's training."""
    for module in ("bench.grounding", "bench.system.latency", "bench.system.scale", "bench.system.load",
                   "bench.training.reader", "bench.training.claim_judge.train",
                   "bench.training.support_model.train"):
        assert module in COMMANDS


@pytest.mark.slow
@pytest.mark.parametrize("module", COMMANDS)
def test_a_named_command_runs_its_help(module: str) -> None:
    assert importlib.util.find_spec(module) is not None, f"{module} named in {named(COMMAND)[module]}"
    code, output = helps()[module]
    assert code == 0 and "usage:" in output, f"{module} --help: exit {code}\n{output[-1500:]}"


def resolves(name: str) -> bool:
    """A module, or a name assigned, defined or imported at the top of one (read, not imported)."""
    parts = name.split(".")
    for cut in range(len(parts), 1, -1):
        module = ".".join(parts[:cut])
        try:
            spec = importlib.util.find_spec(module)
        except ModuleNotFoundError:
            spec = None
        if spec is None or spec.origin is None:
            continue
        if cut == len(parts):
            return True
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        return parts[cut] in {n for node in tree.body for n in _defines(node)}
    return False


def _defines(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, ast.ImportFrom | ast.Import):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    return []


def test_every_dotted_bench_name_in_the_docs_resolves() -> None:
    missing = {name: files for name, files in named(DOTTED).items() if not resolves(name)}
    assert missing == {}


def test_the_checks_catch_a_stale_name() -> None:
    assert not resolves("bench.train_answerability")
    assert not resolves("bench.datasets.no_such_reader")
    assert resolves("bench.datasets.topic_groups") and resolves("bench.system.scale")
    assert COMMAND.findall("run `python -m\nbench.system.scale --probe DIR`") == ["bench.system.scale"]
