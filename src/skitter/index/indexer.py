"""The full-text index: ``DIR/index.db``, next to the crawl database and separate from it.

Why a separate file: the crawl has one writer on ``crawl.db``; the indexer only ever *reads*
``crawl.db`` (read-only connection, WAL: it never blocks the crawl's writer and is never blocked by
it) and writes only ``index.db``. Searchers read ``index.db`` (WAL too: they never block the indexer)
and, for titles and snippets, ``crawl.db`` read-only.

Schema of ``index.db``::

    meta   (key, value JSON)   schema version, analyzer, watermarks (see below), pagerank info
    docs   (fp PRIMARY KEY = the FTS rowid = pages.fp, url, host, hostport, title, date,
            family, pagerank, fetch_order, cols)
    fts    FTS5 (title, meta, headings, url, body): a page's own text, contentless (content=''),
           detail=full (phrases and NEAR), tokenize='unicode61 remove_diacritics 0' over
           *pre-analysed* text: every column is the space-joined output of
           :func:`skitter.index.analyze.tokens` (folded, stop words out, Porter-2 stemmed by
           PyStemmer). ``docs.cols`` keeps those five strings compressed: a contentless
           table forgets what it indexed, and removing a row (a recrawled page) needs FTS5's
           'delete' command with exactly the indexed values. Measured on 5,000 demo pages:
           20.5 MB of FTS + 6 MB of cols instead of 43 MB with FTS5 storing the text itself,
           and a third faster to build (docs/search.md).
    fta    FTS5 (anchors): the analysed incoming anchor text of each page that has some (same
           rowid), with its content (it is small). A table of its own because anchor text
           grows after a page is indexed: refreshing it re-indexes the anchors only, where a
           column of ``fts`` made FTS5 delete and re-insert the whole page (0.6 ms a page,
           0.76 refreshes a page during a crawl; docs/benchmarks.md). Queries evaluate each
           term over both tables (skitter.search.compile) and add the two BM25 scores.
    vocab, vocab_a  fts5vocab(fts, row), fts5vocab(fta, row): stem -> documents, occurrences
    words  (word, stem, len, n): surface words (not stemmed) with their occurrence counts, for
           "did you mean" (suggestions are shown as words, not as stems)
    anchors (dst PRIMARY KEY, n, text): the incoming anchor text of every link target, as read
           from ``links`` (the first ``MAX_ANCHORS`` links by rowid, self-links and empty anchors
           left out), raw. ``crawl.db`` has no index on ``links.dst``: at 18 links a page, its
           random inserts were a fifth of the crawl's bytes written (docs/benchmarks.md), so the
           indexer gathers the anchors here from the append-only table, in rowid ranges.

What is indexed: every row of ``pages`` whose fetch is not ``noindex`` and not an exact duplicate
(``fetches.duplicate_of`` is null). Near duplicates are indexed with ``family`` = the fingerprint
of their ``near_duplicate_of`` URL (everybody else: their own fp), so results can show one page
per family. ``date`` is the page's Last-Modified when the crawl stored one, else the fetch time
(ISO 8601, UTC).

Incremental updates (:meth:`Indexer.update`), safe while a crawl runs and safe to run from any
number of processes at once (they serialise on ``index.db``'s write lock):

1. anchors: links are an append-only table; ``meta.last_link`` is the highest ``links.rowid``
   already seen. Newer links are added to the ``anchors`` table, and indexed pages that are the
   ``dst`` of one get their ``anchors`` column recomputed (all incoming anchor text, self-links
   excluded, at most ``MAX_ANCHORS`` anchors).
2. pages: ``meta.last_order`` is the highest ``fetches.fetch_order`` indexed. The crawl commits
   its writes in fetch order (one transaction holds every fetch up to a point), so "every fetch
   with a higher fetch_order" is exactly what is new. A page fetched again (a recrawl gives it a
   new fetch_order) is re-indexed, or removed if it became noindex / a duplicate / not HTML.
3. marks: when the crawl's PageRank or near-duplicate columns changed (a cheap signature),
   ``docs.pagerank`` and ``docs.family`` are refreshed.

Each chunk of pages commits on its own (watermark included), so searchers see the index grow and
an interrupted update loses at most one chunk's work.

A damaged ``index.db`` (a disk error, a copy taken mid-write): all of it is made from ``crawl.db``,
so the next update removes it and starts a new index from the first fetch (:meth:`Indexer.update`,
``UpdateStats.damaged``).
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, UTC
from pathlib import Path
from collections.abc import Callable, Iterator

from ..errors import CrawlDirError, UsageError
from ..httpdate import parse_http_date
from ..store.db import DB_NAME, check_integrity, connect
from ..store.text import deflate, inflate, page_text
from ..urlhash import fingerprint   # not skitter.urls: the index process needs no URL parser
from . import analyze

INDEX_NAME = "index.db"
INDEX_VERSION = 6   # 6: analyze.GAP between a field's pieces; 5: anchor text in a table of its own (an
                    # older index is rebuilt by its next update)
COLUMNS = ("title", "meta", "headings", "url", "anchors", "body")   # the fields a query names
MAIN = tuple(c for c in COLUMNS if c != "anchors")                    # the columns of ``fts``
MAX_ANCHORS = 500
LINK_BATCH = 100_000   # links whose anchors an update gathers at a time (the live steps: step.LIVE_LINK_BATCH)
ANCHOR_SEP = " \n "   # between two anchors of a target in the ``anchors`` table
CHUNK = 500
_SQLITE_CORRUPT_VTAB = 267   # FTS5's "corrupt" (SQLITE_CORRUPT | 1 << 8): only index.db has FTS5 tables
REFRESH_BATCH = 250    # anchor refreshes: the stored columns of this many pages in memory at once

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    fp INTEGER PRIMARY KEY,
    url TEXT NOT NULL,
    host TEXT NOT NULL,
    hostport TEXT NOT NULL,
    title TEXT,
    date TEXT,
    family INTEGER NOT NULL,
    pagerank REAL,
    fetch_order INTEGER,
    cols BLOB NOT NULL,
    n_anchors INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS docs_family ON docs (family);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    {", ".join(MAIN)}, content = '', tokenize = 'unicode61 remove_diacritics 0', detail = full
);
CREATE VIRTUAL TABLE IF NOT EXISTS fta USING fts5(
    anchors, tokenize = 'unicode61 remove_diacritics 0', detail = full
);
CREATE VIRTUAL TABLE IF NOT EXISTS vocab USING fts5vocab(fts, row);
CREATE VIRTUAL TABLE IF NOT EXISTS vocab_a USING fts5vocab(fta, row);
CREATE TABLE IF NOT EXISTS words (
    word TEXT PRIMARY KEY, stem TEXT NOT NULL, len INTEGER NOT NULL, n INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS words_len ON words (len, n);
CREATE TABLE IF NOT EXISTS anchors (dst INTEGER PRIMARY KEY, n INTEGER NOT NULL, text TEXT NOT NULL);
"""


