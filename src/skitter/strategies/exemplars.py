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
        if _binary(data):   # a PDF, an image, an archive: no text of ours to read in it
            if p.is_dir():
                continue
            raise UsageError(f"--topic-file {path} is not a text or HTML file (it holds binary data)")
        head = data[:512].lstrip().lower()
        if f.suffix.lower() in (".html", ".htm", ".xhtml") or head.startswith((b"<!doctype", b"<html", b"<")):
            page = parse_html(data, f.resolve().as_uri(), "text/html")
            texts.append(" ".join([page.title, page.description, page.keywords, *page.headings, page.text]))
        else:
            texts.append(data.decode("utf-8", "replace"))
    return texts


def _binary(data: bytes) -> bool:
    """Whether ``data`` is no text: a PDF, PNG, GIF, JPEG, zip or gzip signature, or a NUL byte in
    its first 8 KB (which no text encoding of an exemplary document here has: UTF-16 is not read;
    git's rule)."""
    return data.startswith(_SIGNATURES) or b"\x00" in data[:8192]


_SIGNATURES = (b"%PDF-", b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"PK\x03\x04", b"\x1f\x8b")


def exemplars_of(config) -> list[str]:
    """The texts of ``config.topic_file`` (none without one); an unreadable path is a UsageError."""
    path = getattr(config, "topic_file", "") or ""
    if not path:
        return []
    try:
        return read_exemplars(path)
    except OSError as exc:
        raise UsageError(f"cannot read --topic-file {path}: {exc.strerror or exc}") from None
