"""The crawl database: one SQLite file in the crawl directory, written by one writer.

Tables (schema version in ``meta``):

- ``meta``      key/value: schema version, the crawl's config (JSON), state, the WARC commit point.
- ``urls``      the frontier AND the URL-seen set: one row per canonical URL ever admitted, found by
                its 64-bit fingerprint ``fp``. ``state``: 0 queued (on disk; ``due``: NULL ready,
                else the epoch time it is due again), 1 leased (in the in-memory host queues or in
                flight), 2 done. A crash leaves leased rows behind; ``open`` turns them back to
                queued, so nothing is forgotten.
- ``fetches``   one row per URL the crawler tried: the export record (DESIGN.md) plus where its
                WARC records are.
- ``pages``     the parsed text fields of HTML pages (for the index and the focused strategies);
                ``text`` is deflated (:mod:`skitter.store.text`).

Row order: ``urls``, ``fetches`` and ``pages`` keep their rows in the order they were written
(``id``) and find them by ``fp`` through a unique index. Keyed by ``fp`` itself, each new row
would go into a random leaf of a table with long rows (a page's ~10 KB of text, a URL's or a
fetch's few hundred bytes), which SQLite reads back, splits and writes to the WAL at every commit
that touches it; the index entries are 20 bytes, so their leaves are few and stay in the cache
(docs/benchmarks.md: 40 % fewer syscalls on the benchmark crawl). Crawl directories keyed by fp
(older versions) keep that layout: every statement here works on both. The rest of the tables:

- ``links``     the link graph with anchor text and the link attributes of seed 004; indexed by
                ``src`` only: an index on ``dst`` cost 18 random B-tree inserts a page, a fifth of the
                crawl's bytes written (the search indexer reads anchors by rowid range instead).
- ``contents``  the content-seen test: content hash -> first URL with that body.
- ``near_sketches`` the near-duplicate index's sketches (seed 004 winnowing; skitter.dedup): one
                row (page fingerprint, sketch as a BLOB) a page, rebuilt into memory on open.
- ``robots``    robots.txt fetches per origin (status, Crawl-delay, sitemaps) for stats, and the
                Crawl-delay a resumed crawl's hosts wait before their first request.
- ``host_holds`` a host's hold from a Retry-After or a robots.txt retry (until: epoch seconds),
                written with the fetch that asked for it, kept by a resumed crawl.
- ``forms``     with ``--forms`` (issue #22, :mod:`skitter.store.forms`): every distinct form found
                (its key, page, action, method, the form with its inputs' kinds and options as
                JSON), whether it may be submitted and why not, and a searchable one's planner
                (status, submissions issued, its state: deflated JSON, saved with each commit).
- ``form_urls`` with ``--forms``: the URLs reached through a submission (the export's
                ``via_form``): the submission itself, its further result pages and the pages
                first found on them, by fingerprint.
- ``recrawl_*`` the incremental crawler's tables (:data:`RECRAWL_SCHEMA`, written through
                :mod:`skitter.store.recrawlstore`): a row per page of the collection (validators,
                checksums, change statistics, due time), one per visit (every revisit's fetch
                record), the collection's state over time, the URLs waiting outside a bounded
                collection, the sitemaps read and their hints.

Schema versions: a directory of an older schema is migrated the first time any command opens it
(:data:`MIGRATIONS`, each step in one transaction); one of a newer schema is refused. A new table
or index needs no migration: ``SCHEMA`` (all ``IF NOT EXISTS``) runs at every writable open; a
new column of an existing table does (a step in ``MIGRATIONS`` and ``SCHEMA_VERSION`` + 1).

Durability: WAL with synchronous=NORMAL survives kill -9 (only an OS crash could lose the last
commits). The crawl loop commits in small batches (see loop.py); the WARC file is flushed before the
transaction that records its end offset commits, so a crash can only leave WARC bytes *after* the
commit point, which :meth:`skitter.store.warc.WarcWriter.resume` truncates.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any
from collections.abc import Iterator

from ..errors import CrawlDirError

SCHEMA_VERSION = 4
DB_NAME = "crawl.db"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS urls (
    id INTEGER PRIMARY KEY,
    fp INTEGER NOT NULL UNIQUE,
    url TEXT NOT NULL,
    host TEXT NOT NULL,
    depth INTEGER NOT NULL,
    parent TEXT,
    priority REAL NOT NULL,
    seq INTEGER NOT NULL,
    state INTEGER NOT NULL DEFAULT 0,
    redirects INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    due REAL,
    revisit INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS urls_ready ON urls (host, priority DESC, seq) WHERE state = 0 AND due IS NULL;
CREATE INDEX IF NOT EXISTS urls_due ON urls (host, due) WHERE state = 0 AND due IS NOT NULL;
CREATE TABLE IF NOT EXISTS fetches (
    id INTEGER PRIMARY KEY,
    fp INTEGER NOT NULL UNIQUE,
    fetch_order INTEGER,
    url TEXT NOT NULL,
    final_url TEXT,
    status INTEGER,
    error TEXT,
    fetched_at TEXT,
    depth INTEGER,
    parent TEXT,
    host TEXT,
    content_type TEXT,
    content_length INTEGER,
    content_hash TEXT,
    duplicate_of TEXT,
    near_duplicate_of TEXT,
    title TEXT,
    outlinks INTEGER,
    score REAL,
    pagerank REAL,
    hub REAL,
    authority REAL,
    canonical TEXT,
    noindex INTEGER NOT NULL DEFAULT 0,
    nofollow INTEGER NOT NULL DEFAULT 0,
    elapsed REAL,
    response_time REAL,
    ip TEXT,
    warc_file TEXT,
    warc_offset INTEGER,
    warc_length INTEGER
);
CREATE INDEX IF NOT EXISTS fetches_order ON fetches (fetch_order);
CREATE TABLE IF NOT EXISTS pages (
    id INTEGER PRIMARY KEY,
    fp INTEGER NOT NULL UNIQUE,
    url TEXT NOT NULL,
    title TEXT, description TEXT, keywords TEXT, headings TEXT, text TEXT,
    lang TEXT, encoding TEXT, last_modified TEXT, etag TEXT, main_hash TEXT, main_start INTEGER
);
CREATE TABLE IF NOT EXISTS links (
    src INTEGER NOT NULL,
    dst INTEGER NOT NULL,
    dst_url TEXT NOT NULL,
    anchor TEXT,
    visibility INTEGER, position INTEGER, distance INTEGER,
    nofollow INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS links_src ON links (src);
CREATE TABLE IF NOT EXISTS contents (hash TEXT PRIMARY KEY, url TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS near_sketches (doc_id INTEGER NOT NULL, sketch BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS robots (
    origin TEXT PRIMARY KEY, fetched_at TEXT, outcome TEXT, crawl_delay REAL, sitemaps TEXT
);
CREATE TABLE IF NOT EXISTS host_holds (host TEXT PRIMARY KEY, until REAL NOT NULL);
CREATE TABLE IF NOT EXISTS forms (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    page_url TEXT NOT NULL,
    action TEXT,
    method TEXT NOT NULL,
    form TEXT NOT NULL,
    searchable INTEGER NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL,
    depth INTEGER,
    priority REAL,
    submitted INTEGER NOT NULL DEFAULT 0,
    found_at TEXT,
    planner BLOB
);
CREATE TABLE IF NOT EXISTS form_urls (
    id INTEGER PRIMARY KEY,
    fp INTEGER NOT NULL UNIQUE,
    url TEXT NOT NULL,
    via_form TEXT NOT NULL,
    form TEXT NOT NULL,
    role TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS form_urls_via ON form_urls (via_form);
"""

