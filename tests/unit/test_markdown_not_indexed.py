"""A Markdown page's not-indexed part (docs/configuration.md's generated reference) stays out of its sections."""

from storage.ingestion.loaders import INDEXED, NOT_INDEXED, load_markdown


def _texts(text: str) -> str:
    doc = load_markdown(text, "d", "d.md", "d.md")
    return " ".join(f"{s.heading} {s.text}" for s in doc.sections)


def test_the_part_between_the_markers_is_left_out_and_the_rest_kept() -> None:
    page = f"# Guide\n\n## Setup\n\nRun it.\n\n{NOT_INDEXED}\n\n## Reference\n\n| key | x |\n\n{INDEXED}\n\n## After\n\nDone.\n"
    got = _texts(page)
    assert "Run it." in got and "Done." in got and "Reference" not in got and "| key" not in got


def test_an_unclosed_part_runs_to_the_end_and_a_page_without_markers_is_whole() -> None:
    assert "Tail" not in _texts(f"# G\n\nKept.\n\n{NOT_INDEXED}\n\n## Tail\n\nHidden.\n")
    assert "Hidden." in _texts("# G\n\n## Tail\n\nHidden.\n")
