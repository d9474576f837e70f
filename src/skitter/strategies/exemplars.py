"""The exemplary documents of a focused crawl's topic (``--topic-file``, seed 000), read from disk.
Kept apart from :mod:`.topic`, which is pure: this module reads files and parses HTML."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError


def read_exemplars(path: str | Path) -> list[str]:
    """The texts of the exemplary documents at ``path`` (a file, or a directory of files): HTML
    files (by extension or a leading ``<``) are parsed (title, meta, headings, body text)."""
    from ..parse import parse_html

    p = Path(path)
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    texts = []
    for f in files:
        data = f.read_bytes()
        head = data[:512].lstrip().lower()
        if f.suffix.lower() in (".html", ".htm", ".xhtml") or head.startswith((b"<!doctype", b"<html", b"<")):
            page = parse_html(data, f.resolve().as_uri(), "text/html")
            texts.append(" ".join([page.title, page.description, page.keywords, *page.headings, page.text]))
        else:
            texts.append(data.decode("utf-8", "replace"))
    return texts


def exemplars_of(config) -> list[str]:
    """The texts of ``config.topic_file`` (none without one); an unreadable path is a UsageError."""
    path = getattr(config, "topic_file", "") or ""
    if not path:
        return []
    try:
        return read_exemplars(path)
    except OSError as exc:
        raise UsageError(f"cannot read --topic-file {path}: {exc.strerror or exc}") from None
