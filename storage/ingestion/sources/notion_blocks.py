"""Notion blocks as Markdown, so a Notion page is read as a Markdown file is (its headings give
the sections that answers cite).

Why Markdown and not plain text: the loader splits Markdown at its headings, so a page's
"Setup" and "Billing" parts become sections of their own; lists, to-dos, quotes, callouts and
code keep their shape, which keeps a quoted step readable. The page title is the document's
`#` heading and Notion's three heading levels come under it (`##` to `####`).
"""

from __future__ import annotations

from typing import Any

from storage.ingestion.sources.wikis import obj

HEADINGS = {"heading_1": "##", "heading_2": "###", "heading_3": "####"}
SKIPPED = {"child_page", "child_database", "divider", "table_of_contents", "breadcrumb", "column_list",
           "unsupported", "image", "video", "file", "pdf", "audio", "embed", "link_preview"}


def plain(rich_text: Any) -> str:
    """The text of a rich-text array (what the reader sees, without its styling)."""
    if not isinstance(rich_text, list):
        return ""
    return "".join(str(part.get("plain_text") or "") for part in rich_text if isinstance(part, dict))


def page_title(page: dict[str, Any]) -> str:
    """A page's title: its one property of type "title"."""
    properties = page.get("properties")
    if isinstance(properties, dict):
        for value in properties.values():
            if isinstance(value, dict) and value.get("type") == "title":
                return " ".join(plain(value.get("title")).split())
    return ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _item(kind: str, body: dict[str, Any], text: str, children: list[str], pad: str) -> list[str]:
    mark = {"bulleted_list_item": "-", "numbered_list_item": "1.", "toggle": "-"}.get(kind, "")
    if kind == "to_do":
        mark = "- [x]" if body.get("checked") else "- [ ]"
    return [f"{pad}{mark} {_one_line(text)}", *children]


def _quoted(kind: str, body: dict[str, Any], text: str, children: list[str], pad: str) -> list[str]:
    lines = text.splitlines() or [""]
    emoji = str(obj(body.get("icon")).get("emoji") or "") if kind == "callout" else ""
    lines[0] = f"{emoji} {lines[0]}".strip()
    return [*(f"> {line}" for line in lines), *(f"> {c}" for c in children), ""]


def _code(kind: str, body: dict[str, Any], text: str, children: list[str], pad: str) -> list[str]:
    language = str(body.get("language") or "").replace("plain text", "").strip()
    fence = "````" if "```" in text else "```"
    return [f"{fence}{language.split()[0] if language else ''}", *text.splitlines(), fence, ""]


def _row(kind: str, body: dict[str, Any], text: str, children: list[str], pad: str) -> list[str]:
    cells = body.get("cells") if isinstance(body.get("cells"), list) else []
    return ["| " + " | ".join(_one_line(plain(c)).replace("|", "\\|") for c in cells or []) + " |"]


def _bookmark(kind: str, body: dict[str, Any], text: str, children: list[str], pad: str) -> list[str]:
    caption = plain(body.get("caption"))
    url = str(body.get("url") or "")
    return [f"{caption} ({url})" if caption else url, ""]


RENDER = {"bulleted_list_item": _item, "numbered_list_item": _item, "to_do": _item, "toggle": _item,
          "quote": _quoted, "callout": _quoted, "code": _code, "table_row": _row, "bookmark": _bookmark,
          "table": lambda kind, body, text, children, pad: [*children, ""],
          "equation": lambda kind, body, text, children, pad: [str(body.get("expression") or ""), ""]}


def block_markdown(block: dict[str, Any], children: list[str], depth: int) -> list[str]:
    """One block (its children already turned to Markdown lines) as Markdown lines. `depth` is
    how deep in lists it sits (two spaces of indent each)."""
    kind = str(block.get("type") or "")
    body = obj(block.get(kind))
    text = plain(body.get("rich_text"))
    if kind in SKIPPED:
        return children
    if kind in HEADINGS:
        return [f"{HEADINGS[kind]} {_one_line(text)}", "", *children] if text.strip() else children
    if kind in RENDER:
        return RENDER[kind](kind, body, text, children, "  " * depth)
    if text.strip():  # paragraph, and any newer kind that carries text
        return [*text.splitlines(), "", *children]
    return children


def table_lines(rows: list[str]) -> list[str]:
    """A table's rows with the header separator Markdown needs after the first."""
    if not rows:
        return rows
    columns = rows[0].count(" | ") + 1
    return [rows[0], "|" + " --- |" * columns, *rows[1:]]
