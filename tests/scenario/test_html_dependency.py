"""Web sources need `lxml.html.clean` (justext, under trafilatura, imports it; since lxml 5.2 it is
the separate `lxml_html_clean` project). justext asks for it as `lxml[html_clean]`, an extra that
the pip `python3 -m venv` brings (23.x, before extras were normalised) does not find, so groundbot
declares the project itself. These tests resolve what that old pip installs for our declared
requirements, and load an HTML page with what is installed here."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
NEEDED = ("trafilatura", "lxml", "lxml-html-clean")  # what loading an HTML page pulls in


def declared(names: tuple[str, ...]) -> list[str]:
    """groundbot's own requirement lines for these distributions (pyproject.toml)."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    wanted = {canonicalize_name(n) for n in names}
    return [d for d in deps if canonicalize_name(Requirement(d).name) in wanted]


def test_the_pip_of_a_fresh_venv_installs_the_html_cleaner(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)  # its own pip, not upgraded
    pip = venv / "bin" / "pip"
    report = tmp_path / "report.json"
    wanted = declared(NEEDED)
    assert any(canonicalize_name(Requirement(d).name) == "trafilatura" for d in wanted)
    subprocess.run([str(pip), "install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report),
                    *wanted], check=True, capture_output=True, timeout=280)
    names = {canonicalize_name(i["metadata"]["name"]) for i in json.loads(report.read_text())["install"]}
    assert "justext" in names  # the page loader that needs the cleaner is in what is installed
    assert "lxml-html-clean" in names, sorted(names)


def test_an_html_page_loads_with_what_is_installed() -> None:
    import lxml.html.clean  # noqa: F401  (the import justext makes)

    from storage.ingestion.loaders import load_html

    doc = load_html("<html><head><title>Backups</title></head><body><article><h1>Backups</h1>"
                    "<p>" + "Backups run every night at two and are kept for thirty days. " * 6 + "</p>"
                    "</article></body></html>", "page", "web", "page.html")
    assert "kept for thirty days" in " ".join(s.text for s in doc.sections)
