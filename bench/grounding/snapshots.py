"""Rebuild the docs snapshots of the real-question sets from their public sources.

`python -m bench.grounding.snapshots [PROJECT ...] [--mirrors DIR] [--out DIR]`

Each set's spec, `bench/data/real-questions/sites/<project>.toml`, names the GitHub repository, the
commit the set was labelled against, the docs folder in it, which files to keep and which to drop.
The script takes that commit from a local git mirror (`--mirrors DIR/<owner>+<name>/...`, any git
directory beneath it) or else clones the repository into `--cache`, and writes the docs folder's
files to `--out/<project>-docs/` (default `bench/data/sites/`, which git ignores: the snapshots are
third-party pages, never committed). The real suite and the reader's training read them from there.
"""

from __future__ import annotations

import argparse
import fnmatch
import io
import shutil
import subprocess
import sys
import tarfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from bench import ROOT

SPECS = ROOT / "bench" / "data" / "real-questions" / "sites"
OUT = ROOT / "bench" / "data" / "sites"
CACHE = Path.home() / ".cache" / "groundbot" / "docs-repos"


@dataclass(frozen=True)
class Spec:
    project: str
    repo: str
    commit: str
    docs: str = ""
    keep: tuple[str, ...] = ("**/*",)
    drop: tuple[str, ...] = ()
    release: str = ""
    site_url: str = ""
    licence: str = ""


def load_spec(path: Path) -> Spec:
    data = tomllib.loads(path.read_text("utf-8"))
    return Spec(project=str(data.get("project") or path.stem), repo=str(data["repo"]), commit=str(data["commit"]),
                docs=str(data.get("docs") or "").strip("/"), keep=tuple(data.get("keep") or ("**/*",)),
                drop=tuple(data.get("drop") or ()), release=str(data.get("release") or ""),
                site_url=str(data.get("site_url") or ""), licence=str(data.get("licence") or ""))


def _git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True).stdout


def _has(git_dir: Path, commit: str) -> bool:
    return subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "-e", f"{commit}^{{commit}}"],
                          capture_output=True).returncode == 0


def git_dir_for(spec: Spec, mirrors: Path | None, cache: Path) -> Path:
    """A git directory holding the spec's commit: a local mirror's, else a clone made once."""
    if mirrors is not None:
        root = mirrors / spec.repo.replace("/", "+")
        for head in sorted(root.rglob("HEAD")) if root.is_dir() else []:
            if (head.parent / "objects").is_dir() and _has(head.parent, spec.commit):
                return head.parent
    target = cache / spec.repo.replace("/", "+")
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "--bare", "--filter=blob:none", f"https://github.com/{spec.repo}.git",
                        str(target)], check=True)
    if not _has(target, spec.commit):
        subprocess.run(["git", f"--git-dir={target}", "fetch", "origin", spec.commit], check=True)
    return target


def _kept(rel: str, spec: Spec) -> bool:
    def match(pattern: str) -> bool:
        return fnmatch.fnmatch(rel, pattern) or (pattern.startswith("**/") and fnmatch.fnmatch(rel, pattern[3:]))

    dropped = any(rel == d.strip("/") or rel.startswith(d.strip("/") + "/") or match(d) for d in spec.drop)
    return not dropped and any(match(k) for k in spec.keep)


def rebuild(spec: Spec, git_dir: Path, out: Path) -> int:
    """Write the spec's docs files to `out/<project>-docs/`; returns the number of files written."""
    target = out / f"{spec.project}-docs"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    args = ["archive", "--format=tar", spec.commit] + ([spec.docs] if spec.docs else [])
    written = 0
    with tarfile.open(fileobj=io.BytesIO(_git(git_dir, *args))) as tar:
        prefix = f"{spec.docs}/" if spec.docs else ""
        for member in tar.getmembers():
            if not member.isfile() or not member.name.startswith(prefix):
                continue
            rel = member.name[len(prefix):]
            if not rel or ".." in Path(rel).parts or not _kept(rel, spec):
                continue
            dest = target / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(member)
            if src is not None:
                dest.write_bytes(src.read())
                written += 1
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.grounding.snapshots", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("projects", nargs="*", help="projects to rebuild (default: every spec)")
    ap.add_argument("--mirrors", type=Path, default=None, help="folder of local git mirrors, <owner>+<name>/...")
    ap.add_argument("--cache", type=Path, default=CACHE, help="where clones are kept (default %(default)s)")
    ap.add_argument("--out", type=Path, default=OUT, help="where snapshots are written (default %(default)s)")
    args = ap.parse_args(argv)
    specs = [load_spec(p) for p in sorted(SPECS.glob("*.toml"))]
    chosen = [s for s in specs if not args.projects or s.project in args.projects]
    missing = set(args.projects) - {s.project for s in specs}
    if missing:
        print(f"no spec for: {', '.join(sorted(missing))} (specs are in {SPECS})", file=sys.stderr)
        return 2
    for spec in chosen:
        try:
            n = rebuild(spec, git_dir_for(spec, args.mirrors, args.cache), args.out)
        except subprocess.CalledProcessError as exc:
            print(f"{spec.project}: could not get {spec.repo}@{spec.commit[:12]}: {exc}", file=sys.stderr)
            return 1
        print(f"{spec.project}: {n} files from {spec.repo}@{spec.commit[:12]} -> {args.out / (spec.project + '-docs')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
