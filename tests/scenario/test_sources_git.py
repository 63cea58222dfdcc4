"""A Git repository synced into the index, read with dulwich from a real repository made here:
commits that add, change, rename and delete documents, each followed by a sync; a branch and a
sub-folder chosen; citations linking the file at its commit; a repository that cannot be
fetched changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dulwich import porcelain
from dulwich.repo import Repo

from bot.app import App
from bot.source_settings import parse_sources
from core.messages import ConversationKey, Incoming

pytestmark = pytest.mark.slow  # each test embeds and syncs a repository

WEB = "https://git.example.com/guild/handbook/blob/{commit}/{path}"


def commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    """Write (or, for None, delete) the files and commit them; the new commit's id."""
    for name, text in files.items():
        path = repo / name
        if text is None:
            porcelain.remove(str(repo), paths=[str(path)])
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        porcelain.add(str(repo), paths=[str(path)])
    sha = porcelain.commit(str(repo), message=message.encode(), author=b"Keeper <k@example.com>",
                           committer=b"Keeper <k@example.com>")
    return sha.decode() if isinstance(sha, bytes) else str(sha)


def source(repo: Path, **extra: Any) -> Any:
    return parse_sources([{"name": "handbook", "kind": "git", "url": str(repo), "web_url": WEB, **extra}])


def ask(app: App, question: str) -> Any:
    return app.ask(Incoming(ConversationKey("cli", question[:40]), "u", question))


def test_commits_that_add_change_rename_and_delete_are_followed_sync_by_sync(
        make_app: Callable[..., App], tmp_path: Path) -> None:
    repo = tmp_path / "handbook"
    Repo.init(str(repo), mkdir=True)
    first = commit(repo, {
        "docs/lamps.md": "# Lamps\n\n## Changing the lamp\n\nThe lamp is changed every ninety days by the senior "
                         "keeper, who logs it in the brass ledger.\nThe old lamp goes back to the store room for repair.\n",
        "docs/fog.md": "# Fog\n\n## The fog horn\n\nThe fog horn sounds twice a minute when visibility falls "
                       "below one nautical mile, and stops once the far buoy can be seen again.\n",
        "docs/image.png": "not a document",
        "README.md": "# Handbook repository\n\nTooling notes for the maintainers of this repository.\n",
    }, "first")
    app = make_app(empty=True, paths__kb_paths=(), sources=source(repo, paths=["docs"]))
    [one] = app.syncer.sync()
    assert one.ok and sorted(one.summary.added) == ["handbook:docs/fog.md", "handbook:docs/lamps.md"], one.line()
    d = ask(app, "How often is the lamp changed?")
    # the file at the synced commit, at the slug the forge gives the section's heading
    assert WEB.format(commit=first, path="docs/lamps.md") + "#changing-the-lamp" in [s.url for s in d.sources]

    [same] = app.syncer.sync()
    assert (len(same.summary.unchanged), same.summary.chunks_written) == (2, 0)

    commit(repo, {"docs/lamps.md": "# Lamps\n\n## Changing the lamp\n\nThe lamp is changed every thirty days by "
                                   "the senior keeper, who logs it in the brass ledger.\nThe old lamp goes back to the store room for repair.\n",
                  "docs/fog.md": None,
                  "docs/weather/fog.md": "# Fog\n\n## The fog horn\n\nThe fog horn sounds twice a minute when "
                                         "visibility falls below one nautical mile, and stops once the far buoy can be "
                                         "seen again.\n"}, "change and rename")
    [two] = app.syncer.sync()
    assert two.summary.updated == ["handbook:docs/lamps.md"]
    assert two.summary.removed == ["handbook:docs/fog.md"] and two.summary.added == ["handbook:docs/weather/fog.md"]
    assert "thirty days" in ask(app, "How often is the lamp changed?").answer

    commit(repo, {"docs/lamps.md": None}, "delete")
    [three] = app.syncer.sync()
    assert three.summary.removed == ["handbook:docs/lamps.md"]
    assert not any("lamps.md" in s.doc_id for s in ask(app, "How often is the lamp changed?").sources)
    assert "handbook:docs/lamps.md" not in app.index.existing_docs()


def test_a_branch_is_chosen_and_a_repository_that_cannot_be_fetched_changes_nothing(
        make_app: Callable[..., App], tmp_path: Path) -> None:
    repo = tmp_path / "handbook"
    Repo.init(str(repo), mkdir=True)
    commit(repo, {"tides.md": "# Tides\n\nHigh tide is logged by the junior keeper at every change of watch.\n"}, "one")
    porcelain.branch_create(str(repo), "drafts")
    app = make_app(empty=True, paths__kb_paths=(), sources=source(repo, branch="drafts"))
    assert app.syncer.sync()[0].summary.added == ["handbook:tides.md"]
    before = app.index.existing_docs()
    (repo / ".git").rename(tmp_path / "moved.git")  # the repository is gone
    [failed] = app.syncer.sync()
    assert not failed.ok and "could not be fetched" in failed.error
    assert app.index.existing_docs() == before
    missing = make_app(empty=True, paths__kb_paths=(), sources=source(tmp_path / "moved.git", branch="nope"))
    [no_branch] = missing.syncer.sync()
    assert not no_branch.ok and "no branch 'nope'" in no_branch.error