# The incremental crawler's tables (issue #20; skitter.store.recrawlstore writes them). New tables:
# created at every writable open, like SCHEMA's, so no migration.
RECRAWL_SCHEMA = """
CREATE TABLE IF NOT EXISTS recrawl_pages (
    fp INTEGER PRIMARY KEY,
    url TEXT NOT NULL,
    host TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'page',
    state TEXT NOT NULL DEFAULT 'live',
    in_collection INTEGER NOT NULL DEFAULT 1,
    first_visit REAL, last_visit REAL, last_change REAL,
    visits INTEGER NOT NULL DEFAULT 0, changes INTEGER NOT NULL DEFAULT 0,
    etag TEXT, last_modified TEXT, body_hash TEXT, text_hash TEXT, version_at REAL,
    n INTEGER NOT NULL DEFAULT 0, x INTEGER NOT NULL DEFAULT 0,
    lm_ok INTEGER NOT NULL DEFAULT 1, lm_x INTEGER NOT NULL DEFAULT 0, lm_t REAL NOT NULL DEFAULT 0,
    lm_time REAL, loglik BLOB,
    rate REAL, rate_low REAL, rate_high REAL, method TEXT,
    importance REAL, weight REAL NOT NULL DEFAULT 1.0, frequency REAL, due REAL,
    missing INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS recrawl_pages_host ON recrawl_pages (host);
CREATE TABLE IF NOT EXISTS recrawl_visits (
    id INTEGER PRIMARY KEY,
    fp INTEGER NOT NULL,
    at REAL NOT NULL,
    status INTEGER,
    kind TEXT NOT NULL,
    changed INTEGER,
    last_modified REAL,
    warc_file TEXT, warc_offset INTEGER, warc_length INTEGER
);
CREATE INDEX IF NOT EXISTS recrawl_visits_fp ON recrawl_visits (fp, at);
CREATE INDEX IF NOT EXISTS recrawl_visits_at ON recrawl_visits (at);
CREATE TABLE IF NOT EXISTS recrawl_log (
    at REAL NOT NULL, pages INTEGER, freshness REAL, weighted_freshness REAL, visits INTEGER,
    changes INTEGER, not_modified INTEGER, added INTEGER, discarded INTEGER, multiplier REAL, budget REAL
);
CREATE TABLE IF NOT EXISTS recrawl_outside (
    fp INTEGER PRIMARY KEY, url TEXT NOT NULL, host TEXT NOT NULL, depth INTEGER, parent TEXT,
    priority REAL, since REAL
);
CREATE TABLE IF NOT EXISTS recrawl_sitemaps (
    fp INTEGER PRIMARY KEY, url TEXT NOT NULL, origin TEXT NOT NULL, read_at REAL, kind TEXT,
    entries INTEGER, error TEXT
);
CREATE TABLE IF NOT EXISTS recrawl_hints (
    fp INTEGER PRIMARY KEY, changefreq TEXT, lastmod REAL, read_at REAL
);
"""