class IndexMissingError(UsageError):
    """``skitter search`` on a crawl directory that has no (or an unusable) index."""


@dataclass
class UpdateStats:
    indexed: int = 0          # pages added or re-indexed
    removed: int = 0          # pages taken out (noindex, duplicate, no longer HTML)
    skipped: int = 0          # new fetches that are not indexed (noindex, duplicate, no page)
    anchors_refreshed: int = 0
    marks_refreshed: bool = False
    damaged: str | None = None  # the index was damaged, removed and started again: why (a warning)
    seconds: float = 0.0
    docs: int = 0             # documents in the index afterwards

    @property
    def rate(self) -> float:
        return self.indexed / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["rate"] = round(self.rate, 1)
        return d


@dataclass
class _Prepared:
    """A chunk read and analysed, ready to be written (Indexer._prepare_chunk)."""
    after: int                 # the watermark it was read after
    last_order: int            # the watermark once it is written
    docs: list = field(default_factory=list)        # rows of the docs table
    texts: dict = field(default_factory=dict)       # fp -> the page's own analysed columns (MAIN)
    anchors: dict = field(default_factory=dict)     # fp -> its analysed anchor text ('' if none)
    gone: list = field(default_factory=list)        # fps not indexed (noindex, duplicate, no page)
    surface: dict = field(default_factory=dict)     # word -> occurrences, for the words table


def index_path(crawl_dir: Path | str) -> Path:
    return Path(crawl_dir) / INDEX_NAME


def open_index(crawl_dir: Path | str, *, readonly: bool = True, cache_kb: int = 64000) -> sqlite3.Connection:
    """A connection to ``DIR/index.db``. Read-only opens raise IndexMissingError when there is no
    index; writable opens create it. ``cache_kb``: SQLite's page cache for it (KiB)."""
    crawl_dir = Path(crawl_dir)
    path = index_path(crawl_dir)
    if readonly:
        if not (crawl_dir / DB_NAME).exists():
            raise CrawlDirError(f"{crawl_dir} is not a crawl directory (no {DB_NAME})")
        if not path.exists():
            raise IndexMissingError(f"{crawl_dir} has no search index: run `skitter index {crawl_dir}`")
        uri = f"file:{path}?mode=ro"
    else:
        uri = f"file:{path}"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 30000")
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
            # OFF (no fsync) was measured and not kept: 2 % less wall time, about 4 MB more peak RSS
            # in the live index process (docs/benchmarks.md, "What the index costs")
            conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"PRAGMA cache_size = -{int(cache_kb)}")
        if readonly:
            row = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
            if row is None or json.loads(row[0]) != INDEX_VERSION:
                conn.close()
                raise IndexMissingError(f"the search index in {crawl_dir} is from another version: "
                                        f"run `skitter index {crawl_dir}`")
    except sqlite3.Error as exc:
        raise IndexMissingError(f"cannot open the search index {path}: {exc}"
                                f" (`skitter index {crawl_dir}` builds it again)") from exc
    return conn


def _iso(value: str | None) -> str | None:
    """'YYYY-MM-DDTHH:MM:SS' (UTC) from an ISO 8601 or an HTTP date, or None."""
    if not value:
        return None
    try:
        if value[:4].isdigit():
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        else:
            dt = parse_http_date(value)
    except (ValueError, TypeError, IndexError):
        return None
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC).replace(tzinfo=None)
    return dt.strftime("%Y-%m-%dT%H:%M:%S")


def _split_host(url: str) -> tuple[str, str]:
    rest = url.split("://", 1)[-1]
    hostport = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    hostport = hostport.rsplit("@", 1)[-1].lower()
    if hostport.startswith("["):
        host = hostport.split("]", 1)[0] + "]"
    else:
        host = hostport.split(":", 1)[0]
    return host, hostport


