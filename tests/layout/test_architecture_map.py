"""docs/architecture.md is a newcomer's map of the code: every package and module of core/,
adapters/, storage/, models/ and bot/ has a line of its own there (`name` — its job, nested under its
package's line), and every path the page names exists. A module added, moved or renamed without
its line fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "docs" / "architecture.md"
FOLDERS = ("core", "adapters", "storage", "models", "bot")
REVISIONS = Path("storage/records/migrations/versions")  # one Alembic revision a file: the folder is named, not each
LINE = re.compile(r"^( *)- `([\w./-]+)` — (\S.*)$")  # a map line: `name` — what it does
NAMED = re.compile(r"(?<![\w./<-])((?:core|adapters|storage|models|bot|tests|bench|docs|scripts)/[\w./-]*)")


def mapped() -> dict[str, str]:
    """path -> job, for each line of the map: a line nested under a package's line names what
    that package holds (`text/` under `core/` is core/text/)."""
    out: dict[str, str] = {}
    above: list[tuple[int, str]] = []  # (indent, path) of the lines this one is nested under
    for line in MAP.read_text(encoding="utf-8").splitlines():
        m = LINE.match(line)
        if not m:
            continue
        indent, name, job = len(m.group(1)), m.group(2), m.group(3)
        while above and above[-1][0] >= indent:
            above.pop()
        path = above[-1][1] + name if above else name
        above.append((indent, path))
        out[path] = job
    return out


def expected() -> list[str]:
    """Every package (as `folder/`) and module of the four folders, as the map names them."""
    out: list[str] = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if path.name == "__init__.py":
                out.append(f"{rel.parent.as_posix()}/")
            elif rel.parent != REVISIONS:
                out.append(rel.as_posix())
    return out


def test_every_package_and_module_has_its_line_in_the_map() -> None:
    lines = mapped()
    missing = [path for path in expected() if path not in lines]
    assert not missing, f"not in docs/architecture.md's map (a line `name` — its job, under its package's line): {missing}"


def test_the_map_names_only_packages_and_modules() -> None:
    """A line of the map is a package or a module of the four folders, or a folder above them."""
    known = set(expected())
    stray = [path for path in mapped() if path.split("/")[0] in FOLDERS and path not in known]
    assert not stray, f"docs/architecture.md maps what is not a package or module: {stray}"


def test_every_path_the_page_names_exists() -> None:
    text = MAP.read_text(encoding="utf-8")
    named = {m.rstrip(".,") for m in NAMED.findall(text)} | set(mapped())
    assert len(named) > 100  # the map itself was read
    gone = sorted(p for p in named if not (ROOT / p).exists())
    assert not gone, f"docs/architecture.md names paths that do not exist: {gone}"