# The export record's fields, in DESIGN.md's order (the contract), then our extra fields.
EXPORT_FIELDS = (
    "url", "final_url", "status", "error", "fetched_at", "fetch_order", "depth", "parent",
    "content_type", "content_length", "content_hash", "duplicate_of", "near_duplicate_of",
    "title", "outlinks", "score", "pagerank",
)
EXTRA_FIELDS = ("host", "canonical", "noindex", "nofollow", "elapsed", "response_time", "ip")


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open the crawl database. Readers (search, web UI, stats) use readonly=True."""
    uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 5000")
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        # 2 MB: the OS caches the file; more only costs RSS. Halving 4 MB read 3 % more bytes from
        # the page cache on the 20,000-page benchmark crawl and saved 2-5 MB (docs/benchmarks.md)
        conn.execute("PRAGMA cache_size = -2000")
    except sqlite3.Error as exc:
        raise CrawlDirError(f"cannot open crawl database {path}: {exc}") from None
    return conn


def check_integrity(conn: sqlite3.Connection, path: Path, note: str = "") -> None:
    """CrawlDirError (its message ending with ``note``) unless the crawl database on ``conn``
    passes SQLite's quick check: a pass over the file."""
    try:
        row = conn.execute("PRAGMA quick_check").fetchone()
    except sqlite3.DatabaseError as exc:
        row = (str(exc),)
    if row is None or row[0] != "ok":
        raise CrawlDirError(f"corrupt crawl database {path}: {row[0] if row else 'no answer'}{note}")


class _NoCrawl(Exception):
    """CrawlDB's own: a crawl.db with no crawl in it, for a writer that makes none."""


#: SQLite's errors of a database that is sound but may not be written (read-only file or directory,
#: no permission, a full disk, an I/O error): not "corrupt".
_NOT_DAMAGE = frozenset({sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_CANTOPEN,
                         sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})