class Indexer:
    """Builds and updates ``DIR/index.db`` from ``DIR/crawl.db``.

    >>> Indexer(crawl_dir).update()    # index what is new (call it as often as you like)
    >>> Indexer(crawl_dir).rebuild()   # from scratch
    """

    def __init__(self, crawl_dir: Path | str, *, chunk: int = CHUNK, cache_kb: int = 64000,
                 link_batch: int = LINK_BATCH) -> None:
        """``link_batch``: links whose anchors are gathered at a time (:func:`_ingest_anchors`):
        the memory of an update's anchor work is about that many links' text and their targets'
        anchor counts (SQLite appends the text)."""
        self.crawl_dir = Path(crawl_dir)
        self.crawl_path = self.crawl_dir / DB_NAME
        if not self.crawl_path.exists():
            raise CrawlDirError(f"{self.crawl_dir} is not a crawl directory (no {DB_NAME})")
        self.chunk = chunk
        self.cache_kb = cache_kb
        self.link_batch = link_batch
        self._conns: tuple[sqlite3.Connection, sqlite3.Connection] | None = None
        self._damaged: str | None = None   # what _start_again did, for the next update's stats

    # -- connections -------------------------------------------------------------------------
    def connect(self) -> None:
        """Keep the two connections open between updates (the live indexer's small steps: the
        index's page cache survives from one step to the next) until :meth:`close`."""
        if self._conns is None:
            self._conns = self._open_or_start_again()

    def close(self) -> None:
        if self._conns is not None:
            crawl, idx = self._conns
            self._conns = None
            idx.close()
            crawl.close()

    def _open(self) -> tuple[sqlite3.Connection, sqlite3.Connection]:
        crawl = connect(self.crawl_path, readonly=True)
        try:
            crawl.execute("SELECT 1 FROM pages LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            crawl.close()
            raise CrawlDirError(f"cannot read the crawl database {self.crawl_path}: {exc}") from None
        idx = open_index(self.crawl_dir, readonly=False, cache_kb=self.cache_kb)
        idx.executescript(SCHEMA)
        if _get(idx, "version") is None:
            _set(idx, "version", INDEX_VERSION)
            _set(idx, "analyzer", _analyzer_id())
            _merge_settings(idx)
        elif _get(idx, "version") in (3, 4):   # anchor text was a column of fts: index again
            _restart(idx)
        if _get(idx, "version") != INDEX_VERSION or _get(idx, "analyzer") != _analyzer_id():
            idx.close()
            crawl.close()
            raise IndexMissingError(f"the search index in {self.crawl_dir} was built differently: "
                                    f"run `skitter index {self.crawl_dir}`")
        return crawl, idx

    # -- public ------------------------------------------------------------------------------
    def rebuild(self, *, progress: Callable[[UpdateStats], None] | None = None,
                optimize: bool = True) -> UpdateStats:
        """Drop the index and build it again from the whole crawl. An index.db that is no SQLite
        database (or a damaged one) is deleted first."""
        self._check_crawl()   # before the index is dropped: a damaged crawl.db could not make it again
        path = index_path(self.crawl_dir)
        if path.exists() and not _is_sqlite(path):
            _remove_index(path)
        try:
            idx = open_index(self.crawl_dir, readonly=False)
            try:
                _drop_all(idx)
                idx.execute("VACUUM")
            finally:
                idx.close()
        except (sqlite3.DatabaseError, IndexMissingError) as exc:   # a damaged database: start from nothing
            if not _corrupt(exc):
                raise
            _remove_index(path)
        return self.update(progress=progress, optimize=optimize, pipelined=True)

    def _check_crawl(self) -> None:
        """CrawlDirError unless crawl.db passes SQLite's quick check (a pass over the file: seconds
        for a large crawl, a rebuild takes longer)."""
        crawl = connect(self.crawl_path, readonly=True)
        try:
            check_integrity(crawl, self.crawl_path, " (the search index was left as it was)")
        finally:
            crawl.close()

    def update(self, *, progress: Callable[[UpdateStats], None] | None = None,
               optimize: bool = False, max_pages: int | None = None,
               exact_anchors: bool = True, marks: bool = True, pipelined: bool = False) -> UpdateStats:
        """Index what the crawl stored since the last update (at most about ``max_pages`` pages:
        whole chunks). Returns what was done.

        A damaged ``index.db`` is removed, and this update starts a new index from the crawl's
        first fetch (``stats.damaged`` says so). A damaged ``crawl.db`` raises, as before.

        ``exact_anchors=False`` (for the updates during a crawl and the one when it stops)
        refreshes the anchor text of a page only when its number of incoming anchors at least
        doubled since it was indexed; the default brings every page's anchors up to date, as a
        rebuild would. ``marks=False`` leaves PageRank and near-duplicate families for a later
        update (their check reads every fetch: the live indexer's steps skip it).
        ``pipelined=True`` (without ``max_pages``) analyses the next chunk in a thread while
        writing this one: for a core that would idle (:meth:`_index_pipelined`)."""
        def run() -> UpdateStats:
            return self._update(progress=progress, optimize=optimize, max_pages=max_pages,
                                exact_anchors=exact_anchors, marks=marks, pipelined=pipelined)

        kept = self._conns is not None
        try:
            return run()
        except (sqlite3.DatabaseError, IndexMissingError) as exc:
            self.close()
            self._start_again(exc)
        if kept:
            self.connect()
        return run()

    def _open_or_start_again(self) -> tuple[sqlite3.Connection, sqlite3.Connection]:
        try:
            return self._open()
        except (sqlite3.DatabaseError, IndexMissingError) as exc:   # the latter: index.db would not open
            self._start_again(exc)
        return self._open()

    def _start_again(self, exc: Exception) -> None:
        """After ``exc``: remove a damaged ``index.db`` and note it for the next update's stats
        (``UpdateStats.damaged``), so that the next open starts a new index; re-raise ``exc`` if
        the index is not damaged."""
        if not self._index_damaged(exc):
            raise exc
        why = f" ({exc})" if isinstance(exc, sqlite3.Error) else ""
        self._damaged = f"the search index {index_path(self.crawl_dir)} was damaged{why}: made again from the crawl"
        _remove_index(index_path(self.crawl_dir))

    def _index_damaged(self, exc: Exception) -> bool:
        """Whether ``exc`` (raised by an update) comes from a damaged ``index.db``: SQLite said
        "corrupt" or "not a database" and either FTS5 said it (crawl.db has no FTS5 table) or
        index.db fails SQLite's quick check. A locked, unreadable or full index is not damaged."""
        if not _corrupt(exc):
            return False
        if getattr(exc, "sqlite_errorcode", None) == _SQLITE_CORRUPT_VTAB:
            return True
        path = index_path(self.crawl_dir)
        if not path.exists():
            return False
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
            try:
                row = conn.execute("PRAGMA quick_check(1)").fetchone()
            finally:
                conn.close()
        except sqlite3.Error as check:
            return _corrupt(check)
        return row is None or row[0] != "ok"

    def _update(self, *, progress: Callable[[UpdateStats], None] | None, optimize: bool,
                max_pages: int | None, exact_anchors: bool, marks: bool, pipelined: bool) -> UpdateStats:
        t0 = time.perf_counter()
        stats = UpdateStats()
        conns = self._conns if self._conns is not None else self._open_or_start_again()
        stats.damaged = self._damaged   # cleared when these stats are returned: said once
        kept = self._conns is not None
        crawl, idx = conns
        try:
            more = True
            if max_pages is None:
                self._refresh_anchors(crawl, idx, stats, exact_anchors)
            else:   # a step of the live index: the anchors and the first chunk in one transaction
                with _write_tx(idx):
                    self._anchors(crawl, idx, stats, exact_anchors)
                    more = self._chunk(crawl, idx, stats)
            if pipelined and max_pages is None:
                self._index_pipelined(crawl, idx, stats, progress, t0)
            while more and (max_pages is None or stats.indexed < max_pages):
                if not self._index_chunk(crawl, idx, stats):
                    break
                stats.seconds = time.perf_counter() - t0
                if progress is not None:
                    progress(stats)
            if marks:
                self._refresh_marks(crawl, idx, stats)
            if optimize:
                idx.execute("INSERT INTO fts (fts) VALUES ('optimize')")
                idx.execute("INSERT INTO fta (fta) VALUES ('optimize')")
            stats.docs = _get(idx, "n_docs", 0) if kept else idx.execute("SELECT count(*) FROM docs").fetchone()[0]
        except BaseException:
            if kept:        # a step that failed: the next one opens afresh
                self._conns = None
                kept = False
            raise
        finally:
            if idx.in_transaction:
                idx.execute("ROLLBACK")
            if not kept:
                idx.close()
                crawl.close()
        stats.seconds = time.perf_counter() - t0
        self._damaged = None
        return stats

    def status(self) -> dict:
        """How far the index is behind the crawl (for `skitter search` notes and the web UI)."""
        crawl = connect(self.crawl_path, readonly=True)
        try:
            max_order = crawl.execute("SELECT coalesce(max(fetch_order), 0) FROM fetches").fetchone()[0]
        finally:
            crawl.close()
        try:
            idx = open_index(self.crawl_dir, readonly=True)
        except IndexMissingError:
            return {"exists": False, "docs": 0, "last_order": 0, "crawl_order": max_order}
        try:
            return {"exists": True, "docs": idx.execute("SELECT count(*) FROM docs").fetchone()[0],
                    "last_order": _get(idx, "last_order", 0), "crawl_order": max_order,
                    "anchors_pending": bool(_get(idx, "anchors_pending", False))}
        finally:
            idx.close()

    # -- phases ------------------------------------------------------------------------------
    def _refresh_anchors(self, crawl: sqlite3.Connection, idx: sqlite3.Connection,
                         stats: UpdateStats, exact: bool) -> None:
        """Recompute the anchors column of indexed pages that gained links (see the module doc:
        ``exact`` refreshes every page whose anchor count changed, else only those whose count
        at least doubled)."""
        with _write_tx(idx):
            self._anchors(crawl, idx, stats, exact)

    def _anchors(self, crawl: sqlite3.Connection, idx: sqlite3.Connection, stats: UpdateStats,
                 exact: bool) -> None:
        """:meth:`_refresh_anchors` in the caller's write transaction."""
        last_link = _get(idx, "last_link", 0)
        pending = _get(idx, "anchors_pending", False)
        with _snapshot(crawl):
            max_link = crawl.execute("SELECT coalesce(max(rowid), 0) FROM links").fetchone()[0]
            counts = _ingest_anchors(crawl, idx, last_link, max_link, self.link_batch)
        targets: list[int] = []
        if exact and (pending or counts):
            targets = [fp for (fp,) in idx.execute(
                "SELECT d.fp FROM docs d LEFT JOIN anchors a ON a.dst = d.fp"
                " WHERE coalesce(a.n, 0) != d.n_anchors")]
            pending = False
        elif counts:
            grown = sorted(counts)
            for i in range(0, len(grown), 500):
                part = grown[i:i + 500]
                for fp, n in idx.execute(
                        f"SELECT fp, n_anchors FROM docs WHERE fp IN ({','.join('?' * len(part))})", part):
                    c = counts[fp]
                    if c >= max(1, 2 * n) and c != n:
                        targets.append(fp)
                    elif c != n:
                        pending = True
        targets.sort()
        for i in range(0, len(targets), REFRESH_BATCH):   # memory: a batch's anchors at a time
            part = targets[i:i + REFRESH_BATCH]
            marks = ",".join("?" * len(part))
            present = [fp for (fp,) in idx.execute(f"SELECT fp FROM docs WHERE fp IN ({marks})", part)]
            anchors = _anchor_texts(idx, present)
            # only the anchor text is indexed again: the page's own columns stay as they are
            _fta_delete(idx, present)
            _fta_insert(idx, {fp: a for fp, (a, _) in anchors.items()})
            idx.executemany("UPDATE docs SET n_anchors = ? WHERE fp = ?",
                            [(anchors.get(fp, ("", 0))[1], fp) for fp in present])
            stats.anchors_refreshed += len(present)
        _set(idx, "last_link", max_link)
        _set(idx, "anchors_pending", pending)

    def _index_chunk(self, crawl: sqlite3.Connection, idx: sqlite3.Connection, stats: UpdateStats) -> bool:
        """Index the next chunk of fetches (in fetch order). False when there was nothing new."""
        with _write_tx(idx):
            return self._chunk(crawl, idx, stats)

    def _chunk(self, crawl: sqlite3.Connection, idx: sqlite3.Connection, stats: UpdateStats) -> bool:
        """:meth:`_index_chunk` in the caller's write transaction."""
        p = self._prepare_chunk(crawl, idx, _get(idx, "last_order", 0))
        if p is None:
            return False
        self._write_chunk(idx, p, stats)
        return True

    def _index_pipelined(self, crawl: sqlite3.Connection, idx: sqlite3.Connection, stats: UpdateStats,
                         progress: Callable[[UpdateStats], None] | None, t0: float) -> None:
        """Every chunk left, each read and analysed in a thread while the one before is written:
        the analysis is mostly the compiled analyzer and zlib, the writing mostly SQLite, which
        lets the other thread run; with a core to spare (the crawl's last update, a rebuild) it
        takes a quarter less time (the 15,000-page benchmark crawl at once: 10.3 instead of 13.6 s,
        the same CPU). Chunks commit in order as :meth:`_index_chunk` commits them; if another
        updater moved the watermark meanwhile, the rest goes chunk by chunk."""
        from concurrent.futures import ThreadPoolExecutor

        conns: list[sqlite3.Connection] = []

        def prepare(after: int) -> _Prepared | None:
            if not conns:   # the thread's own connections (read-only)
                conns.append(connect(self.crawl_path, readonly=True))
                conns.append(open_index(self.crawl_dir, readonly=True, cache_kb=2000))
            return self._prepare_chunk(conns[0], conns[1], after)

        pool = ThreadPoolExecutor(1)
        try:
            fut = pool.submit(prepare, _get(idx, "last_order", 0))
            while True:
                p = fut.result()
                if p is None:
                    return
                fut = pool.submit(prepare, p.last_order)
                with _write_tx(idx):
                    if _get(idx, "last_order", 0) != p.after:
                        break
                    self._write_chunk(idx, p, stats)
                stats.seconds = time.perf_counter() - t0
                if progress is not None:
                    progress(stats)
        finally:
            fut.cancel()
            pool.shutdown(wait=True)
            for c in conns:
                c.close()
        while self._index_chunk(crawl, idx, stats):
            stats.seconds = time.perf_counter() - t0
            if progress is not None:
                progress(stats)

    def _prepare_chunk(self, crawl: sqlite3.Connection, idx: sqlite3.Connection, after: int) -> _Prepared | None:
        """Read the chunk of fetches after fetch order ``after`` and analyse its pages (reads only:
        the anchors come from ``idx``'s anchors table). None when there is nothing new."""
        with _snapshot(crawl):
            rows = crawl.execute(
                "SELECT f.fp, f.fetch_order, f.url, f.fetched_at, f.noindex, f.duplicate_of,"
                " f.near_duplicate_of, f.pagerank, p.fp, p.title, p.description, p.keywords,"
                " p.headings, p.text, p.last_modified"
                " FROM fetches f LEFT JOIN pages p ON p.fp = f.fp"
                " WHERE f.fetch_order > ? ORDER BY f.fetch_order LIMIT ?", (after, self.chunk)).fetchall()
        if not rows:
            return None
        p = _Prepared(after, rows[-1][1])
        keep = [r for r in rows if r[8] is not None and not r[4] and not r[5]]
        anchors = _anchor_texts(idx, [r[0] for r in keep])
        for (fp, order, url, fetched_at, noindex, dup, near, pr, page_fp, title, desc, kw,
             heads, text, last_mod) in rows:
            if page_fp is None or noindex or dup:
                p.gone.append(fp)
                continue
            host, hostport = _split_host(url)
            family = fingerprint(near) if near else fp
            date = _iso(last_mod) or _iso(fetched_at)
            # the description and keywords, and each heading, are pieces of their field
            cols = [analyze.column(title, p.surface) if title else "",
                    analyze.pieces([desc, kw], p.surface),
                    analyze.pieces(heads.split("\n"), p.surface) if heads else "",
                    analyze.column(body, p.surface) if (body := page_text(text)) else ""]
            url_text = analyze.column(analyze.url_words(url), {})
            a_text, a_n = anchors.get(fp, ("", 0))
            p.texts[fp] = (cols[0], cols[1], cols[2], url_text, cols[3])   # MAIN's order
            p.anchors[fp] = a_text
            p.docs.append((fp, url, host, hostport, title, date, family, pr, order, _pack(p.texts[fp]), a_n))
        return p

    def _write_chunk(self, idx: sqlite3.Connection, p: _Prepared, stats: UpdateStats) -> None:
        """Write a prepared chunk (in the caller's write transaction), watermark included."""
        # a page fetched again (recrawl) replaces what was there, or leaves the index
        touched = p.gone + [d[0] for d in p.docs]
        present = _stored_columns(idx, touched)
        if present:
            _fts_delete(idx, present)
            _fta_delete(idx, list(present))
            idx.executemany("DELETE FROM docs WHERE fp = ?", [(fp,) for fp in present])
            stats.removed += len(set(present).intersection(p.gone))
        idx.executemany("INSERT INTO docs (fp, url, host, hostport, title, date, family, pagerank,"
                        " fetch_order, cols, n_anchors) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", p.docs)
        _fts_insert(idx, p.texts)
        _fta_insert(idx, p.anchors)
        if p.surface:
            stems = analyze.index_stem_words(list(p.surface))
            idx.executemany(
                "INSERT INTO words (word, stem, len, n) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (word) DO UPDATE SET n = n + excluded.n",
                [(w, s, len(w), n) for (w, n), s in zip(p.surface.items(), stems)])
        stats.indexed += len(p.docs)
        stats.skipped += len(p.gone)
        _set(idx, "n_docs", _get(idx, "n_docs", 0) + len(p.docs) - len(present))
        _set(idx, "last_order", p.last_order)

    def refresh_marks(self) -> bool:
        """Bring the indexed pages' PageRank and near-duplicate families up to date with crawl.db
        (``skitter rank`` calls it: search ranks by the new PageRank at once), without indexing
        new pages. Whether anything changed."""
        stats = UpdateStats()
        # (not through _open, which starts an index of an older version again, dropping its pages)
        crawl = connect(self.crawl_path, readonly=True)
        try:
            idx = open_index(self.crawl_dir, readonly=False, cache_kb=self.cache_kb)
            try:
                if _get(idx, "version") != INDEX_VERSION or _get(idx, "analyzer") != _analyzer_id():
                    raise IndexMissingError(f"the search index in {self.crawl_dir} was built differently: "
                                            f"run `skitter index {self.crawl_dir}`")
                self._refresh_marks(crawl, idx, stats)
            finally:
                idx.close()
        finally:
            crawl.close()
        return stats.marks_refreshed

    def _refresh_marks(self, crawl: sqlite3.Connection, idx: sqlite3.Connection, stats: UpdateStats) -> None:
        """PageRank and near-duplicate families, when the crawl's columns changed."""
        # (a mark a recrawl moved keeps the count: the newest marked fetch's order tells it)
        sig = list(crawl.execute("SELECT count(pagerank), total(pagerank), max(pagerank),"
                                 " count(near_duplicate_of),"
                                 " max(CASE WHEN near_duplicate_of IS NOT NULL THEN fetch_order END)"
                                 " FROM fetches").fetchone())
        with _write_tx(idx):
            if _get(idx, "marks_sig") != sig:
                rows = crawl.execute("SELECT fp, pagerank, near_duplicate_of FROM fetches"
                                     " WHERE pagerank IS NOT NULL OR near_duplicate_of IS NOT NULL").fetchall()
                families = _families({fp: fingerprint(near) for fp, _, near in rows if near})
                idx.execute("UPDATE docs SET pagerank = NULL, family = fp"
                            " WHERE pagerank IS NOT NULL OR family != fp")
                idx.executemany("UPDATE docs SET pagerank = ?, family = ? WHERE fp = ?",
                                [(pr, families.get(fp, fp), fp) for fp, pr, _ in rows])
                max_pr = idx.execute("SELECT max(pagerank) FROM docs").fetchone()[0]
                _set(idx, "max_pagerank", max_pr)
                _set(idx, "marks_sig", sig)
                stats.marks_refreshed = True


def _families(up: dict[int, int]) -> dict[int, int]:
    """Each marked page's family: the end of its chain of near-duplicate marks (``up``: page →
    the page it was marked against). The crawl marks a page against its family's original, but a
    recrawled original may since have been marked against another page (its family follows it),
    and a distributed worker may mark against a page whose own mark another has not stored yet.
    A loop's pages (older crawls) are one family, named by its smallest fingerprint."""
    out: dict[int, int] = {}
    for start in up:
        path: list[int] = []
        on_path: set[int] = set()
        x = start
        while x in up and x not in out and x not in on_path:
            path.append(x)
            on_path.add(x)
            x = up[x]
        if x in out:
            end = out[x]
        elif x in on_path:   # a loop: from x round to x
            end = min(path[path.index(x):])
        else:
            end = x
        for y in path:
            out[y] = end
    return out


def lag_note(status: dict, directory: str | Path) -> str | None:
    """What a searcher should know of the index :meth:`Indexer.status` describes: how far behind
    the crawl it is (after a crawl killed during its last update, all of it), or that some anchor
    text is partial; None when it is exact. The CLI prints it, the web UI shows it."""
    behind = status["crawl_order"] - status["last_order"]
    if status["exists"] and behind > 0:
        return (f"the index is {behind:,} fetch{'' if behind == 1 else 'es'} behind the crawl "
                f"(`skitter index {directory} --update` catches up; a crawl running with its live index "
                "does so by itself)")
    if status.get("anchors_pending"):
        return ("the anchor text of some pages is partial, as the crawl left it "
                f"(`skitter index {directory} --update` completes it)")
    return None


def update_index(crawl_dir: str | Path, exact_anchors: bool = False) -> dict:
    """``Indexer(crawl_dir).update()`` as a plain function returning a plain dict, for a worker
    process during a crawl (``await pool.submit(update_index, str(directory))``, skitter.procpool). Anchor
    text is refreshed lazily (a page's when its incoming anchors doubled) unless
    ``exact_anchors``: pass True for the last call, when the crawl ends."""
    return Indexer(crawl_dir).update(exact_anchors=exact_anchors).as_dict()


def _is_sqlite(path: Path) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(16)
    return head == b"SQLite format 3\x00" or head == b""


def _corrupt(exc: BaseException) -> bool:
    """Whether SQLite said the file is corrupt or not a database (for an IndexMissingError from
    :func:`open_index`: the SQLite error it wraps)."""
    if isinstance(exc, IndexMissingError):
        exc = exc.__cause__   # type: ignore[assignment]
    code = getattr(exc, "sqlite_errorcode", None) if isinstance(exc, sqlite3.Error) else None
    return code is not None and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def _remove_index(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _pack(cols: tuple[str, ...]) -> bytes:
    """The analysed columns as one zlib stream (ISA-L: a quarter of zlib's CPU at level 1)."""
    return deflate("\x1f".join(cols).encode(), 1)


def _unpack(blob: bytes) -> tuple[str, ...]:
    return tuple(inflate(blob).decode().split("\x1f"))


def _stored_columns(idx: sqlite3.Connection, fps: list[int]) -> dict[int, tuple[str, ...]]:
    """The analysed columns indexed for those of ``fps`` that are in the index."""
    out = {}
    for i in range(0, len(fps), 500):
        part = fps[i:i + 500]
        for fp, blob in idx.execute(f"SELECT fp, cols FROM docs WHERE fp IN ({','.join('?' * len(part))})", part):
            out[fp] = _unpack(blob)
    return out


def stored_columns(crawl_dir: Path | str) -> dict[int, tuple[str, ...]]:
    """{fp: the six analysed columns as indexed, in COLUMNS' order} of the whole index (tests,
    debugging): the page's own from ``docs.cols``, the anchors from ``fta``."""
    idx = open_index(crawl_dir)
    a = COLUMNS.index("anchors")
    try:
        anchors = dict(idx.execute("SELECT rowid, anchors FROM fta"))
        out = {}
        for fp, blob in idx.execute("SELECT fp, cols FROM docs"):
            cols = list(_unpack(blob))
            cols.insert(a, anchors.get(fp, ""))
            out[fp] = tuple(cols)
        return out
    finally:
        idx.close()


_COLS = ", ".join(MAIN)
_TABLES = ("vocab", "vocab_a", "fts", "fta", "docs", "words", "anchors", "meta")


# In rowid order: FTS5 keeps a transaction's postings in memory only while the rowids it is given
# increase; a smaller rowid flushes them to a new segment. Rowids are URL fingerprints, random in
# fetch order: unsorted, about every other row of a chunk started a new segment, which FTS5 then
# merged (sorted, the inserts take 40 % less CPU: 0.14 instead of 0.23 ms a 25 KB page).

def _fts_insert(idx: sqlite3.Connection, rows: dict[int, tuple[str, ...]]) -> None:
    idx.executemany(f"INSERT INTO fts (rowid, {_COLS}) VALUES (?, ?, ?, ?, ?, ?)",
                    [(fp, *rows[fp]) for fp in sorted(rows)])


def _fts_delete(idx: sqlite3.Connection, rows: dict[int, tuple[str, ...]]) -> None:
    """Remove rows from the contentless table: FTS5's 'delete' with the values indexed."""
    idx.executemany(f"INSERT INTO fts (fts, rowid, {_COLS}) VALUES ('delete', ?, ?, ?, ?, ?, ?)",
                    [(fp, *rows[fp]) for fp in sorted(rows)])


def _fta_insert(idx: sqlite3.Connection, texts: dict[int, str]) -> None:
    """Index anchor texts (a page without any has no row), in rowid order as :func:`_fts_insert`."""
    idx.executemany("INSERT INTO fta (rowid, anchors) VALUES (?, ?)",
                    [(fp, texts[fp]) for fp in sorted(texts) if texts[fp]])


def _fta_delete(idx: sqlite3.Connection, fps: list[int]) -> None:
    """Remove the anchor text of these pages (``fta`` keeps its content: FTS5 finds what to
    remove itself)."""
    idx.executemany("DELETE FROM fta WHERE rowid = ?", [(fp,) for fp in sorted(fps)])


# the links whose anchor text counts for the page they point to
_ANCHOR_LINK = "src != dst AND anchor IS NOT NULL AND anchor != ''"


def _ingest_anchors(crawl: sqlite3.Connection, idx: sqlite3.Connection, last_link: int,
                    max_link: int, batch: int = LINK_BATCH) -> dict[int, int]:
    """Add the anchors of the links with ``last_link < rowid <= max_link`` to the ``anchors``
    table (in rowid order, up to ``MAX_ANCHORS`` a target), ``batch`` rowids at a time (a rebuild
    of a large crawl never holds all its anchor text). Returns {dst: its anchor count now} of the
    targets that gained anchors."""
    counts: dict[int, int] = {}
    lo = last_link
    while lo < max_link:
        hi = min(max_link, lo + batch)
        new: dict[int, list[str]] = {}
        for dst, anchor in crawl.execute(
                f"SELECT dst, anchor FROM links WHERE rowid > ? AND rowid <= ? AND {_ANCHOR_LINK}"
                " ORDER BY rowid", (lo, hi)):
            new.setdefault(dst, []).append(anchor)
        dsts = sorted(new)
        have: dict[int, int] = {}   # the targets' counts: their texts stay in SQLite, which appends
        for i in range(0, len(dsts), 500):
            part = dsts[i:i + 500]
            have.update(idx.execute(f"SELECT dst, n FROM anchors WHERE dst IN ({','.join('?' * len(part))})", part))
        rows = []
        for dst in dsts:
            n = have.get(dst, 0)
            add = new[dst][:max(0, MAX_ANCHORS - n)]
            if add:
                rows.append((dst, len(add), ANCHOR_SEP.join(add)))
                counts[dst] = n + len(add)
        idx.executemany("INSERT INTO anchors (dst, n, text) VALUES (?1, ?2, ?3) ON CONFLICT (dst)"
                        " DO UPDATE SET n = n + excluded.n, text = text || ?4 || excluded.text",
                        [(*row, ANCHOR_SEP) for row in rows])
        lo = hi
    return counts


def _anchor_texts(idx: sqlite3.Connection, fps: list[int]) -> dict[int, tuple[str, int]]:
    """{fp: (analysed anchor text, number of links used)} for those of ``fps`` that have anchors
    (from the ``anchors`` table: the first MAX_ANCHORS links to each, by rowid)."""
    out: dict[int, tuple[str, int]] = {}
    for i in range(0, len(fps), 500):
        part = fps[i:i + 500]
        for dst, n, text in idx.execute(
                f"SELECT dst, n, text FROM anchors WHERE dst IN ({','.join('?' * len(part))})", part):
            out[dst] = (analyze.pieces(text.split(ANCHOR_SEP), {}), n)   # each link's anchor a piece
    return out


# FTS5's merge policy for the page table (kept in its config): a level's segments are merged when
# there are AUTOMERGE of them (FTS5's default: 4), and at CRISISMERGE at once (default 16). Every
# transaction adds a segment (the live index commits a step a second), and with the defaults the
# merges rewrote the postings about three times over a crawl: 16 and 64 take an eighth less of the
# index's CPU (14.5 -> 12.8 s for the benchmark crawl's 19,647 pages in steps of 250) for query
# times within 3 % (docs/benchmarks.md, "The live index"). ``skitter index`` still ends with
# 'optimize' (one segment).
AUTOMERGE = 16
CRISISMERGE = 64


def _merge_settings(idx: sqlite3.Connection) -> None:
    idx.execute(f"INSERT INTO fts (fts, rank) VALUES ('automerge', {AUTOMERGE})")
    idx.execute(f"INSERT INTO fts (fts, rank) VALUES ('crisismerge', {CRISISMERGE})")


def _drop_all(idx: sqlite3.Connection) -> None:
    """Every table of the index dropped, in one transaction (a rebuild; an index of an earlier
    layout)."""
    with _write_tx(idx):
        for name in _TABLES:
            idx.execute(f"DROP TABLE IF EXISTS {name}")


def _restart(idx: sqlite3.Connection) -> None:
    """An index of an earlier layout (anchor text a column of ``fts``): dropped and made anew, so
    that this update indexes the whole crawl again."""
    _drop_all(idx)
    idx.executescript(SCHEMA)
    _set(idx, "version", INDEX_VERSION)
    _set(idx, "analyzer", _analyzer_id())
    _merge_settings(idx)


@contextmanager
def _write_tx(idx: sqlite3.Connection) -> Iterator[None]:
    """A write transaction on index.db: committed when the block ends (a ``return`` included),
    rolled back if it raises."""
    idx.execute("BEGIN IMMEDIATE")
    try:
        yield
        idx.execute("COMMIT")
    except BaseException:
        if idx.in_transaction:
            idx.execute("ROLLBACK")
        raise


@contextmanager
def _snapshot(crawl: sqlite3.Connection) -> Iterator[None]:
    """A read transaction on crawl.db: one consistent view of it for the block."""
    crawl.execute("BEGIN")
    try:
        yield
    finally:
        crawl.execute("COMMIT")


def _get(conn: sqlite3.Connection, key: str, default=None):
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return json.loads(row[0]) if row else default


def _set(conn: sqlite3.Connection, key: str, value) -> None:
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))


def _analyzer_id() -> str:
    try:   # CPython's own SHA-1: the same digest as hashlib's without loading OpenSSL, whose
        from _sha1 import sha1   # library is 3.4 MB of the live index process's memory (issue #18)
    except ImportError:  # pragma: no cover - another Python
        from hashlib import sha1

    stop = sha1(" ".join(sorted(analyze.STOP_WORDS)).encode()).hexdigest()[:12]
    return f"unicode-words/english-porter2/stop-{stop}/max{analyze.MAX_TOKEN}"


def norm_pagerank(pr: float | None, max_pr: float | None, n_docs: int) -> float:
    """PageRank mapped to [0, 1] on a log scale: log(1 + pr·N) / log(1 + max·N). PageRank is
    heavy-tailed (a few hubs hold most of it); the log keeps ordinary pages distinguishable."""
    if not pr or not max_pr or n_docs <= 0:
        return 0.0
    return math.log1p(pr * n_docs) / math.log1p(max_pr * n_docs)
