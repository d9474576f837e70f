"""THE crawl loop. Every mode of skitter runs this one loop; it knows the parts only by their seams.

The data flow (docs/architecture.md numbers the same steps):

  1. frontier.next_ready()        best URL whose host may be contacted now (politeness)
  2. robots                        cached rules for the URL's origin (fetched once, in the host's slot)
  3. fetcher.get()                 one HTTP hop: caps, timeouts, errors as values
  4. WARC                          request + response records appended (flushed before each commit)
  5. outcome                       retry with backoff / redirect hop enqueued / content-seen test
  6. parse                         HTML -> Page (text fields, meta robots, links with attributes)
  7. link filter + scorer          scope, traps, depth; the strategy's priority
  8. frontier.add()                URL-seen test on the fingerprint, admitted to disk or a host window
  9. store                         fetch record, page fields, links — one SQLite transaction per batch

Crash safety: all database writes of a batch commit together (every ``commit_interval`` seconds),
after the WARC file has been flushed to the offset the batch records. A kill -9 loses at most the
uncommitted batch; those URLs are still leased in the database, go back to the queue on resume and
are fetched again (they were "in flight"), and the WARC tail past the commit point is truncated.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from .config import CrawlConfig
from .crawllog import crawl_log
from .errors import BadSeedError, CrawlDirError, SkitterError
from .fetch import Fetcher
from . import dedup as dedup_module
from .dedup import SKETCH, NearDupIndex, links_worth_following
from .frontier.local import LocalFrontier
from .index.live import LiveIndexer
from .frontier.politeness import Politeness, parse_retry_after
from .linkfilter import LinkFilter
from .models import Candidate, FetchResult, Page
from .netguard import allowed_classes
from .analyse import Analysis, analyse, archive_only
from .robots.cache import RobotsCache
from .robots.rules import product_token
from .store.db import CrawlDB
from .store.text import pack_text
from .store.warc import WarcWriter
from .strategies import ParentContext, make_scorer
from .urls import URLError, canonicalize, fingerprint, host_key, resolve
from .watchdog import Watchdog
from .workers import WorkerDied, WorkerPool

REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})

log = logging.getLogger(__name__)


def _now_iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class CrawlStats:
    """Live counters for the progress display (the database is the record; this is a view)."""

    started: float = field(default_factory=time.monotonic)
    fetched: int = 0          # URLs tried this session (fetch records written)
    pages: int = 0            # HTML pages parsed
    errors: int = 0
    retries: int = 0
    duplicates: int = 0
    near_duplicates: int = 0
    disallowed: int = 0
    robots_fetches: int = 0
    unparsed: int = 0         # responses archived unparsed: their worker process died
    bytes: int = 0
    statuses: Counter = field(default_factory=Counter)

    def rate(self) -> float:
        return self.fetched / max(1e-9, time.monotonic() - self.started)


def check_seeds(seeds: list[str]) -> list[str]:
    """Canonical seed URLs, or BadSeedError naming the first bad one."""
    out = []
    for s in seeds:
        try:
            out.append(canonicalize(s.strip()))
        except URLError as exc:
            raise BadSeedError(f"invalid seed URL {s!r}: {exc}") from None
    if not out:
        raise BadSeedError("no seed URL given")
    return out


class Crawler:
    """One crawl, in one crawl directory. ``await Crawler(dir, config).run()``."""

    commit_interval = 0.25

    def __init__(self, directory: Path, config: CrawlConfig, *,
                 on_progress: Callable[["Crawler"], None] | None = None) -> None:
        self.directory = Path(directory)
        self.config = config
        self.on_progress = on_progress
        self.stats = CrawlStats()
        self.seeds = check_seeds(list(config.seeds))
        self._stopping = False
        self._interrupted = False

    # -- setup -----------------------------------------------------------------------------
    def _open(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            probe = self.directory / ".write-test"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise CrawlDirError(f"cannot write to crawl directory {self.directory}: {exc.strerror or exc}") from None
        self.db = db = CrawlDB(self.directory)
        previous = db.get_meta("config")
        self.resumed = previous is not None
        db.begin()
        self.released = db.release_leases()
        seeds = list(dict.fromkeys((previous or {}).get("seeds", []) + self.seeds))
        self.config = self.config.with_(seeds=tuple(seeds))
        db.set_meta("config", self.config.to_dict())
        db.set_meta("state", "running")
        if not self.resumed:
            db.set_meta("started_at", _now_iso(time.time()))
        db.commit()
        db.start_checkpointer()
        warc_dir = self.directory / "warc"
        warc_dir.mkdir(exist_ok=True)
        committed = db.get_meta("warc_commit")
        self.warc = WarcWriter.resume(warc_dir, tuple(committed) if committed else None,
                                      software=f"{self.config.user_agent}")
        counts = db.counts()
        self.order = counts["max_order"]
        c = self.config
        self.frontier = LocalFrontier(db, Politeness(delay=c.delay, per_host=c.per_host,
                                                     adaptive=c.adaptive_delay, max_crawl_delay=c.max_crawl_delay))
        admitted = Counter(dict(db.conn.execute("SELECT host, count(*) FROM urls GROUP BY host").fetchall()))
        self.filter = LinkFilter(c, seeds, admitted)
        self.scorer = make_scorer(c.strategy, c)
        if self.resumed and hasattr(self.scorer, "restore"):   # importance state (backlinks, OPIC)
            self.scorer.restore(db)
        self.fetched_total = counts["fetched"]
        self.robots_token = product_token(c.user_agent)
        self.neardup = self._load_neardup(db) if c.near_duplicates != "off" else None
        # what analyse needs besides the response: the same for every page of the crawl. The
        # worker deflates the page text (``pack``), except with one worker process running the
        # Python walk (skitter._speedups not built): that worker is the busier of the two
        # processes, so the crawl process does it (docs/benchmarks.md).
        pack = c.worker_count() != 1 or dedup_module._speedups is not None
        self._analyse_opts = (self.robots_token, 0 if self.neardup is None else self.neardup.probe,
                              getattr(self.scorer, "reads_text", True), pack,
                              getattr(self.scorer, "reads_link_context", True))
        self.frontier.gate = self._gate

    def _load_neardup(self, db: CrawlDB) -> NearDupIndex:
        """The near-duplicate index as the crawl left it: the newest ``near_dup_window`` pages'
        sketches, read back oldest first (records are written in fetch order). Sketches in the
        older one-row-per-hash table (``near_fps``) are older than every record."""
        window = self.config.near_dup_window or None
        keep = None if window is None else window + window // 4
        records = db.conn.execute("SELECT doc_id, sketch FROM near_sketches ORDER BY rowid DESC"
                                  + ("" if keep is None else f" LIMIT {int(keep)}")).fetchall()
        records.reverse()
        rows: list = []
        if keep is None:
            rows = db.conn.execute("SELECT doc_id, hash FROM near_fps ORDER BY rowid").fetchall()
        elif len(records) < keep:
            limit = (keep - len(records)) * SKETCH
            rows = db.conn.execute("SELECT doc_id, hash FROM near_fps ORDER BY rowid DESC LIMIT ?",
                                   (limit,)).fetchall()
            rows.reverse()
            if len(rows) == limit:   # the oldest document may be cut: leave it out
                first = rows[0][0]
                rows = [r for r in rows if r[0] != first]
        index = NearDupIndex.from_rows(rows, window=window)
        index.add_records(records)
        return index

    # -- the loop --------------------------------------------------------------------------
    async def run(self) -> CrawlStats:
        self._open()
        with crawl_log(self.directory):
            return await self._run()

    async def _run(self) -> CrawlStats:
        c = self.config
        allowed = allowed_classes(list(c.seeds), c.allow_private, resolved=dict(c.resolve))
        n = c.worker_count()
        self.pool = WorkerPool(n) if n else None   # no orphan survives a kill -9 (skitter.workers)
        self._tasks: list[asyncio.Task] = []
        self.watchdog = Watchdog(self.directory, describe=self.describe_wait, on_stop=self.interrupt,
                                 has_work=lambda: self.frontier.queued > 0 or self.frontier.in_flight > 0,
                                 stall_after=c.stall_after)
        try:
            if self.pool is not None:
                try:
                    await self.pool.start()
                except OSError as exc:   # no python to run, no file descriptors or processes left
                    raise SkitterError(f"cannot start worker processes: {exc}") from None
            async with Fetcher(c, allowed=allowed, resolver_overrides=dict(c.resolve)) as fetcher:
                self.fetcher = fetcher
                self.robots = RobotsCache(fetcher.get, c.user_agent, expiry=c.robots_expiry)
                seeds = [Candidate(url=s, depth=0, priority=self.scorer.seed_priority(s)) for s in self.seeds]
                for s in seeds:
                    if self.filter.admit(s.url, 0):
                        if self.frontier.add([s]):
                            self.filter.admitted_new(s.url)
                self._commit()
                self._stop_event = asyncio.Event()
                self.watchdog.start()
                committer = asyncio.create_task(self._committer())
                indexer = asyncio.create_task(self._indexer())
                watcher = asyncio.create_task(self.watchdog.run())
                self._tasks = workers = [asyncio.create_task(self._worker()) for _ in range(max(1, c.concurrency))]
                stopper = asyncio.create_task(self._stop_event.wait())
                gatherer = asyncio.gather(*workers)
                try:
                    await asyncio.wait([gatherer, stopper], return_when=asyncio.FIRST_COMPLETED)
                finally:
                    # the watchdog's heartbeat goes last: the others may take seconds to wind down
                    # (the index process finishes its update), and the loop runs all along
                    for task in (*workers, stopper, committer, indexer):
                        task.cancel()
                    results = await asyncio.gather(*workers, stopper, committer, indexer, return_exceptions=True)
                    watcher.cancel()
                    await asyncio.gather(watcher, return_exceptions=True)
                    if not gatherer.cancelled():
                        gatherer.exception()  # retrieved: the same exceptions are in results
                    for r in results:
                        if isinstance(r, Exception):  # a bug in a worker: surface it, never hide it
                            raise r
        finally:
            self.watchdog.close()
            if self.pool is not None:
                await self.pool.close()
            self._finish()
        return self.stats

    def _budget_left(self) -> bool:
        m = self.config.max_pages
        return not m or self.fetched_total + self.frontier.in_flight < m

    async def _worker(self) -> None:
        frontier = self.frontier
        while not self._stopping:
            if not self._budget_left():
                if self.frontier.in_flight == 0:
                    frontier.stop()
                    return
                await asyncio.sleep(0.01)
                continue
            cand = await frontier.next_ready()
            if cand is None:
                return
            self.watchdog.last_activity = time.monotonic()
            await self._process(cand)

    def _gate(self, cand: Candidate) -> bool:
        """Before a host slot is taken: decide what cached robots.txt rules already decide."""
        if not self.config.obey_robots:
            return True
        rules = self.robots.cached(cand.url)
        if rules is None:
            return True  # fetched in the host's slot by _process
        if rules.reason == "unreachable":
            if cand.attempts < self.config.retries:
                self.stats.retries += 1
                self.frontier.requeue(Candidate(**{**_fields(cand), "attempts": cand.attempts + 1}),
                                      not_before=self._backoff(cand.attempts))
            else:
                self._record_skip(cand, "robots: robots.txt unreachable, crawling disallowed")
            return False
        if not rules.allowed(cand.url):
            self._record_skip(cand, "robots: disallowed by robots.txt")
            return False
        return True

    async def _process(self, cand: Candidate) -> None:
        elapsed: float | None = None
        retry_after: float | None = None
        try:
            if self.config.obey_robots and self.robots.cached(cand.url) is None:
                elapsed = await self._fetch_robots(cand)
                self.frontier.requeue(cand)  # the page waits for a later slot: robots.txt used this one
                return
            result = await self.fetcher.get(cand.url)
            elapsed = result.response_time   # the server's time, not our event loop's lag
            if result.status in (429, 503):  # the host asks us to slow down, retried or not
                retry_after = parse_retry_after(result.header("retry-after"), time.time())
            if not self._retry(cand, result, retry_after):
                analysis = await self._analyse(result, cand.url)
                self._handle(cand, result, analysis)
        finally:
            self.frontier.done(cand, elapsed=elapsed, retry_after=retry_after)
            self.watchdog.last_activity = time.monotonic()

    async def _fetch_robots(self, cand: Candidate) -> float:
        t0 = time.monotonic()
        rules = await self.robots.rules_for(cand.url)
        self.stats.robots_fetches += 1
        self.frontier.set_crawl_delay(cand.url, rules.crawl_delay)
        origin = host_key(cand.url)
        self.db.ensure_tx()
        self.db.conn.execute(
            "INSERT OR REPLACE INTO robots (origin, fetched_at, outcome, crawl_delay, sitemaps) VALUES (?, ?, ?, ?, ?)",
            (origin, _now_iso(time.time()), rules.reason or "parsed", rules.crawl_delay,
             "\n".join(rules.sitemaps)))
        return time.monotonic() - t0

    def _backoff(self, attempts: int) -> float:
        return min(60.0, 1.0 * (2 ** attempts))

    # -- outcomes --------------------------------------------------------------------------
    def _retry(self, cand: Candidate, result: FetchResult, retry_after: float | None) -> bool:
        """Requeue a retryable failure (timeouts, refused, 5xx, 429) while retries are left."""
        status = result.status
        retryable = result.retryable if result.error else (status is not None and (status >= 500 or status == 429))
        if not retryable or cand.attempts >= self.config.retries:
            return False
        self.stats.retries += 1
        wait = max(retry_after or 0.0, self._backoff(cand.attempts))
        self.frontier.requeue(Candidate(**{**_fields(cand), "attempts": cand.attempts + 1}), not_before=wait)
        return True

    async def _analyse(self, result: FetchResult, url: str) -> Analysis:
        if self.pool is None:
            return analyse(result, url, *self._analyse_opts)
        args = (analyse, result, url, *self._analyse_opts)
        try:
            return await self.pool.submit(*args)
        except WorkerDied:   # killed, out of memory, or this page: the pool has replaced it
            self._check_pool()
        try:
            return await self.pool.submit(*args)
        except WorkerDied as exc:   # twice: this page crashes the parser; keep it, unparsed
            self._check_pool()
            log.warning("%s: %s; the response is archived but not parsed", url, exc)
            self.stats.unparsed += 1
            return archive_only(result, url)

    def _check_pool(self) -> None:
        if self.pool.broken:   # no worker can start: stop the crawl with the reason
            raise SkitterError(f"analysis: {self.pool.broken}")

    def _handle(self, cand: Candidate, result: FetchResult, analysis: Analysis) -> None:
        """Store the outcome of one fetch (sync: one page's writes never straddle a commit)."""
        self.db.ensure_tx()   # before the first write: the content-seen row must not commit alone
        status = result.status
        location = self.warc.write_encoded(analysis.warc) if analysis.warc is not None else None
        self.stats.bytes += len(result.raw_body)
        record = {
            "url": cand.url, "final_url": cand.url, "status": status, "error": result.error,
            "fetched_at": _now_iso(result.started or time.time()), "depth": cand.depth, "parent": cand.parent,
            "content_type": result.content_type, "content_length": len(result.body) if status is not None else None,
            "elapsed": result.elapsed, "ip": result.ip,
        }
        if location is not None:
            record.update(warc_file=location.filename, warc_offset=location.offset, warc_length=location.length)
        page: Page | None = None
        if status is not None and status in REDIRECT_CODES and result.header("location"):
            self._redirect(cand, result, record)
        elif status is not None and 200 <= status < 300:
            page = self._content(cand, analysis, record)
        self._store(cand, record, page, result, analysis.text)

    def _redirect(self, cand: Candidate, result: FetchResult, record: dict) -> None:
        target = resolve(cand.url, result.header("location") or "")
        try:
            target = canonicalize(target) if target else None
        except URLError:
            target = None
        if target is None:
            record["error"] = "redirect: bad Location header"
            return
        record["final_url"] = target
        if cand.redirects >= self.config.max_redirects:
            record["error"] = f"redirect: more than {self.config.max_redirects} hops"
            return
        if target == cand.url:
            record["error"] = "redirect: loop to itself"
            return
        self._enqueue([Candidate(url=target, depth=cand.depth, parent=cand.url, priority=cand.priority,
                                 redirects=cand.redirects + 1)])

    def _content(self, cand: Candidate, analysis: Analysis, record: dict) -> Page | None:
        digest = analysis.content_hash
        record["content_hash"] = digest
        conn = self.db.conn
        if conn.execute("INSERT OR IGNORE INTO contents (hash, url) VALUES (?, ?)", (digest, cand.url)).rowcount == 0:
            original = conn.execute("SELECT url FROM contents WHERE hash = ?", (digest,)).fetchone()[0]
            if original != cand.url:   # (the same URL again is never its own duplicate)
                record["duplicate_of"] = original
                self.stats.duplicates += 1
                return None
        page = analysis.page
        if page is None:
            return None  # non-HTML is recorded (and archived) but not parsed
        self.stats.pages += 1
        record.update(title=page.title, outlinks=page.outlinks, canonical=page.canonical,
                      noindex=int(page.noindex), nofollow=int(page.nofollow))
        follow_links = self._near_duplicate(cand, page, analysis, record)
        relevance = self.scorer.relevance(cand.url, page)
        record["score"] = relevance if relevance is not None else cand.priority
        parent = ParentContext(url=cand.url, page=page, depth=cand.depth, priority=cand.priority,
                               relevance=relevance)
        on_page = getattr(self.scorer, "on_page", None)  # importance strategies raise queued URLs
        if on_page is not None:
            for url, priority in on_page(parent, page.links):
                self.frontier.reprioritize(url, priority)
        follow = []
        depth = cand.depth + 1
        seen = self.frontier.seen_recently   # most links of a page lead to URLs seen already
        for link in page.links:
            if link.nofollow or page.nofollow or not follow_links or seen(link.url):
                continue
            if self.filter.admit(link.url, depth):
                follow.append(Candidate(url=link.url, depth=depth, parent=cand.url,
                                        priority=self.scorer.score(link, parent)))
        self._enqueue(follow)
        return page


    def _near_duplicate(self, cand: Candidate, page: Page, analysis: Analysis, record: dict) -> bool:
        """The near-duplicate test (seed 004 winnowing): record ``near_duplicate_of`` and index the
        page. Returns whether the page's links are worth following."""
        fps = analysis.fingerprints
        if self.neardup is None or fps is None or not len(fps):
            return True
        doc = fingerprint(cand.url)
        follow = True
        match = self.neardup.query(fps)
        if match:
            row = self.db.conn.execute("SELECT url FROM pages WHERE fp = ?", (match[0][0],)).fetchone()
            if row is not None:
                record["near_duplicate_of"] = row[0]
                self.stats.near_duplicates += 1
                if self.config.near_duplicates == "new-links":
                    original = [r[0] for r in self.db.conn.execute("SELECT dst_url FROM links WHERE src = ?",
                                                                    (match[0][0],))]
                    follow = links_worth_following(page.links, original)
        self.db.conn.execute("INSERT INTO near_sketches (doc_id, sketch) VALUES (?, ?)", self.neardup.add(doc, fps))
        return follow

    def _enqueue(self, cands: list[Candidate]) -> None:
        if not cands:
            return
        admit = []
        for cand in cands:
            rules = self.robots.cached(cand.url) if self.config.obey_robots else None
            if rules is not None and rules.reason is None and not rules.allowed(cand.url):
                # Known to be disallowed: record it now and never give it a politeness slot.
                if self.frontier.add_done(cand):
                    self.filter.admitted_new(cand.url)
                    self._record_skip(cand, "robots: disallowed by robots.txt")
                continue
            admit.append(cand)
        for cand in admit:
            if self.frontier.add([cand]):
                self.filter.admitted_new(cand.url)

    # -- storage ---------------------------------------------------------------------------
    def _record_skip(self, cand: Candidate, error: str) -> None:
        """A URL we decided not to request (robots): a fetch record with no status and no order."""
        self.stats.disallowed += 1
        self._write_fetch(cand, {"url": cand.url, "final_url": None, "status": None, "error": error,
                                 "fetched_at": None, "depth": cand.depth, "parent": cand.parent}, order=None)

    def _store(self, cand: Candidate, record: dict, page: Page | None, result: FetchResult,
               text: bytes | None) -> None:
        """``text``: the page's text as ``pages.text`` stores it (``Analysis.text``, packed by the
        worker along with ``page``), or None: then this process packs ``page.text``."""
        self.order += 1
        self.fetched_total += 1
        self.stats.fetched += 1
        if record.get("status") is not None:
            self.stats.statuses[record["status"]] += 1
        if record.get("error"):
            self.stats.errors += 1
        self.filter.processed()
        self._write_fetch(cand, record, order=self.order)
        if page is not None:
            fp = fingerprint(cand.url)
            if text is None:
                text = pack_text(page.text)
            conn = self.db.conn
            conn.execute(
                "INSERT OR REPLACE INTO pages (fp, url, title, description, keywords, headings, text, lang, encoding,"
                " last_modified, etag) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (fp, cand.url, page.title, page.description, page.keywords, "\n".join(page.headings),
                 text, page.lang, page.encoding,
                 result.header("last-modified"), result.header("etag")))
            conn.executemany(
                "INSERT INTO links (src, dst, dst_url, anchor, visibility, position, distance, nofollow)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(fp, fingerprint(l.url), l.url, l.anchor, l.visibility, l.position, l.distance,
                  int(l.nofollow or page.nofollow)) for l in page.links])

    def _write_fetch(self, cand: Candidate, record: dict, *, order: int | None) -> None:
        self.db.ensure_tx()
        fp = fingerprint(cand.url)
        record = dict(record, fetch_order=order, host=host_key(cand.url))
        cols = ", ".join(record)
        marks = ", ".join("?" for _ in record)
        conn = self.db.conn
        conn.execute(f"INSERT OR REPLACE INTO fetches (fp, {cols}) VALUES (?, {marks})", (fp, *record.values()))
        conn.execute("UPDATE urls SET state = 2 WHERE fp = ?", (fp,))

    def _commit(self) -> None:
        """Flush the WARC file, then commit the batch that points into it (order matters)."""
        if not self.db.in_transaction():
            return
        filename, offset = self.warc.flush()
        self.db.set_meta("warc_commit", [filename, offset])
        self.db.commit()

    async def _committer(self) -> None:
        while True:
            await asyncio.sleep(self.commit_interval)
            self._commit()
            if self.on_progress is not None:
                self.on_progress(self)

    async def _indexer(self) -> None:
        """Keep DIR/index.db current while crawling (skitter.index.live, docs/search.md), in a
        process of its own: it reads crawl.db (WAL readers never block the writer) and writes
        only index.db."""
        if self.config.index_interval <= 0:
            return
        await LiveIndexer(self.directory, pause=self.config.index_interval).run()

    def _finish(self) -> None:
        db = getattr(self, "db", None)
        if db is None:
            return
        try:
            db.ensure_tx()
            exhausted = self.frontier.queued == 0 and self.frontier.in_flight == 0 and not self._interrupted
            state = "finished" if exhausted else "stopped"
            if self.config.max_pages and self.fetched_total >= self.config.max_pages:
                state = "stopped"
            db.set_meta("state", state)
            db.set_meta("finished_at", _now_iso(time.time()))
            self._commit()
            db.release_leases()  # what is still in a window goes back to the queue, for the next run
            db.commit()
            self.state = state
        finally:
            self.warc.close()
            db.close()

    # -- Ctrl-C, and what a stalled crawl waits for ----------------------------------------
    @property
    def interrupted(self) -> bool:
        return self._interrupted or getattr(self, "watchdog", None) is not None and self.watchdog.interrupted

    def interrupt(self) -> None:
        """Stop cleanly: no new requests; what is in flight is abandoned and fetched on resume.
        (SIGINT/SIGTERM reach it through the watchdog, which also stops a loop that does not
        take the request: skitter.watchdog.)"""
        self._interrupted = True
        self._stopping = True
        self.frontier.stop()
        self._stop_event.set()

    def describe_wait(self) -> str:
        """One line: what the crawl is waiting for (the watchdog's report of a stall)."""
        f = self.frontier
        parts = [f"{f.queued:,} URLs queued, {f.in_flight} in flight"]
        held = f.held_hosts(limit=3)
        if held:
            shown = ", ".join(f"{host} for {wait:.1f} s more" + (f" (Crawl-delay {cd:g} s)" if cd else "")
                              for host, wait, cd in held[1])
            parts.append(f"{held[0]} hosts held by politeness ({shown}{', …' if held[0] > len(held[1]) else ''})")
        parts.append(f"{self.robots.pending} robots.txt fetches under way")
        if self.pool is not None:
            parts.append(f"{self.pool.busy} analysis calls in the worker processes")
        where = Counter(_awaiting(task) for task in self._tasks if not task.done())
        if where:
            parts.append("fetch tasks waiting in " + ", ".join(f"{n} {name}" for name, n in where.most_common()))
        return "; ".join(parts)


def _awaiting(task: asyncio.Task) -> str:
    """The innermost of skitter's coroutines a task is suspended in (following ``cr_await``)."""
    coro, name = task.get_coro(), "?"
    package = os.path.dirname(__file__)
    while coro is not None and hasattr(coro, "cr_code"):
        if coro.cr_code.co_filename.startswith(package):
            name = coro.cr_code.co_name
        coro = coro.cr_await
    return name


def _fields(cand: Candidate) -> dict:
    return {"url": cand.url, "depth": cand.depth, "parent": cand.parent, "priority": cand.priority,
            "redirects": cand.redirects, "attempts": cand.attempts, "anchor": cand.anchor}