class CrawlDB:
    """The writer's handle on the crawl database (one per crawl process)."""

    def __init__(self, directory: Path, *, readonly: bool = False, create: bool = True) -> None:
        """``create``: make a new crawl database if the directory has none (a crawl, a merge); a
        writer that works on a crawl (``skitter rank``) passes False."""
        self.directory = Path(directory)
        self.path = self.directory / DB_NAME
        self._wal_limit = 0       # start_checkpointer sets it
        self._commits = 0
        if (readonly or not create) and not self.path.exists():
            raise CrawlDirError(f"{self.directory} is not a crawl directory (no {DB_NAME})")
        self.conn = connect(self.path, readonly=readonly)
        try:
            version = self._version()
            if readonly and isinstance(version, int) and version < SCHEMA_VERSION:
                # an older crawl directory: migrate it once, with a writer, then read it
                self.conn.close()
                CrawlDB(directory).close()
                self.conn = connect(self.path, readonly=True)
                version = self._version()
            if not readonly:
                if version is None and not create:   # (skitter rank on an empty crawl.db)
                    raise _NoCrawl
                if version is None:
                    self.set_meta_table()
                    self.set_meta("schema_version", SCHEMA_VERSION)
                    version = SCHEMA_VERSION
                else:
                    version = self._migrate(version)
                if version == SCHEMA_VERSION:   # tables and indexes a version added: IF NOT EXISTS
                    self.conn.executescript(SCHEMA)
                    self.conn.executescript(RECRAWL_SCHEMA)
        except _NoCrawl:
            version = None
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF in _NOT_DAMAGE:   # the file is fine: we may not use it
                raise CrawlDirError(f"cannot {'open' if readonly else 'write'} the crawl database {self.path}: "
                                    f"{exc}") from None
            raise CrawlDirError(f"corrupt crawl database {self.path}: {exc}") from None
        if version is None:   # an empty file, or a database with no tables of ours (not made here)
            self.conn.close()
            raise CrawlDirError(f"{self.directory} is not a crawl directory ({DB_NAME} is empty or holds no crawl)")
        if version != SCHEMA_VERSION:
            self.conn.close()
            raise CrawlDirError(f"crawl database {self.path} has schema {version!r}, expected {SCHEMA_VERSION}"
                                " (written by a newer skitter?)")
        if not readonly:
            self._check_integrity()

    def set_meta_table(self) -> None:
        self.conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def _version(self) -> Any:
        """The schema version, or None for a database with no tables yet."""
        has_meta = self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
        return self.get_meta("schema_version") if has_meta else None

    def _migrate(self, version: Any) -> Any:
        """Bring an older schema up to date, a step at a time, each in one transaction."""
        while isinstance(version, int) and version in MIGRATIONS:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                MIGRATIONS[version](self.conn)
                version += 1
                self.set_meta("schema_version", version)
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        return version

    def _check_integrity(self) -> None:
        check_integrity(self.conn, self.path)

    # -- meta -------------------------------------------------------------------------------
    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if not row:
            return default
        try:
            return json.loads(row[0])
        except (TypeError, ValueError):
            raise CrawlDirError(f"crawl.db holds a corrupt meta value for {key!r} (not JSON)") from None

    def config(self) -> dict[str, Any]:
        """The crawl's stored settings (``{}`` before the first run); a CrawlDirError when they are
        not a crawl's settings (a damaged crawl.db), where readers failed with a TypeError."""
        value = self.get_meta("config", {})
        if not (isinstance(value, dict) and isinstance(value.get("seeds", []), list)):
            raise CrawlDirError("crawl.db holds a corrupt meta value for 'config' (not the crawl's settings)")
        return value

    def set_meta(self, key: str, value: Any) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    # -- transactions -----------------------------------------------------------------------
    def begin(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")
            if self._wal_limit:
                self._bound_wal()

    def _bound_wal(self) -> None:
        """Keep the WAL from growing without end. SQLite starts the WAL file over only when a
        writer begins a transaction after a checkpoint that copied every frame; the checkpoint
        thread never catches up with a writer that commits four times a second (a 500,000-page
        crawl grew a 5.6 GB WAL in its first 33,000 pages, and a WAL index to match). So once the
        file passes the limit, the writer checkpoints the few frames the thread has not copied yet
        (it has copied the rest: tens of ms), and its next transaction starts the WAL over;
        ``journal_size_limit`` then truncates the file back."""
        self._commits += 1
        if self._commits % 16:
            return
        try:
            if os.path.getsize(self._wal_path) < self._wal_limit:
                return
            self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except (OSError, sqlite3.Error):
            pass  # a reader holds old frames, or the file is gone: the next round tries again

    def ensure_tx(self) -> None:
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")

    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def query(self, sql: str, params: tuple = ()) -> Iterator[sqlite3.Row]:
        cur = self.conn.execute(sql, params)
        cur.row_factory = sqlite3.Row
        return cur

    def start_checkpointer(self, interval: float = 1.0, wal_limit: int = 64 << 20) -> None:
        """Move WAL checkpoints off the writer: the writer's commits then only append to the WAL
        (a few ms), and a thread with its own connection copies the WAL back into the database
        (PASSIVE: it never blocks the writer or readers). Without it, every ~1,000th commit did
        a checkpoint on the crawl's event loop (~100 ms with page text in the rows)."""
        self.conn.execute("PRAGMA wal_autocheckpoint = 0")
        self.conn.execute(f"PRAGMA journal_size_limit = {int(wal_limit)}")
        self._wal_path = str(self.path) + "-wal"
        self._wal_limit = wal_limit
        self._stop_checkpoints = threading.Event()

        def run() -> None:
            conn = connect(self.path)
            try:
                while not self._stop_checkpoints.wait(interval):
                    try:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                    except sqlite3.Error:
                        pass  # busy or locked now: the next round catches up
            finally:
                conn.close()

        self._checkpointer = threading.Thread(target=run, name="skitter-checkpoint", daemon=True)
        self._checkpointer.start()

    def close(self) -> None:
        try:
            if self.conn.in_transaction:
                self.conn.execute("COMMIT")
            checkpointer = getattr(self, "_checkpointer", None)
            if checkpointer is not None:
                self._stop_checkpoints.set()
                checkpointer.join(10)
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            self.conn.close()

    # -- resume -----------------------------------------------------------------------------
    def release_leases(self) -> int:
        """After a crash or a stop: leased (in-memory or in-flight) URLs go back to the queue."""
        cur = self.conn.execute("UPDATE urls SET state = 0 WHERE state = 1")
        return cur.rowcount

    def counts(self) -> dict[str, int]:
        q = self.conn.execute
        return {
            "queued": q("SELECT count(*) FROM urls WHERE state != 2").fetchone()[0],
            "seen": q("SELECT count(*) FROM urls").fetchone()[0],
            "fetched": q("SELECT count(*) FROM fetches WHERE fetch_order IS NOT NULL").fetchone()[0],
            "max_order": q("SELECT coalesce(max(fetch_order), 0) FROM fetches").fetchone()[0],
            "max_seq": q("SELECT coalesce(max(seq), 0) FROM urls").fetchone()[0],
        }


def _v1_to_v2(conn: sqlite3.Connection) -> None:
    """Schema 2: URLs get their own due time (retries, revisits), fetches the server's response
    time; the near-duplicate sketches of the oldest crawl directories (``near_fps``, a row per
    hash) join ``near_sketches`` (a row per page) ahead of the newer ones; page text stored as
    TEXT is deflated like the rest; the old ``links_dst`` index goes."""
    import numpy as np

    from .text import pack_text

    conn.execute("ALTER TABLE urls ADD COLUMN due REAL")
    conn.execute("DROP INDEX IF EXISTS urls_queued")
    conn.execute("CREATE INDEX urls_ready ON urls (host, priority DESC, seq) WHERE state = 0 AND due IS NULL")
    conn.execute("CREATE INDEX urls_due ON urls (host, due) WHERE state = 0 AND due IS NOT NULL")
    conn.execute("ALTER TABLE fetches ADD COLUMN response_time REAL")
    conn.execute("DROP INDEX IF EXISTS links_dst")
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'near_fps'").fetchone():
        from ..dedup import SKETCH

        old: dict[int, list[int]] = {}
        for doc, h in conn.execute("SELECT doc_id, hash FROM near_fps ORDER BY rowid"):
            old.setdefault(doc, []).append(h)
        rows = [(doc, np.unique(np.asarray(hs, dtype=np.int64).view(np.uint64))[:SKETCH].astype("<u8").tobytes())
                for doc, hs in old.items()]
        rows += conn.execute("SELECT doc_id, sketch FROM near_sketches ORDER BY rowid").fetchall()
        conn.execute("DELETE FROM near_sketches")
        conn.executemany("INSERT INTO near_sketches (doc_id, sketch) VALUES (?, ?)", rows)
        conn.execute("DROP TABLE near_fps")
    conn.create_function("pack_text", 1, pack_text, deterministic=True)
    conn.execute("UPDATE pages SET text = pack_text(text) WHERE typeof(text) = 'text'")


def _v2_to_v3(conn: sqlite3.Connection) -> None:
    """urls.revisit: a URL's due time is its next revisit, not a retry (frontier/local.py);
    pages.main_hash: the checksum of the page's title and main text (a recrawl's change test)."""
    conn.execute("ALTER TABLE urls ADD COLUMN revisit INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE pages ADD COLUMN main_hash TEXT")


def _v3_to_v4(conn: sqlite3.Connection) -> None:
    """pages.main_start: where the page's main text starts in ``text`` (after the menus and side
    bars the boilerplate rules found), so that snippets come from the content; null before."""
    conn.execute("ALTER TABLE pages ADD COLUMN main_start INTEGER")


MIGRATIONS = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}   # from version -> the step to the next
