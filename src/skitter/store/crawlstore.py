"""The crawl directory's writer API: every row a crawl stores goes through here (the loop names no
table), and the one rule of crash safety lives here: the WARC file is flushed up to the offset a
transaction records before that transaction commits (:meth:`CrawlStore.commit`).

Reads the loop needs while crawling (the content-seen test, a near-duplicate's original, what to
replay on resume) are here too. The local frontier writes its own table (``urls``) through the
same connection (:attr:`CrawlStore.db`), inside the same transactions.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime, UTC
from itertools import groupby
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator

from ..errors import CrawlDirError
from ..models import Candidate, Page
from ..urls import fingerprint, host_key
from .db import CrawlDB
from .lock import DirectoryLock
from .text import pack_text
from .warc import WarcLocation, WarcWriter, record_problem


def _check_last_record(db: CrawlDB, warc_dir: Path, committed: list | None) -> None:
    """CrawlDirError unless the last pair committed to the current WARC file reads
    (``warc.record_problem``): a damaged archive stops the resume, as a missing one does."""
    if not committed:
        return
    name = Path(committed[0]).name
    # the file's last record is among the newest fetches (the fetch_order index: no scan of them all)
    row = db.conn.execute("SELECT warc_offset, warc_length FROM (SELECT warc_file, warc_offset, warc_length"
                          " FROM fetches WHERE fetch_order IS NOT NULL ORDER BY fetch_order DESC LIMIT 1000)"
                          " WHERE warc_file = ? ORDER BY warc_offset DESC LIMIT 1", (name,)).fetchone()
    if row is None:
        return
    problem = record_problem(warc_dir / name, row[0], row[1])
    if problem is not None:
        raise CrawlDirError(f"WARC file {warc_dir / name} is damaged: its last committed record (offset {row[0]})"
                            f" does not read: {problem}")


def iso(epoch: float) -> str:
    """Seconds since the epoch as the records' ISO 8601 UTC time (milliseconds)."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# The columns of a fetch record that describe one version of the page: a record written again
# (``record_fetch(again=True)``) clears those it does not set.
_VERSION_COLUMNS: dict[str, Any] = {
    "final_url": None, "status": None, "error": None, "fetched_at": None, "content_type": None,
    "content_length": None, "content_hash": None, "duplicate_of": None, "near_duplicate_of": None, "title": None,
    "outlinks": None, "score": None, "canonical": None, "noindex": 0, "nofollow": 0, "elapsed": None,
    "response_time": None, "ip": None, "warc_file": None, "warc_offset": None, "warc_length": None,
}


