"""The incremental crawler's reads and writes (tables ``recrawl_*``, store/db.py's RECRAWL_SCHEMA).

Written by the crawl process's one writer, inside the crawl's transactions (the same connection as
:class:`~skitter.store.crawlstore.CrawlStore`), so a revisit's rows commit with its fetch record
and its WARC records, and a kill -9 loses at most the uncommitted batch, as for any fetch.

- ``recrawl_pages``: one row per page of the collection (and per page that left it: ``state``
  gone, disallowed or discarded, ``in_collection`` 0): the validators and checksums of the stored
  version, the running change statistics (:class:`skitter.recrawl.history.PageStats`), the last
  estimate, importance and weight, and the due time of the next visit.
- ``recrawl_visits``: every visit of a page, first fetch included: the fetch records of revisits
  (``kind``: first, 304, same, noise, changed, baseline, missing, gone, error, disallowed).
- ``recrawl_log``: the collection's state after each planning pass (the freshness plot).
- ``recrawl_outside``: URLs found while a bounded collection was full (AllUrls minus CollUrls).
- ``recrawl_sitemaps`` / ``recrawl_hints``: the sitemaps read and their lastmod / changefreq.
"""

from __future__ import annotations

import sqlite3
from typing import Any
from collections.abc import Iterable

from ..models import Candidate
from ..urls import fingerprint, host_key
from .crawlstore import CrawlStore

PAGE_COLUMNS = (
    "fp", "url", "host", "kind", "state", "in_collection", "first_visit", "last_visit", "last_change", "visits",
    "changes", "etag", "last_modified", "body_hash", "text_hash", "version_at", "n", "x", "lm_ok", "lm_x", "lm_t",
    "lm_time", "loglik", "rate", "rate_low", "rate_high", "method", "importance", "weight", "frequency", "due",
    "missing",
)
_SELECT = "SELECT " + ", ".join(PAGE_COLUMNS) + " FROM recrawl_pages"


