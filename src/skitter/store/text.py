"""How ``pages.text`` is stored: deflated. A page's text is most of the crawl database (27 KB a
page on the benchmark web, 530 MB of 570 MB at 20,000 pages) and of what SQLite writes (WAL, then
the checkpoint); deflated it is about 0.4 of that. Its own module, without sqlite3, because the
worker processes pack the text (``analyse``) and import no database code.
"""

from __future__ import annotations

import zlib

from ..errors import CrawlDirError

INFLATE_ERRORS: tuple[type[Exception], ...] = (zlib.error,)   # what inflate raises on a bad stream
try:  # ISA-L: the same zlib stream at 2-4 times zlib's speed (the WARC records use it too)
    from isal import isal_zlib
    from isal.isal_zlib import compress as deflate, decompress as inflate
    INFLATE_ERRORS = (zlib.error, isal_zlib.error)  # type: ignore[assignment]  # (its stub types the class as an instance)
except ImportError:  # pragma: no cover - isal is a dependency; without it, zlib does the same job
    from zlib import compress as deflate, decompress as inflate

_TEXT_ERRORS: tuple[type[Exception], ...] = (*INFLATE_ERRORS, UnicodeDecodeError, TypeError)

__all__ = ["deflate", "inflate", "INFLATE_ERRORS", "pack_text", "page_text"]


def pack_text(text: str) -> bytes:
    """``pages.text`` as stored: the UTF-8 text as a zlib stream (level 1), readable by any zlib.
    Readers use :func:`page_text`."""
    return deflate(text.encode("utf-8", "surrogatepass"), 1)


def page_text(value: str | bytes | None) -> str | None:
    """A ``pages.text`` value as text: a BLOB is :func:`pack_text`'s output; crawl directories
    written before it stored TEXT, which is returned as it is. A BLOB that does not inflate is a
    corrupt crawl directory: :class:`~skitter.errors.CrawlDirError` (one line from the CLI)."""
    if value is None or isinstance(value, str):
        return value
    try:
        return inflate(value).decode("utf-8", "surrogatepass")   # 0.04 ms a 27 KB page, zlib's 0.10
    except _TEXT_ERRORS as exc:
        raise CrawlDirError(f"crawl.db holds a corrupt page text ({type(exc).__name__}: {exc})") from None