class CrawlStore:
    """One crawl directory, open for writing. ``CrawlStore.open(directory, config)``."""

    def __init__(self, directory: Path, db: CrawlDB, warc: WarcWriter, *, resumed: bool, config: dict,
                 lock: DirectoryLock | None = None) -> None:
        self.directory = directory
        self.lock = lock           # one crawl at a time in the directory (skitter.store.lock)
        self.db = db
        self.warc = warc
        self.resumed = resumed
        self.config = config       # the crawl's settings as stored (seeds merged over resumes)
        # called first in every commit: a part that keeps state in memory writes it here, so the
        # state commits with the rows it describes (skitter.formcrawl: the form planners)
        self.before_commit: list[Callable[[], None]] = []
        c = db.counts()
        self.fetched = c["fetched"]
        self.order = c["max_order"]

    @classmethod
    def open(cls, directory: Path, config: dict, *, software: str, now: float | None = None) -> CrawlStore:
        """Open (or create) the crawl directory; a resumed crawl keeps its seeds and adds these.
        URLs that were in flight when the last run ended go back to the queue."""
        directory = Path(directory)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            probe = directory / ".write-test"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise CrawlDirError(f"cannot write to crawl directory {directory}: {exc.strerror or exc}") from None
        # before anything is read: a second crawl here would hand the first one's URLs in flight
        # back to the queue (release_leases below) and append to the same WARC series
        lock = DirectoryLock.acquire(directory)
        db = None
        try:
            db = CrawlDB(directory)
            previous = db.config() or None
            warc_dir = directory / "warc"
            if warc_dir.exists() and not warc_dir.is_dir():
                raise CrawlDirError(f"{warc_dir} is not a directory: the crawl directory is damaged")
            committed = db.get_meta("warc_commit")
            _check_last_record(db, warc_dir, committed)   # before anything is written, state included
            db.begin()
            db.release_leases()
            config = dict(config, seeds=list(dict.fromkeys((previous or {}).get("seeds", []) + list(config["seeds"]))))
            db.set_meta("config", config)
            db.set_meta("state", "running")
            if previous is None:
                db.set_meta("started_at", iso(time.time() if now is None else now))
            db.commit()
            db.start_checkpointer()
            warc_dir.mkdir(exist_ok=True)
            warc = WarcWriter.resume(warc_dir, tuple(committed) if committed else None, software=software)
        except BaseException:
            if db is not None:
                db.close()
            lock.release()
            raise
        return cls(directory, db, warc, resumed=previous is not None, config=config, lock=lock)

    # -- what a resumed crawl needs --------------------------------------------------------
    def admitted_per_host(self) -> Counter[str]:
        return Counter(dict(self.db.conn.execute("SELECT host, count(*) FROM urls GROUP BY host").fetchall()))

    def recent_sketches(self, keep: int | None) -> list[tuple[int, bytes]]:
        """The near-duplicate sketches of the newest ``keep`` pages (all: None), oldest first."""
        rows = self.db.conn.execute("SELECT doc_id, sketch FROM near_sketches ORDER BY rowid DESC"
                                    + ("" if keep is None else f" LIMIT {int(keep)}")).fetchall()
        rows.reverse()
        return rows

    def replay_seeds(self) -> Iterator[str]:
        """The seed URLs as they were queued (depth 0, no parent), in queue order."""
        for (url,) in self.db.conn.execute("SELECT url FROM urls WHERE depth = 0 AND parent IS NULL ORDER BY seq"):
            yield url

    def replay_pages(self) -> Iterator[tuple[str, bool, list[tuple[str, int, int, int, bool]]]]:
        """Every page whose links were stored, in fetch order: (url, the page was nofollow, its
        links as (target, visibility, position, distance, nofollow)). For strategies that rebuild
        their state on resume (skitter.strategies.importance)."""
        rows = self.db.conn.execute(
            "SELECT f.fetch_order, f.url, f.nofollow, l.dst_url, l.visibility, l.position, l.distance,"
            " l.nofollow FROM fetches f JOIN pages p ON p.fp = f.fp LEFT JOIN links l ON l.src = f.fp"
            " WHERE f.fetch_order IS NOT NULL ORDER BY f.fetch_order, l.rowid")
        for _, group in groupby(rows, key=lambda r: r[0]):
            first = next(group)
            links = [(r[3], r[4] or 1, r[5] or 3, r[6] or 1, bool(r[7])) for r in (first, *group) if r[3] is not None]
            yield first[1], bool(first[2]), links

    # -- the content-seen and near-duplicate tests' reads -----------------------------------
    def first_with_content(self, digest: str, url: str) -> str:
        """The content-seen test: the URL first stored with this body (``url`` itself when it is
        the first). Registers ``url`` as the first if none was."""
        self.db.ensure_tx()
        conn = self.db.conn
        if conn.execute("INSERT OR IGNORE INTO contents (hash, url) VALUES (?, ?)", (digest, url)).rowcount:
            return url
        return conn.execute("SELECT url FROM contents WHERE hash = ?", (digest,)).fetchone()[0]

    def page_url(self, fp: int) -> str | None:
        row = self.db.conn.execute("SELECT url FROM pages WHERE fp = ?", (fp,)).fetchone()
        return row[0] if row else None

    def near_original(self, fp: int) -> str | None:
        """The URL the page ``fp`` was marked against: the first with its bytes when it is an
        exact duplicate (a recrawled page can become one after it was compared with), else
        the page it is a near-duplicate of (None: neither)."""
        row = self.db.conn.execute("SELECT coalesce(duplicate_of, near_duplicate_of) FROM fetches WHERE fp = ?",
                                   (fp,)).fetchone()
        return row[0] if row else None

    def link_targets(self, fp: int) -> list[str]:
        return [r[0] for r in self.db.conn.execute("SELECT dst_url FROM links WHERE src = ?", (fp,))]

    def add_sketch(self, record: tuple[int, bytes]) -> None:
        self.db.ensure_tx()
        self.db.conn.execute("INSERT INTO near_sketches (doc_id, sketch) VALUES (?, ?)", record)

    # -- writes ------------------------------------------------------------------------------
    def archive(self, records: bytes | None) -> WarcLocation | None:
        """Append encoded WARC records (``analyse``'s request + response pair)."""
        return None if records is None else self.warc.write_encoded(records)

    def record_fetch(self, cand: Candidate, record: dict[str, Any], *, counted: bool, again: bool = False) -> int | None:
        """Store the fetch record of ``cand`` (the export record's fields). ``counted``: a request
        was made, so the record gets the next ``fetch_order``; a URL decided without one has
        none. Returns the fetch order.

        ``again``: the URL was fetched before (a recrawl's new version, or a page leaving the
        collection): its record is updated in place and takes the next ``fetch_order`` (so the
        search index, which follows fetch order, re-indexes or drops it), the columns of the
        previous version that ``record`` does not set are cleared, ``skitter rank``'s columns are
        kept, and the count of URLs fetched does not grow."""
        order = None
        if counted or again:
            self.order += 1
            order = self.order
            if not again:
                self.fetched += 1
        self.db.ensure_tx()
        if again:
            record = {**_VERSION_COLUMNS, **record}
        record = dict(record, fetch_order=order, host=host_key(cand.url))
        cols = ", ".join(record)
        marks = ", ".join("?" for _ in record)
        if again:
            update = ", ".join(f"{c} = excluded.{c}" for c in record if c not in ("depth", "parent"))
            self.db.conn.execute(f"INSERT INTO fetches (fp, {cols}) VALUES (?, {marks})"
                                 f" ON CONFLICT (fp) DO UPDATE SET {update}",
                                 (fingerprint(cand.url), *record.values()))
        else:
            self.db.conn.execute(f"INSERT OR REPLACE INTO fetches (fp, {cols}) VALUES (?, {marks})",
                                 (fingerprint(cand.url), *record.values()))
        return order

    def touch_fetch(self, url: str, record: dict[str, Any]) -> None:
        """Update some columns of ``url``'s fetch record in place, its ``fetch_order`` kept: a
        revisit that found the page unchanged (its time, status, timings)."""
        self.db.ensure_tx()
        sets = ", ".join(f"{c} = ?" for c in record)
        self.db.conn.execute(f"UPDATE fetches SET {sets} WHERE fp = ?", (*record.values(), fingerprint(url)))

    def reorder(self, url: str) -> None:
        """Give ``url``'s fetch record the next ``fetch_order`` (nothing else changes): the search
        index, which follows fetch order, looks at the URL again (a page that left the collection
        is dropped)."""
        self.order += 1
        self.db.ensure_tx()
        self.db.conn.execute("UPDATE fetches SET fetch_order = ? WHERE fp = ?", (self.order, fingerprint(url)))

    def remove_page(self, url: str) -> None:
        """The page leaves the collection: its parsed fields go (the search index drops it at the
        next fetch order, see ``record_fetch(again=True)``); its fetch record, links, history and
        WARC records stay."""
        self.db.ensure_tx()
        self.db.conn.execute("DELETE FROM pages WHERE fp = ?", (fingerprint(url),))

    def record_page(self, url: str, page: Page, text: bytes | None, *, last_modified: str | None,
                    etag: str | None, again: bool = False, main_hash: str | None = None) -> None:
        """A parsed page's fields and its links. ``text``: the page text packed (``pack_text``) by
        the analysis process, or None to pack ``page.text`` here. ``main_hash``: the checksum of
        its title and main text, when the analysis made it. ``again``: a new version of a
        page stored before: its links are replaced (``links`` stays append-only for the links
        that remain, so the search index's anchor watermark holds)."""
        fp = fingerprint(url)
        conn = self.db.conn
        self.db.ensure_tx()
        conn.execute(
            "INSERT OR REPLACE INTO pages (fp, url, title, description, keywords, headings, text, lang, encoding,"
            " last_modified, etag, main_hash, main_start) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (fp, url, page.title, page.description, page.keywords, "\n".join(page.headings),
             pack_text(page.text) if text is None else text, page.lang, page.encoding, last_modified, etag,
             main_hash, page.main_start))
        links = page.links
        if again:
            now = {link.url for link in links}
            kept = set()
            for rowid, dst_url in conn.execute("SELECT rowid, dst_url FROM links WHERE src = ?", (fp,)).fetchall():
                if dst_url in now and dst_url not in kept:
                    kept.add(dst_url)
                else:
                    conn.execute("DELETE FROM links WHERE rowid = ?", (rowid,))
            links = [link for link in links if link.url not in kept]
        conn.executemany(
            "INSERT INTO links (src, dst, dst_url, anchor, visibility, position, distance, nofollow)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(fp, fingerprint(link.url), link.url, link.anchor, link.visibility, link.position, link.distance,
              int(link.nofollow or page.nofollow)) for link in links])

    def record_robots(self, origin: str, *, outcome: str, crawl_delay: float | None, sitemaps: list[str],
                      at: float) -> None:
        self.db.ensure_tx()
        self.db.conn.execute(
            "INSERT OR REPLACE INTO robots (origin, fetched_at, outcome, crawl_delay, sitemaps) VALUES (?, ?, ?, ?, ?)",
            (origin, iso(at), outcome, crawl_delay, "\n".join(sitemaps)))

    # -- commits and the end -------------------------------------------------------------------
    def commit(self) -> None:
        """Flush the WARC file, then commit the transaction that points into it (order matters)."""
        for hook in self.before_commit:
            hook()
        if not self.db.in_transaction():
            return
        filename, offset = self.warc.flush()
        self.db.set_meta("warc_commit", [filename, offset])
        self.db.commit()

    def finish(self, state: str, *, at: float) -> None:
        """The run ends: its state ("finished" or "stopped"), committed with everything before it.
        URLs still leased go back to the queue for the next run."""
        self.db.ensure_tx()
        self.db.set_meta("state", state)
        self.db.set_meta("finished_at", iso(at))
        self.commit()
        self.db.release_leases()
        self.db.commit()

    def close(self) -> None:
        try:
            self.warc.close()
        finally:
            try:
                self.db.close()
            finally:
                if self.lock is not None:
                    self.lock.release()
