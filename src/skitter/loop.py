"""THE crawl loop. Every mode of skitter runs this one loop; it knows its parts only by their seams
and only orchestrates them (docs/architecture.md numbers the same steps):

  1. frontier.next_ready()   the best URL whose host may be contacted now (skitter.frontier)
  2. robots                   the origin's rules, cached, or fetched now in this URL's slot
  3. fetch                    one HTTP hop; every failure is a value (skitter.fetch)
  4. analyse                  WARC records, content hash, parse, fingerprints (skitter.analyse,
                              in the analysis processes)
  5. decide                   duplicate tests (skitter.neardup), then retry / redirect / content /
                              final (skitter.decide, pure)
  6. apply                    links through the filter and the scorer into frontier.add; the fetch
                              record, page and links into the store (skitter.store.crawlstore)
  7. frontier.done()          the host's slot back, the URL done or due again (a retry, a revisit)

With ``--recrawl`` one more part takes part (skitter.recrawl.revisit.Recrawl, named ``recrawl``
below): before step 2 it admits the candidate and paces revisits to the budget and gives them
their conditional request headers; after step 3 a 304 or an unchanged body skips step 4; step 6 is
its ``settle``, which calls the apply step when something is to be stored and gives step 7 the
URL's next due time.

The parts are built by :func:`skitter.api.build_crawler`, the composition root; a test or a
distributed worker hands in other ones (a frontier, a transport, a clock). With ``--forms`` it also
hands in the form crawler (:mod:`skitter.formcrawl`): told of each fetch in step 6, it turns the
searchable forms found into submissions, which enter the frontier like links.

Crash safety: the store commits every ``commit_interval`` seconds, after the WARC file is flushed
to the offset the commit records. A kill -9 loses at most the uncommitted batch; its URLs are
still leased, go back to the queue on resume and are fetched again (they were "in flight"), and
the WARC tail past the commit point is truncated. A page's writes never straddle a commit: they
happen with no await between them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from .analyse import CPU_LIMIT, Analysis, analyse, analyse_limited, archive_only
from .clock import Clock, wait_event
from .config import CrawlConfig
from .crawllog import crawl_log
from .decide import Decision, Rules, decide
from .neardup import DuplicateTests
from .errors import BadSeedError, SkitterError
from .depthrepair import missing
from .frontier.base import Durable, Frontier, Reprioritizing
from .index.live import LiveIndexer
from .linkfilter import LinkFilter
from .models import Candidate, FetchResult, Outcome, Page
from .procpool import ProcessDied, ProcessPool
from .robots.cache import RobotsCache
from .store.crawlstore import CrawlStore, iso
from .strategies import ParentContext, Scorer
from .strategies.base import PageObserver
from .transport import Transport
from .urls import URLError, canonicalize, dns_name_problem, host_key, host_of
from .watchdog import Watchdog

if TYPE_CHECKING:
    from .formcrawl import FormCrawl   # only with --forms: it loads the HTML parser into the crawl process
    from .frontier.local import LocalFrontier   # refill_depths' frontier (the loop names no backend)
    from .recrawl.revisit import Recrawl, Visit   # only with a recrawl (cli.py's recrawl passes one)

log = logging.getLogger(__name__)

# Submissions of one page to the analysis processes, at most: a page that kills its process is
# tried twice, one queued behind a page that kills it again and again (each death makes the others
# in its pipe submit again) at most this many times
_ANALYSE_TRIES = 8


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
    unparsed: int = 0         # responses archived unparsed: their analysis process died
    bytes: int = 0
    statuses: Counter = field(default_factory=Counter)

    def rate(self) -> float:
        return self.fetched / max(1e-9, time.monotonic() - self.started)


def check_seeds(seeds: list[str]) -> list[str]:
    """Canonical seed URLs, or BadSeedError naming the first bad one."""
    out = []
    for s in seeds:
        shown = s if len(s) <= 200 else s[:197] + "..."
        try:
            url = canonicalize(s.strip())
        except URLError as exc:   # its message names the URL already: what is wrong, then the URL
            raise BadSeedError(f"invalid seed URL: {exc}") from None
        problem = dns_name_problem(host_of(url))
        if problem is not None:   # (a link with such a host is a DNS error of its own fetch)
            raise BadSeedError(f"invalid seed URL {shown!r}: {problem}")
        out.append(url)
    if not out:
        raise BadSeedError("no seed URL given")
    return out


class Crawler:
    """One crawl, in one crawl directory. Built by :func:`skitter.api.build_crawler`; then
    ``await crawler.run()``."""

    # A commit every second, not every 0.25 s: the live index process then took 15 instead of 17
    # CPU seconds of the benchmark crawl, and the crawl 30.0 instead of 31.5 s of wall time (six
    # alternated runs each, docs/benchmarks.md); a kill -9 loses at most a second of fetches, which
    # are fetched again. The progress display is still refreshed every ``progress_interval``, and
    # a frontier that waits for a commit (``Durable.wants_commit``: hosts to hand over) gets one then.
    commit_interval = 1.0
    progress_interval = 0.25

    def __init__(self, *, config: CrawlConfig, seeds: list[str], store: CrawlStore, frontier: Frontier,
                 transport: Transport, robots: RobotsCache, scorer: Scorer, link_filter: LinkFilter,
                 duplicates: DuplicateTests, clock: Clock, analyse_options: tuple,
                 on_progress: Callable[[Crawler], None] | None = None, forms: FormCrawl | None = None,
                 recrawl: Recrawl | None = None) -> None:
        self.config = config
        self.seeds = seeds
        self.store = store
        self.frontier = frontier
        self.transport = transport
        self.robots = robots
        self.scorer = scorer
        self._caps: tuple[object, object, tuple[bool, bool]] = (None, None, (False, False))
        self.link_filter = link_filter
        self.duplicates = duplicates
        self.clock = clock
        self.forms = forms   # --forms: the form crawler (skitter.formcrawl), else None
        self.rules = Rules(retries=config.retries, max_redirects=config.max_redirects)
        self._analyse_options = analyse_options
        self.on_progress = on_progress
        self.stats = CrawlStats()
        self.pool: ProcessPool | None = None
        self.state: str | None = None
        self._stopping = False
        self._ending = False        # the crawl's tasks are being cancelled (_crawl)
        self._interrupted = False
        self._stop_event: asyncio.Event | None = None
        self._tasks: list[asyncio.Task] = []
        self._winding_down: dict[str, asyncio.Task] = {}   # the fetch tasks gone: what the end waits for
        self.recrawl = recrawl
        if recrawl is not None:
            recrawl.bind(apply=self._apply, enqueue=self._enqueue, admit=link_filter.admit, pool=lambda: self.pool,
                         stop=self.stop)
        self.watchdog = Watchdog(store.directory, describe=self.describe_wait, on_stop=self.interrupt,
                                 has_work=self._has_work, stall_after=config.stall_after)

    @property
    def directory(self):
        return self.store.directory

    @property
    def fetched_total(self) -> int:
        return self.store.fetched

    # -- running -------------------------------------------------------------------------------
    async def run(self) -> CrawlStats:
        with crawl_log(self.directory):
            try:
                await self._run()
            finally:
                self._finish()
        return self.stats

    async def _run(self) -> None:
        n = self.config.analysis_process_count()
        self.pool = ProcessPool(n) if n else None   # no orphan survives a kill -9 (skitter.procpool)
        try:
            if self.pool is not None:
                try:
                    await self.pool.start()
                except OSError as exc:   # no python to run, no file descriptors or processes left
                    raise SkitterError(f"cannot start analysis processes: {exc}") from None
            await self._enqueue([Candidate(url=s, depth=0, priority=self.scorer.seed_priority(s))
                                 for s in self.seeds if self.link_filter.admit(s, 0)])
            if self.forms is not None:   # submissions the last run had not sent
                await self._submit()
            self.store.commit()
            if self.recrawl is not None:
                await self.recrawl.prepare()   # pages stored before join the collection, a first plan
            await self._crawl()
        finally:
            self.watchdog.close()
            await self.transport.close()
            if self.pool is not None:
                await self.pool.close()

    async def _crawl(self) -> None:
        self._stop_event = asyncio.Event()
        self.watchdog.start()
        committer = asyncio.create_task(self._committer())
        indexer = asyncio.create_task(self._indexer())
        watcher = asyncio.create_task(self.watchdog.run())
        self._tasks = fetchers = [asyncio.create_task(self._fetch_task()) for _ in range(max(1, self.config.concurrency))]
        stopper = asyncio.create_task(self._stop_event.wait())
        planner = asyncio.create_task(self.recrawl.run() if self.recrawl is not None else asyncio.sleep(0))
        gatherer = asyncio.gather(*fetchers)
        first: list[asyncio.Future[Any]] = [gatherer, stopper]
        try:
            await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
        finally:
            # The loops end by this flag too, not by the cancel alone: Python 3.11's wait_for drops
            # a cancel that comes as the call it waits for completes (redis-py sends every command
            # of a cluster client through one), and a committer that lost its cancel went on
            # committing every 0.25 s while this gather waited for it (a distributed crawl hung).
            self._ending = True
            for task in (*fetchers, stopper, committer, indexer, planner):
                task.cancel()
            # the watchdog's heartbeat goes last: the others may take seconds to wind down (the
            # index process finishes its step), and the loop runs all along; a stall report
            # names which of them the end waits for
            self._winding_down = {"the committer": committer, "the live index's last step": indexer,
                                  "the recrawl's planner": planner}
            results = await asyncio.gather(*fetchers, stopper, committer, indexer, planner, return_exceptions=True)
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            if not gatherer.cancelled():
                gatherer.exception()  # retrieved: the same exceptions are in results
            for r in results:
                if isinstance(r, Exception):  # a bug in a fetch task: surface it, never hide it
                    raise r

    def _budget_left(self, counting: Candidate | None = None) -> bool:
        """Requests may still start: fetched + in flight is below --max-pages (``counting``: one
        of those in flight, just handed out, is the one asking)."""
        m = self.config.max_pages
        return not m or self.store.fetched + self.frontier.in_flight - (counting is not None) < m

    async def _fetch_task(self) -> None:
        frontier = self.frontier
        while not self._stopping and not self._ending:
            if self.recrawl is None and not self._budget_left():   # (a recrawl admits first fetches itself)
                if frontier.in_flight == 0:
                    frontier.stop()
                    return
                await asyncio.sleep(0.01)
                continue
            cand = await frontier.next_ready()                        # 1
            if cand is None:
                return
            if self.recrawl is None and not self._budget_left(counting=cand):   # it ran out while this task waited
                await frontier.done(cand, Outcome(requested=False, due=self.clock.time()))
                continue
            self.watchdog.last_activity = time.monotonic()
            cand, outcome = await self._visit(cand)                   # 2-6
            if self.forms is not None and self.forms.waiting:   # the form planners' next submissions
                await self._submit()
            await frontier.done(cand, outcome)                        # 7
            self.watchdog.last_activity = time.monotonic()

    # -- one URL -------------------------------------------------------------------------------
    async def _visit(self, cand: Candidate) -> tuple[Candidate, Outcome]:
        """Steps 2-6 for one candidate: the candidate as it goes back, and what happened."""
        visit: Visit | None = None
        if self.recrawl is not None:   # admitted (or parked outside the collection), paced, validators
            visit = await self.recrawl.begin(cand)
            if visit.outcome is not None:
                return cand, visit.outcome
        if self.config.obey_robots:
            rules = self.robots.cached(cand.url)
            if rules is None:   # 2: robots.txt is fetched in this URL's slot; the URL takes the next
                return cand, await self._read_robots(cand)
            if rules.reason == "unreachable":
                wait = self.robots.retry_in(cand.url)
                if wait is not None:   # robots.txt is tried again then: the URL waits for it, its host too
                    held = None        # (a revisit waits the recrawl's way, skitter.recrawl.revisit)
                    if visit is not None and self.recrawl is not None:
                        held = self.recrawl.blocked(visit, "robots: robots.txt unreachable")
                    return cand, held or self._held_for_robots(wait)
                tries = self.robots.tries(cand.url)
                why = "; ".join(x for x in (rules.detail, f"{tries} tries" if tries > 1 else None) if x)
                why = f" ({why})" if why else ""
                return cand, self._skip(cand, f"robots: robots.txt unreachable{why}, crawling disallowed", visit)
            if not rules.allowed(cand.url):
                return cand, self._skip(cand, "robots: disallowed by robots.txt", visit)
        result = await self.transport.get(cand.url, headers=visit.headers if visit else None)   # 3
        unchanged = None
        if visit:   # a 304, an equal body
            assert self.recrawl is not None   # only the recrawl makes a visit
            unchanged = self.recrawl.unchanged(visit, result)
        analysis = unchanged or await self._analyse(result, cand.url)  # 4
        page = analysis.page
        # a body cut short (over --max-body, a disconnect) or empty is no content to compare: an
        # empty 200 was the "duplicate" of a download refused for its size (a hold-out test)
        tested = analysis.content_hash if result.body and result.error is None else None
        verdict = self.duplicates.test(cand.url, tested, page, analysis.fingerprints)
        decision = decide(cand, result, analysis, verdict, self.rules, self.clock.time())   # 5
        outcome = Outcome(response_time=result.response_time, retry_after=decision.retry_after)
        if decision.kind == "retry":
            self.stats.retries += 1
            return (replace(cand, attempts=cand.attempts + 1),
                    replace(outcome, due=self.clock.time() + decision.retry_in))
        if visit is not None:   # 6, the recrawl's way: stored if new or changed; and the next visit
            assert self.recrawl is not None   # only the recrawl makes a visit
            due = await self.recrawl.settle(visit, result, analysis, decision)
            return replace(cand, attempts=0), replace(outcome, due=due, revisit=True)
        await self._apply(cand, result, analysis, decision)            # 6
        return cand, outcome

    async def _read_robots(self, cand: Candidate) -> Outcome:
        rules = await self.robots.rules_for(cand.url)
        self.stats.robots_fetches += 1
        self.store.record_robots(host_key(cand.url), outcome=rules.reason or "parsed", crawl_delay=rules.crawl_delay,
                                 sitemaps=list(rules.sitemaps), at=self.clock.time())
        if self.recrawl is not None:   # its sitemaps and /sitemap.xml into the frontier
            await self._enqueue(self.recrawl.sitemaps_for(cand.url, rules.sitemaps))
        wait = self.robots.retry_in(cand.url) if rules.reason == "unreachable" else None
        # robots.txt's response time paces the host's next request like a page's would
        took = self.robots.response_time(cand.url)
        if wait is not None:
            return replace(self._held_for_robots(wait), requested=True, crawl_delay=rules.crawl_delay or 0.0,
                           response_time=took)
        return Outcome(crawl_delay=rules.crawl_delay or 0.0, due=self.clock.time(), response_time=took)

    def _held_for_robots(self, wait: float) -> Outcome:
        """A URL of an origin whose robots.txt was unreachable and is tried again in ``wait``
        seconds: it comes back then, and its host waits as long (its other URLs with it, not one
        after another), so a transient 503 or reset costs seconds, not the host (RobotsCache)."""
        return Outcome(requested=False, retry_after=wait, due=self.clock.time() + wait)

    async def _analyse(self, result: FetchResult, url: str) -> Analysis:
        if self.pool is None:
            return analyse(result, url, *self._analyse_options)
        args = (analyse_limited, CPU_LIMIT, result, url, *self._analyse_options)
        ran = 0
        for _ in range(_ANALYSE_TRIES):
            try:
                return await self.pool.submit(*args)
            except ProcessDied as exc:   # the pool has replaced the process
                self._check_pool()
                if exc.cpu_limit:   # this page: it would take as long again
                    log.warning("%s: analysing it took more than %g s of CPU; the response is archived but not "
                                "parsed", url, CPU_LIMIT)
                    break
                ran += exc.running   # (a call queued behind the one that died did nothing wrong)
                if ran >= 2:   # killed, out of memory, or this page, twice: it crashes the parser
                    log.warning("%s: %s; the response is archived but not parsed", url, exc)
                    break
        else:
            log.warning("%s: its analysis process died %d times; the response is archived but not parsed",
                        url, _ANALYSE_TRIES)
        self.stats.unparsed += 1
        return archive_only(result, url)

    def _check_pool(self) -> None:
        if self.pool is not None and self.pool.broken:   # no process can start: stop with the reason
            raise SkitterError(f"analysis: {self.pool.broken}")

    async def _apply(self, cand: Candidate, result: FetchResult, analysis: Analysis, decision: Decision, *,
                     again: bool = False) -> dict:
        """Step 6: new candidates into the frontier first (so a crash after the store's commit
        cannot lose them), then every write of this fetch to the store, with no await between.
        ``again``: a new version of a URL stored before (a recrawl). Returns the fetch record."""
        record = {
            "url": cand.url, "final_url": cand.url, "status": result.status, "error": decision.error,
            "fetched_at": iso(result.started or self.clock.time()), "depth": cand.depth, "parent": cand.parent,
            "content_type": result.content_type,
            "content_length": len(result.body) if result.status is not None else None,
            "elapsed": result.elapsed, "response_time": result.response_time, "ip": result.ip,
        }
        page: Page | None = None
        new: list[Candidate] = []   # what this fetch added to the frontier
        if decision.kind == "redirect":
            if decision.redirect_to is not None:
                record["final_url"] = decision.redirect_to
                if decision.error is None:
                    new = await self._enqueue([Candidate(url=decision.redirect_to, depth=cand.depth, parent=cand.url,
                                                   priority=cand.priority, redirects=cand.redirects + 1)])
        elif decision.kind == "content":
            record["content_hash"] = analysis.content_hash
            if decision.duplicate_of is not None:
                record["duplicate_of"] = decision.duplicate_of
                self.stats.duplicates += 1
            # a duplicate counts as a page (stored, scored, its links followed) only when its links
            # lead where its original's do not: the same bytes at another URL
            if analysis.page is not None and (decision.duplicate_of is None or decision.follow_links):
                page = analysis.page
                relevance, new = await self._follow(cand, page, decision.follow_links)
                record["score"] = relevance if relevance is not None else cand.priority
                record.update(title=page.title, outlinks=page.outlinks, canonical=page.canonical,
                              noindex=int(page.noindex), nofollow=int(page.nofollow))
                if decision.near_duplicate_of is not None:
                    record["near_duplicate_of"] = decision.near_duplicate_of
                    self.stats.near_duplicates += 1
            elif analysis.page is not None:   # a duplicate not taken as a page: its title all the same
                record["title"] = analysis.page.title
        # -- the writes of this fetch: synchronous from here on
        location = self.store.archive(analysis.warc)
        if location is not None:
            record.update(warc_file=location.filename, warc_offset=location.offset, warc_length=location.length)
        if page is not None:
            self.stats.pages += 1
            self.store.record_page(cand.url, page, analysis.text, last_modified=result.header("last-modified"),
                                   etag=result.header("etag"), again=again, main_hash=analysis.main_hash)
        elif again:
            self.store.remove_page(cand.url)   # no page any more (a 404, a redirect, not HTML)
        if self.forms is not None:   # a submission's results reported, the page's forms planned
            self.forms.fetched(cand, record, analysis, new)
        self.store.record_fetch(cand, record, counted=True, again=again)
        self.link_filter.processed()
        self.stats.fetched += 1
        self.stats.bytes += len(result.raw_body)
        if result.status is not None:
            self.stats.statuses[result.status] += 1
        if record["error"]:
            self.stats.errors += 1
        return record

    def _capabilities(self) -> tuple[bool, bool]:
        """Whether the scorer is a PageObserver and the frontier Reprioritizing, per page: cached
        (an isinstance test of a runtime-checkable Protocol is slow: 1.4 % of a crawl's CPU)."""
        scorer, frontier, caps = self._caps
        if scorer is not self.scorer or frontier is not self.frontier:
            caps = (isinstance(self.scorer, PageObserver), isinstance(self.frontier, Reprioritizing))
            self._caps = (self.scorer, self.frontier, caps)
        return caps

    async def _follow(self, cand: Candidate, page: Page, follow_links: bool) -> tuple[float | None, list[Candidate]]:
        """The page's relevance (the scorer's, returned), what the scorer learns from the page,
        and its links into the frontier if ``follow_links`` (returned: the new ones among them)."""
        relevance = self.scorer.relevance(cand.url, page)
        parent = ParentContext(url=cand.url, page=page, depth=cand.depth, priority=cand.priority,
                               relevance=relevance)
        observer, reprioritizing = self._capabilities()
        if observer:   # importance strategies raise queued URLs
            changes = self.scorer.on_page(parent, page.links)   # type: ignore[attr-defined]
            # (with no changes too: a distributed crawl shares what the page added, skitter.distributed)
            if reprioritizing:
                await self.frontier.reprioritize(changes)   # type: ignore[attr-defined]
        if not follow_links:
            return relevance, []
        return relevance, await self._follow_links(cand, page, parent)

    async def _follow_links(self, cand: Candidate, page: Page, parent: ParentContext) -> list[Candidate]:
        """The page's links that pass the link filter, scored, into the frontier; the new ones."""
        if page.nofollow:
            return []
        follow = []
        depth = cand.depth + 1
        seen = self.frontier.seen_recently   # most links of a page lead to URLs seen already
        admit, score = self.link_filter.admit, self.scorer.score
        for link in page.links:
            if link.nofollow or seen(link.url):
                continue
            if admit(link.url, depth):
                follow.append(Candidate(url=link.url, depth=depth, parent=cand.url, priority=score(link, parent)))
        if self.forms is not None:   # a result page's next pages: the submission's depth, at most 20
            follow = self.forms.result_links(cand, follow)
        return await self._enqueue(follow)

    async def _enqueue(self, cands: list[Candidate]) -> list[Candidate]:
        """Into the frontier; a URL that cached robots.txt rules already disallow is recorded at
        once and never takes a politeness slot. Returns the candidates that were new."""
        if not cands:
            return []
        disallowed: list[Candidate] = []
        allowed: list[Candidate] = []
        new: list[Candidate] = []
        for cand in cands:
            rules = self.robots.cached(cand.url) if self.config.obey_robots else None
            blocked = rules is not None and rules.reason is None and not rules.allowed(cand.url)
            (disallowed if blocked else allowed).append(cand)
        if disallowed:
            for cand in await self.frontier.add(disallowed, decided=True):
                self.link_filter.admitted_new(cand.url)
                self._skip(cand, "robots: disallowed by robots.txt")
                new.append(cand)
        if allowed:
            for cand in await self.frontier.add(allowed):
                self.link_filter.admitted_new(cand.url)
                new.append(cand)
        return new

    async def _submit(self) -> None:
        """Forms (issue #22): the planners' next submissions into the frontier, like links."""
        forms = self.forms
        assert forms is not None   # called only with --forms
        while cands := forms.submissions():
            forms.enqueued(cands, await self._enqueue(cands))

    def refill_depths(self, frontier: LocalFrontier) -> int:
        """``frontier`` (this crawl's, local) ran dry under dfs or bfs: the URLs that are within
        ``--max-depth`` by their shortest path through the stored links but were cut because the
        crawl found them deeper first (skitter.depthrepair), into the frontier at that depth,
        through the link filter one at a time (host budgets counted as they go). Returns how many
        went in. It runs on the event loop: about 0.5 s for a 20,000-page crawl, once or twice at
        its end (docs/strategies.md). The composition root (skitter.api) hands it to the frontier
        as its ``refill``."""
        if not self._budget_left():
            return 0
        if self.scorer.name == "bfs" and not self.link_filter.rejected["depth"]:
            return 0   # (bfs: nothing was cut at --max-depth in this run: no walk of the whole graph)
        t0 = time.perf_counter()
        found = missing(self.store.db.conn, self.config.max_depth, keep=self.link_filter.may_enter)
        reason, admitted = self.link_filter.reject_reason, self.link_filter.admitted_new
        n = 0
        # the strategy's priority: dfs's is the depth, bfs's minus the depth (their score: the parent's depth + 1)
        sign = 1.0 if self.scorer.name == "dfs" else -1.0
        for url, depth, parent in found:
            if reason(url, depth) is None:
                for cand in frontier.admit([Candidate(url=url, depth=depth, parent=parent, priority=sign * depth)]):
                    admitted(cand.url)
                    n += 1
        if n:
            log.info("depth: %d URLs within --max-depth %d by a shorter path into the frontier (a walk of %.2f s)",
                     n, self.config.max_depth, time.perf_counter() - t0)
        return n

    def _skip(self, cand: Candidate, error: str, visit: Visit | None = None) -> Outcome:
        """A URL decided without a request (robots.txt): a record with no status and no order.
        (A page of a recrawled collection: the recrawl decides, skitter.recrawl.revisit.)"""
        self.stats.disallowed += 1
        if visit is not None and self.recrawl is not None:
            outcome = self.recrawl.blocked(visit, error)
            if outcome is not None:
                return outcome
        if self.forms is not None:
            self.forms.skipped(cand, error)
        self.store.record_fetch(cand, {"url": cand.url, "final_url": None, "status": None, "error": error,
                                       "fetched_at": None, "depth": cand.depth, "parent": cand.parent},
                                counted=False)
        return Outcome(requested=False)

    # -- around the loop -----------------------------------------------------------------------
    async def _committer(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        durable = self.frontier if isinstance(self.frontier, Durable) else None
        while not self._ending:
            await asyncio.sleep(min(self.commit_interval, self.progress_interval))
            if loop.time() - last >= self.commit_interval or (durable is not None and durable.wants_commit):
                last = loop.time()
                self.store.commit()
                if durable is not None:
                    await durable.committed()
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
        try:
            exhausted = self.frontier.queued == 0 and self.frontier.in_flight == 0 and not self.interrupted
            state = "finished" if exhausted else "stopped"
            if self.config.max_pages and self.store.fetched >= self.config.max_pages:
                state = "stopped"
            if getattr(self.frontier, "budget_spent", False):   # a distributed crawl's --max-pages
                state = "stopped"
            self.store.finish(state, at=self.clock.time())
            self.state = state
        finally:
            self.frontier.stop()   # (a distributed frontier's membership task: the store is closing)
            self.store.close()

    # -- Ctrl-C, and what a stalled crawl waits for ----------------------------------------
    @property
    def interrupted(self) -> bool:
        return self._interrupted or self.watchdog.interrupted

    def interrupt(self) -> None:
        """Stop cleanly: no new requests; what is in flight is abandoned and fetched on resume.
        (SIGINT/SIGTERM reach it through the watchdog, which also stops a loop that does not
        take the request: skitter.watchdog.)"""
        self._interrupted = True
        self.stop()

    def stop(self) -> None:
        """:meth:`interrupt`, but not an interruption: the end of a recrawl's ``--for``."""
        self._stopping = True
        self.frontier.stop()
        if self._stop_event is not None:
            self._stop_event.set()

    def _has_work(self) -> bool:
        """For the watchdog: work that should be making progress. A recrawl's URLs due later are
        not yet work, nor are revisits waiting for the budget. The end of a crawl is work too: a
        last step that does not come back (the index's database locked by another program) is
        reported as what the crawl waits for."""
        if any(not task.done() for task in self._winding_down.values()):
            return True
        if self.recrawl is not None:
            return self.frontier.in_flight > self.recrawl.pacing
        return self.frontier.queued > 0 or self.frontier.in_flight > 0

    def describe_wait(self) -> str:
        """One line: what the crawl is waiting for (the watchdog's report of a stall)."""
        f = self.frontier
        parts = [f"{f.queued:,} URLs queued, {f.in_flight} in flight"]
        held, shown = f.held_hosts(limit=3)
        if held:
            hosts = ", ".join((f"{host} for {wait:.1f} s more" if wait >= 0 else f"{host} ready {-wait:.1f} s ago")
                              + f" ({why})" for host, wait, why in shown)
            parts.append(f"{held} hosts held by politeness or due times ({hosts}{', …' if held > len(shown) else ''})")
        waiting_for = getattr(f, "waiting_for", None)   # what a frontier of its own waits on (Redis leases)
        if waiting_for is not None and (why := waiting_for()):
            parts.append(why)
        parts.append(f"{self.robots.pending} robots.txt fetches under way")
        if self.pool is not None:
            parts.append(f"{self.pool.busy} analysis calls in the analysis processes")
        where = Counter(_awaiting(task) for task in self._tasks if not task.done())
        if where:
            parts.append("fetch tasks waiting in " + ", ".join(f"{n} {name}" for name, n in where.most_common()))
        ending = [f"{what} (in {_awaiting(task)})" for what, task in self._winding_down.items() if not task.done()]
        if ending:
            parts.append("the crawl is ending and waits for " + ", ".join(ending))
        return "; ".join(parts)


_WAIT_EVENT = wait_event.__code__


def _awaiting(task: asyncio.Task) -> str:
    """The innermost of skitter's coroutines a task is suspended in (following ``cr_await``), the
    helpers that only wait (skitter.clock.wait_event) left out."""
    # a walk over whatever the task awaits: coroutines have cr_code and cr_await, others end it
    coro: Any = task.get_coro()
    name = "?"
    package = os.path.dirname(__file__)
    while coro is not None and hasattr(coro, "cr_code"):
        if coro.cr_code.co_filename.startswith(package) and coro.cr_code is not _WAIT_EVENT:
            name = coro.cr_code.co_name
        coro = coro.cr_await
    return name