def has_tables(conn: sqlite3.Connection) -> bool:
    """Whether this crawl database has the recrawl tables (a directory written before them and
    opened read-only has none)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'recrawl_pages'").fetchone() \
        is not None


class RecrawlStore:
    """The recrawl tables through the crawl store's connection."""

    def __init__(self, store: CrawlStore) -> None:
        self.store = store
        self.db = store.db

    @property
    def conn(self) -> sqlite3.Connection:
        return self.db.conn

    # -- pages ---------------------------------------------------------------------------------
    def page(self, fp: int) -> dict[str, Any] | None:
        row = self.conn.execute(_SELECT + " WHERE fp = ?", (fp,)).fetchone()
        return None if row is None else dict(zip(PAGE_COLUMNS, row))

    def save_page(self, page: dict[str, Any]) -> None:
        self.db.ensure_tx()
        cols = [c for c in PAGE_COLUMNS if c in page]
        self.conn.execute(f"INSERT OR REPLACE INTO recrawl_pages ({', '.join(cols)}) VALUES"
                          f" ({', '.join('?' for _ in cols)})", [page[c] for c in cols])

    def update_pages(self, column: str, values: Iterable[tuple[Any, int]]) -> None:
        """Set one column of many pages: ``values`` are (value, fp)."""
        assert column in PAGE_COLUMNS
        self.db.ensure_tx()
        self.conn.executemany(f"UPDATE recrawl_pages SET {column} = ? WHERE fp = ?", values)

    def in_collection(self, fps: Iterable[int]) -> set[int]:
        """Those of ``fps`` whose pages are in the collection."""
        fps = list(fps)
        out: set[int] = set()
        for i in range(0, len(fps), 500):
            chunk = fps[i:i + 500]
            out.update(fp for (fp,) in self.conn.execute(
                f"SELECT fp FROM recrawl_pages WHERE in_collection = 1 AND fp IN ({', '.join('?' * len(chunk))})",
                chunk))
        return out

    def lm_liars(self) -> dict[str, int]:
        """Host -> its pages whose Last-Modified disagreed with their checksums (or went missing)."""
        return dict(self.conn.execute("SELECT host, count(*) FROM recrawl_pages WHERE lm_ok = 0"
                                      " AND last_modified IS NOT NULL AND n > 0 GROUP BY host"))

    def collection_size(self) -> int:
        return self.conn.execute("SELECT count(*) FROM recrawl_pages WHERE in_collection = 1").fetchone()[0]

    def totals(self) -> dict[str, int]:
        q = self.conn.execute
        return {
            "visits": q("SELECT count(*) FROM recrawl_visits WHERE kind != 'first'").fetchone()[0],
            "changes": q("SELECT count(*) FROM recrawl_visits WHERE changed = 1").fetchone()[0],
            "not_modified": q("SELECT count(*) FROM recrawl_visits WHERE kind = '304'").fetchone()[0],
            "added": q("SELECT count(*) FROM recrawl_pages WHERE state = 'admitted' OR (state = 'live'"
                       " AND kind = 'added')").fetchone()[0],
            "discarded": q("SELECT count(*) FROM recrawl_pages WHERE state = 'discarded'").fetchone()[0],
        }

    def bootstrap(self) -> int:
        """Pages a crawl stored before recrawling was on (no row here yet) join the collection:
        their fetch record gives the first visit, the body hash and the validators, their page row
        the main-text checksum. A page stored by an older skitter has none: its first revisit is a
        baseline (it can only compare bodies, or get a 304)."""
        self.db.ensure_tx()
        cur = self.conn.execute(
            "INSERT INTO recrawl_pages (fp, url, host, first_visit, last_visit, visits, etag, last_modified,"
            " body_hash, text_hash, version_at)"
            " SELECT f.fp, f.url, f.host, (julianday(f.fetched_at) - 2440587.5) * 86400.0,"
            " (julianday(f.fetched_at) - 2440587.5) * 86400.0, 1, p.etag, p.last_modified, f.content_hash,"
            " p.main_hash, (julianday(f.fetched_at) - 2440587.5) * 86400.0"
            " FROM fetches f LEFT JOIN pages p ON p.fp = f.fp"
            " WHERE f.fetch_order IS NOT NULL AND f.status >= 200 AND f.status < 300 AND f.fetched_at IS NOT NULL"
            " AND f.fp NOT IN (SELECT fp FROM recrawl_pages) AND f.fp NOT IN (SELECT fp FROM recrawl_sitemaps)")
        added = cur.rowcount
        if added:
            # their Last-Modified is their last change and the one their first revisit compares with
            # (history.observe: without it the header was never trusted for a crawl's pages), as
            # for a page first fetched by the recrawl
            from ..httpdate import http_time

            rows = self.conn.execute("SELECT fp, last_modified FROM recrawl_pages WHERE lm_time IS NULL"
                                     " AND last_change IS NULL AND changes = 0 AND visits = 1"
                                     " AND last_modified IS NOT NULL").fetchall()
            dated = [(t, t, fp) for fp, value in rows if (t := http_time(value)) is not None]
            self.conn.executemany("UPDATE recrawl_pages SET last_change = ?, lm_time = ? WHERE fp = ?", dated)
        return added

    def unscheduled(self, limit: int = 10_000) -> list[dict[str, Any]]:
        """Pages of the collection with no due time yet (just bootstrapped)."""
        rows = self.conn.execute(_SELECT + " WHERE in_collection = 1 AND due IS NULL LIMIT ?", (limit,)).fetchall()
        return [dict(zip(PAGE_COLUMNS, r)) for r in rows]

    # -- visits --------------------------------------------------------------------------------
    def add_visit(self, fp: int, at: float, *, status: int | None, kind: str, changed: bool | None,
                  last_modified: float | None, location: tuple[str, int, int] | None) -> None:
        self.db.ensure_tx()
        loc = location or (None, None, None)
        self.conn.execute(
            "INSERT INTO recrawl_visits (fp, at, status, kind, changed, last_modified, warc_file, warc_offset,"
            " warc_length) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (fp, at, status, kind, None if changed is None else int(changed), last_modified, *loc))

    # -- outside a bounded collection ---------------------------------------------------------
    def park(self, cand: Candidate, at: float) -> None:
        self.db.ensure_tx()
        self.conn.execute(
            "INSERT OR IGNORE INTO recrawl_outside (fp, url, host, depth, parent, priority, since)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (fingerprint(cand.url), cand.url, host_key(cand.url), cand.depth, cand.parent, cand.priority, at))

    def unpark(self, fp: int) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT url, depth, parent, priority FROM recrawl_outside WHERE fp = ?",
                                (fp,)).fetchone()
        if row is None:
            return None
        self.db.ensure_tx()
        self.conn.execute("DELETE FROM recrawl_outside WHERE fp = ?", (fp,))
        return dict(zip(("url", "depth", "parent", "priority"), row))

    # -- sitemaps ------------------------------------------------------------------------------
    def add_sitemap(self, url: str, origin: str) -> bool:
        """Register a sitemap URL; False if it was known."""
        self.db.ensure_tx()
        return self.conn.execute("INSERT OR IGNORE INTO recrawl_sitemaps (fp, url, origin) VALUES (?, ?, ?)",
                                 (fingerprint(url), url, origin)).rowcount > 0

    def is_sitemap(self, fp: int) -> bool:
        return self.conn.execute("SELECT 1 FROM recrawl_sitemaps WHERE fp = ?", (fp,)).fetchone() is not None

    def sitemaps_of(self, origin: str) -> int:
        return self.conn.execute("SELECT count(*) FROM recrawl_sitemaps WHERE origin = ?", (origin,)).fetchone()[0]

    def sitemap_read(self, url: str, at: float, kind: str | None, entries: int, error: str | None) -> None:
        self.db.ensure_tx()
        self.conn.execute("UPDATE recrawl_sitemaps SET read_at = ?, kind = ?, entries = ?, error = ? WHERE fp = ?",
                          (at, kind, entries, error, fingerprint(url)))

    def add_hints(self, hints: Iterable[tuple[int, str | None, float | None]], at: float) -> None:
        self.db.ensure_tx()
        self.conn.executemany("INSERT OR REPLACE INTO recrawl_hints (fp, changefreq, lastmod, read_at)"
                              " VALUES (?, ?, ?, ?)", [(fp, cf, lm, at) for fp, cf, lm in hints])

    def hint(self, fp: int) -> tuple[str | None, float | None, float] | None:
        return self.conn.execute("SELECT changefreq, lastmod, read_at FROM recrawl_hints WHERE fp = ?",
                                 (fp,)).fetchone()

    # -- the log -------------------------------------------------------------------------------
    def log(self, row: dict[str, Any]) -> None:
        self.db.ensure_tx()
        cols = ("at", "pages", "freshness", "weighted_freshness", "visits", "changes", "not_modified", "added",
                "discarded", "multiplier", "budget")
        self.conn.execute(f"INSERT INTO recrawl_log ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                          [row.get(c) for c in cols])
