"""The incremental crawler's part of the crawl loop (issue #20, docs/recrawl.md): one more part
that :func:`skitter.api.build_crawler` hands in, not a second loop.

The loop (skitter.loop) asks it, for every candidate:

- :meth:`Recrawl.begin` (before robots.txt): a page of the collection is a *revisit*: it takes a
  token of the budget (a token bucket at ``--rate`` a second over the whole collection; each
  host's politeness still applies, in the frontier), or, if its token is not earned yet, goes back
  to the frontier until it is (not holding its host's slot meanwhile), and goes out as a
  conditional request with the stored ETag and Last-Modified. A URL never stored is a first fetch, or, in a full bounded collection,
  waits outside it (seed 000's AllUrls minus CollUrls). A page that left the collection is dropped.
- :meth:`Recrawl.unchanged` (after the fetch): a 304, or a body identical to the stored one, needs
  no analysis: a WARC 1.1 ``revisit`` record is all the archive gets.
- :meth:`Recrawl.settle` (instead of the loop's apply step): what the fetch means for the page. A
  304 or an equal body or an equal main text (noise in the boilerplate: an ad, a date, a session
  token) is *unchanged*: a visit record and the fetch record's time. A new main text is a *change*:
  the loop's apply step stores the new version (a new fetch order, so the search index re-indexes
  it; its links go to the frontier). A 404/410 (or a redirect) once is *missing*: the page stays
  and is visited again soon; twice in a row it is *gone* and leaves the collection and the index,
  and is asked for again a day later, then at doubling waits up to 30 days: back, it rejoins.
  Any other failure keeps the page as it was. Then the page's running statistics
  (:mod:`skitter.recrawl.history`) give its change-rate estimate, the last allocation
  (:mod:`skitter.recrawl.schedule`) its revisit frequency, and the returned due time puts it
  back in the frontier (``Outcome.due``), where the next revisit is one B-tree seek away.
- :meth:`Recrawl.blocked`: robots.txt (re-read when it expires) now disallows a page: it leaves
  the collection; robots.txt unreachable: the visit waits.

In the background (:meth:`Recrawl.run`): the planning pass (:mod:`skitter.recrawl.plan`, seed
000's Ranking Module: importance, site priors, the policy's multiplier, refinement, the estimated
freshness) every ``pass_interval`` seconds, and the end of ``--for``.

Sitemaps: when a robots.txt is read, its ``Sitemap:`` lines and the origin's ``/sitemap.xml`` enter
the frontier (in scope, :mod:`skitter.sitemaps` limits); a sitemap read puts its URLs in the
frontier (through the link filter) and its lastmod / changefreq in ``recrawl_hints``, a page's prior
until its own history speaks (``estimate.sitemap_prior``). Sitemaps are read again when their
robots.txt expires.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from collections.abc import Awaitable, Callable

import xxhash

from ..analyse import Analysis
from ..clock import Clock, wait_event
from ..config import CrawlConfig
from ..frontier.base import Rescheduling
from ..httpdate import http_time
from ..models import Candidate, FetchResult, Outcome
from ..store.crawlstore import CrawlStore, iso
from ..store.recrawlstore import RecrawlStore
from ..store.warc import PROFILE_IDENTICAL, PROFILE_NOT_MODIFIED, encode_revisit
from ..urls import URLError, canonicalize, fingerprint, host_key
from .estimate import GammaPrior, sitemap_prior
from .history import PageStats, observe, posterior
from .schedule import Allocation, EXPLORE

if TYPE_CHECKING:
    from ..procpool import ProcessPool

log = logging.getLogger(__name__)

MIN_INTERVAL = 1.0            # seconds: no page is due again sooner
LM_LIARS = 3                  # pages of a host caught with a lying Last-Modified: none of its pages' is used
MAX_INTERVAL = 30 * 86400.0   # seconds: every page of the collection is looked at at least this often
CONFIRM_AFTER = 3600.0        # seconds at most before a missing page's confirming visit
GONE_RECHECK = 86400.0        # seconds from a page's going to the first look at whether it is back;
#                               doubling at each look that finds it still gone, up to MAX_INTERVAL
UNREACHABLE_WAIT = 300.0      # seconds a revisit waits when its robots.txt is unreachable
PASS_MIN, PASS_MAX = 5.0, 300.0   # seconds between planning passes (a quarter of a uniform cycle)
PRIORS_EVERY = 6            # planning passes between two fits of the site priors (the costly part)
MAX_SITEMAPS_PER_ORIGIN = 1000
EARLY = 0.01   # seconds: a revisit back this early for its budget token goes (the frontier's due times
               # are epoch seconds and it hands URLs out up to a millisecond early, frontier.local.DUE_SLACK)


@dataclass
class Visit:
    """One candidate as the recrawl sees it, from :meth:`Recrawl.begin` to :meth:`Recrawl.settle`."""

    cand: Candidate
    page: dict[str, Any] | None = None    # its row of recrawl_pages (None: never stored as a page)
    revisit: bool = False                 # a page of the collection fetched again
    sitemap: bool = False
    headers: dict[str, str] | None = None  # the conditional request's
    outcome: Outcome | None = None        # no request: this instead
    kind: str | None = None               # set by unchanged(): "304" or "same"
    recheck: bool = False                 # a gone page: is it back? (an unconditional first fetch)


def _recheck_wait(times_gone: int) -> float:
    """Seconds before a gone page is looked at again, after ``times_gone`` visits found it gone."""
    return min(GONE_RECHECK * 2.0 ** min(times_gone - 1, 40), MAX_INTERVAL)


class TokenBucket:
    """At most ``rate`` takes a second on average, ``burst`` at once; waiters are served in turn.
    :meth:`reserve` takes a token without waiting: the caller learns when it is due (the revisit
    then goes back to the frontier until then instead of holding its host's slot)."""

    def __init__(self, rate: float, clock: Clock, burst: float | None = None) -> None:
        self.rate = rate
        self.capacity = max(1.0, burst if burst is not None else rate)
        self.tokens = self.capacity
        self.clock = clock
        self.stamp = clock.monotonic()
        self.waiting = 0
        self._lock: asyncio.Lock | None = None

    def reserve(self) -> float:
        """Take the next token; the seconds until it is earned (0: now). Tokens taken ahead are a
        debt the refill pays back, so reservations are due 1/rate apart, in turn."""
        now = self.clock.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        self.tokens -= 1.0
        return 0.0 if self.tokens >= -1e-9 else -self.tokens / self.rate

    async def take(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        self.waiting += 1
        try:
            async with self._lock:
                while True:
                    now = self.clock.monotonic()
                    self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
                    self.stamp = now
                    if self.tokens >= 1.0 - 1e-9:   # (rounding must not leave a waiter spinning)
                        self.tokens = max(self.tokens - 1.0, 0.0)
                        return
                    await asyncio.sleep(max((1.0 - self.tokens) / self.rate, 1e-3))
        finally:
            self.waiting -= 1


def _phase(url: str) -> float:
    """A number in (0, 1] fixed by the URL: the first revisit's share of the revisit interval, so
    pages crawled together do not all fall due together (and a rerun is reproducible)."""
    return ((fingerprint(url) >> 11) % 65536 + 1) / 65536


@dataclass
class Counters:
    visits: int = 0         # revisits this session
    changes: int = 0
    not_modified: int = 0
    same: int = 0
    noise: int = 0
    gone: int = 0
    back: int = 0           # gone pages found again by a recheck
    added: int = 0
    discarded: int = 0
    errors: int = 0
    sitemaps: int = 0
    extra: dict = field(default_factory=dict)


class Recrawl:
    """See the module docstring. Built by ``api.build_crawler`` when ``config.recrawl`` is on;
    ``until``: the end of ``--for`` (epoch seconds), None to run until stopped."""

    def __init__(self, store: CrawlStore, config: CrawlConfig, clock: Clock, frontier: Any, *,
                 until: float | None = None, plan_inline: bool | None = None) -> None:
        self.store = store
        self.db = RecrawlStore(store)
        self.config = config
        self.clock = clock
        self.frontier = frontier
        self.until = until
        self.plan_inline = config.analysis_process_count() == 0 if plan_inline is None else plan_inline
        self.bucket = TokenBucket(config.rate, clock)
        self.members = self.db.collection_size()
        self.reserved: set[int] = set()      # first fetches handed out, not settled yet
        self.tokens_due: dict[int, float] = {}   # revisits holding a budget token: when it is earned
        self.allocation = Allocation(config.policy, config.rate, self.members,
                                     config.rate / max(self.members, 1), EXPLORE * config.rate / max(self.members, 1))
        self.priors: dict[str, GammaPrior] = {}
        self.lm_liars = Counter(self.db.lm_liars())   # host -> pages whose Last-Modified lied
        self.counters = Counters()
        self.totals = self.db.totals()
        self.last_plan: dict[str, Any] | None = None
        self._apply: Callable[..., Awaitable[dict]] | None = None
        self._enqueue: Callable[[list[Candidate]], Awaitable[list[Candidate]]] | None = None
        self._admit: Callable[[str, int], bool] = lambda url, depth: True
        self._pool: Callable[[], Any] = lambda: None
        self._stop: Callable[[], None] = lambda: None
        self._plan_pool: ProcessPool | None = None
        self._soon: asyncio.Event | None = None    # the collection grew: plan again soon
        self._passes = 0

    def bind(self, *, apply: Callable[..., Awaitable[dict]],
             enqueue: Callable[[list[Candidate]], Awaitable[list[Candidate]]],
             admit: Callable[[str, int], bool], pool: Callable[[], Any], stop: Callable[[], None]) -> None:
        """The loop's own steps the recrawl calls: its apply step, its enqueue (frontier.add with
        the robots check), the link filter's test, its analysis pool and its clean stop."""
        self._apply, self._enqueue, self._admit, self._pool, self._stop = apply, enqueue, admit, pool, stop

    def _bound_apply(self) -> Callable[..., Awaitable[dict]]:
        """The loop's apply step (``bind`` gives it before the loop starts)."""
        assert self._apply is not None, "Recrawl.bind() was not called"
        return self._apply

    @property
    def pacing(self) -> int:
        """Candidates waiting for the budget (the watchdog does not count them as stalled)."""
        return self.bucket.waiting

    # -- before the loop starts --------------------------------------------------------------
    async def prepare(self) -> None:
        """Pages stored before recrawling was on join the collection, a first plan is made, and
        every page with no due time gets one (its first revisit at a random share of its
        interval)."""
        added = self.db.bootstrap()
        if added:
            log.info("recrawl: %d stored pages join the collection", added)
            self.members = self.db.collection_size()
        await self.replan()
        now = self.clock.time()
        reschedule = self.frontier.reschedule if isinstance(self.frontier, Rescheduling) else None
        while True:
            rows = self.db.unscheduled()
            if not rows:
                break
            changes = []
            for page in rows:
                est = self._estimate(page, self._stats(page))
                self._store_estimate(page, est)
                page["due"] = now + _phase(page["url"]) * self._interval(page, est.rate_per_second)
                self.db.save_page(page)
                changes.append((Candidate(url=page["url"], depth=0, priority=1.0), page["due"]))
            if reschedule is not None:
                await reschedule(changes)
        self.store.commit()

    # -- 1: the candidate --------------------------------------------------------------------
    async def begin(self, cand: Candidate) -> Visit:
        fp = fingerprint(cand.url)
        page = self.db.page(fp)
        if page is None:
            if self.db.is_sitemap(fp):
                return Visit(cand, sitemap=True)
            if not self._room(fp):
                if self.config.collection:
                    self.db.park(cand, self.clock.time())
                return Visit(cand, outcome=Outcome(requested=False))
            self.reserved.add(fp)
            return Visit(cand)
        recheck = not page["in_collection"]
        if recheck and (page["state"] != "gone" or page["due"] is None):
            self.tokens_due.pop(fp, None)
            return Visit(cand, page, outcome=Outcome(requested=False))   # discarded, disallowed
        if recheck and not self._room(fp):
            # a gone page's recheck while the bounded collection is full: put off to the next
            # recheck time (it would have no room if it were back; parked outside, a refinement swap
            # could admit it unverified in place of a live page)
            self.tokens_due.pop(fp, None)
            page["due"] = self.clock.time() + _recheck_wait(page["missing"] or 1)
            self.db.save_page(page)
            return Visit(cand, page, outcome=Outcome(requested=False, due=page["due"], revisit=True))
        if not recheck and (page["state"] == "admitted" or page["body_hash"] is None):
            return Visit(cand, page)   # admitted by refinement: a first fetch
        # the budget: a revisit whose token is not earned yet goes back to the frontier until it is
        # (waiting here would hold its host's slot, and the host's new URLs would wait behind it)
        now = self.clock.monotonic()
        due = self.tokens_due.pop(fp, None)
        wait = self.bucket.reserve() if due is None else max(due - now, 0.0)
        if wait > EARLY:
            self.tokens_due[fp] = now + wait
            return Visit(cand, page, outcome=Outcome(requested=False, due=self.clock.time() + wait, revisit=True))
        if recheck:   # a gone page's recheck takes a token too, and asks for the page as a first fetch does
            self.reserved.add(fp)
            return Visit(cand, page, recheck=True)
        headers = {}
        if page["etag"]:
            headers["If-None-Match"] = page["etag"]
        if page["last_modified"]:
            headers["If-Modified-Since"] = page["last_modified"]
        return Visit(cand, page, revisit=True, headers=headers or None)

    def _room(self, fp: int) -> bool:
        busy = len(self.reserved - {fp})
        cap, most = self.config.collection, self.config.max_pages
        return (not cap or self.members + busy < cap) and (not most or self.store.fetched + busy < most)

    # -- 4: no analysis for an unchanged page --------------------------------------------------
    def unchanged(self, visit: Visit, result: FetchResult) -> Analysis | None:
        """The analysis of a 304 or of a body equal to the stored one: a revisit record only."""
        page = visit.page
        if not visit.revisit or page is None:
            return None
        if result.status == 304:
            visit.kind, profile = "304", PROFILE_NOT_MODIFIED
        elif (result.status is not None and 200 <= result.status < 300 and page["body_hash"]
              and xxhash.xxh3_128_hexdigest(result.body) == page["body_hash"]):
            visit.kind, profile = "same", PROFILE_IDENTICAL
        else:
            return None
        warc = encode_revisit(result, target_uri=visit.cand.url, profile=profile, refers_to_uri=visit.cand.url,
                              refers_to_date=page["version_at"] or page["first_visit"] or result.started)
        return Analysis(warc, page["body_hash"] if visit.kind == "same" else None, None, None, None,
                        page["text_hash"])

    # -- 2: robots.txt says no -------------------------------------------------------------------
    def blocked(self, visit: Visit, error: str) -> Outcome | None:
        """A revisit, or a gone page's recheck, robots.txt stops: unreachable, it waits; disallowed,
        the page leaves the collection (a recheck's is out of it already), its fetch record saying
        why. None for a first fetch (the loop records it)."""
        self.reserved.discard(fingerprint(visit.cand.url))
        page = visit.page
        if page is None or not (visit.revisit or visit.recheck):
            return None
        now = self.clock.time()
        if "unreachable" in error:
            return Outcome(requested=False, due=now + UNREACHABLE_WAIT, revisit=True)
        self.store.record_fetch(visit.cand, {"url": visit.cand.url, "final_url": None, "status": None,
                                             "error": error, "fetched_at": None, "depth": visit.cand.depth,
                                             "parent": visit.cand.parent}, counted=False, again=True)
        if visit.recheck:
            page.update(state="disallowed", due=None)
            self.db.save_page(page)
        else:
            self._leave(page, "disallowed", now)
        self.db.add_visit(page["fp"], now, status=None, kind="disallowed", changed=None, last_modified=None,
                          location=None)
        return Outcome(requested=False)

    def _leave(self, page: dict[str, Any], state: str, now: float) -> None:
        self.store.remove_page(page["url"])
        page.update(state=state, in_collection=0, due=None)
        self.db.save_page(page)
        self.members -= 1

    # -- 6: what the fetch means ------------------------------------------------------------------
    async def settle(self, visit: Visit, result: FetchResult, analysis: Analysis, decision: Any) -> float | None:
        """Apply the fetch (the loop's apply step where something is stored) and return the URL's
        next due time (None: done)."""
        cand, page = visit.cand, visit.page
        now = result.started or self.clock.time()
        fp = fingerprint(cand.url)
        self.reserved.discard(fp)
        if visit.sitemap:
            await self._bound_apply()(cand, result, analysis, decision)
            await self._read_sitemap(cand, result, now)
            return now + self.config.robots_expiry
        if not visit.revisit:
            record = await self._bound_apply()(cand, result, analysis, decision, again=page is not None)
            if visit.recheck:
                return self._rechecked(visit, result, analysis, decision, record, now)
            if decision.kind != "content" or (page is None and analysis.content_hash is None):
                if page is not None:   # admitted, but it is no page any more
                    self._leave(page, "gone", now)
                return None
            return self._first(cand, page, result, analysis, record, now)
        current = self.db.page(fp)
        if current is None or not current["in_collection"]:
            # discarded by a planning pass while this revisit was in flight: it stays out (saving
            # the page as the visit began would put it back, one page over --collection)
            return None
        visit.page = current   # (and the planning pass's weight, importance and due since it began)
        return await self._revisit(visit, result, analysis, decision, now)

    def _gone(self, page: dict[str, Any], now: float) -> float:
        """The page is gone (out of the collection, the pages table and the index): it is looked at
        again after ``GONE_RECHECK``, twice that after a recheck that finds it still gone, and so on
        up to ``MAX_INTERVAL`` (``missing`` counts the visits that found it gone). A page removed
        for a site's maintenance window comes back; one removed for good costs a request a month."""
        self._leave(page, "gone", now)
        page["missing"] = max(1, page.get("missing") or 0)
        page["due"] = now + _recheck_wait(page["missing"])
        return page["due"]

    def _rechecked(self, visit: Visit, result: FetchResult, analysis: Analysis, decision: Any, record: dict,
                   now: float) -> float | None:
        """A gone page's recheck: back (a 2xx page), it joins the collection again as a first fetch
        does; still gone (404, 410, a redirect) or any other failure (a 5xx, a dead domain), its
        next recheck is twice as far."""
        page = self.db.page(fingerprint(visit.cand.url)) or visit.page
        assert page is not None
        if page["in_collection"] or page["state"] != "gone":
            return None   # (refinement or a robots.txt decision took it over meanwhile)
        if decision.kind == "content" and analysis.content_hash is not None:
            self.counters.back += 1
            self.members += 1
            return self._first(visit.cand, page, result, analysis, record, now)
        status = result.status
        still_gone = status in (404, 410) or decision.kind == "redirect"
        page["missing"] = (page["missing"] or 1) + 1
        page["visits"] += 1
        due = now + _recheck_wait(page["missing"])
        page["due"] = due
        self.db.save_page(page)
        self.db.add_visit(page["fp"], now, status=status, kind="gone" if still_gone else "error", changed=None,
                          last_modified=None, location=_location(record))
        return due

    def _first(self, cand: Candidate, page: dict[str, Any] | None, result: FetchResult, analysis: Analysis,
               record: dict, now: float) -> float:
        """A page enters the collection (a first fetch, or a page admitted by refinement): its
        baseline, and its first revisit at a random share of its interval."""
        new = page is None
        if page is None:
            page = {"fp": fingerprint(cand.url), "url": cand.url, "host": host_key(cand.url), "kind": "page",
                    "visits": 0, "changes": 0, "weight": 1.0, "first_visit": now, "missing": 0}
            self.members += 1
        lm = http_time(result.header("last-modified"))
        stats = observe(self._stats(page), now, None, lm)
        page.update(state="live", in_collection=1, visits=page.get("visits", 0) + 1, last_visit=now,
                    etag=result.header("etag"), last_modified=result.header("last-modified"),
                    body_hash=analysis.content_hash, text_hash=analysis.main_hash, version_at=now,
                    last_change=lm if new else page.get("last_change"), missing=0)
        self._put_stats(page, stats)
        est = self._estimate(page, stats)
        self._store_estimate(page, est)
        page["due"] = now + _phase(cand.url) * self._interval(page, est.rate_per_second)
        self.db.save_page(page)
        self.db.add_visit(page["fp"], now, status=result.status, kind="first", changed=None, last_modified=lm,
                          location=_location(record))
        return page["due"]

    async def _revisit(self, visit: Visit, result: FetchResult, analysis: Analysis, decision: Any,
                       now: float) -> float | None:
        cand, page = visit.cand, visit.page
        assert page is not None
        status = result.status
        kind = visit.kind
        if kind is None:
            if decision.kind == "content":
                if analysis.content_hash == page["body_hash"]:
                    kind = "same"
                elif page["text_hash"] and analysis.main_hash == page["text_hash"]:
                    kind = "noise"
                elif not page["text_hash"]:
                    kind = "baseline"
                else:
                    kind = "changed"
            elif status in (404, 410) or decision.kind == "redirect":
                kind = "gone" if page["missing"] else "missing"
            else:
                kind = "error"
        lm = http_time(result.header("last-modified"))
        c = self.counters
        c.visits += 1
        timing = {"fetched_at": iso(now), "elapsed": result.elapsed, "response_time": result.response_time,
                  "ip": result.ip}
        location = None
        changed: bool | None = None
        if kind in ("304", "same", "noise"):
            loc = self.store.archive(analysis.warc)
            location = None if loc is None else (loc.filename, loc.offset, loc.length)
            changed = False
            if kind == "304":
                c.not_modified += 1
                self.store.touch_fetch(cand.url, timing)
            elif kind == "same":
                c.same += 1
                self.store.touch_fetch(cand.url, dict(timing, status=status))
            else:
                c.noise += 1
                self.store.touch_fetch(cand.url, dict(timing, status=status, content_hash=analysis.content_hash,
                                                      content_length=len(result.body), warc_file=loc.filename,
                                                      warc_offset=loc.offset, warc_length=loc.length)
                                       if loc is not None else dict(timing, status=status))
                page["body_hash"] = analysis.content_hash
            if lm is None and kind == "304":
                lm = http_time(page["last_modified"])
        elif kind in ("changed", "baseline"):
            record = await self._bound_apply()(cand, result, analysis, decision, again=True)
            location = _location(record)
            changed = True if kind == "changed" else None
            if changed:
                c.changes += 1
            page.update(body_hash=analysis.content_hash, text_hash=analysis.main_hash, version_at=now)
        elif kind == "gone":
            record = await self._bound_apply()(cand, result, analysis, decision, again=True)
            c.gone += 1
            due = self._gone(page, now)
            page["visits"] += 1
            self.db.save_page(page)
            self.db.add_visit(page["fp"], now, status=status, kind=kind, changed=None, last_modified=None,
                              location=_location(record))
            return due
        else:   # missing once, or another failure: the stored version stays
            loc = self.store.archive(analysis.warc)
            location = None if loc is None else (loc.filename, loc.offset, loc.length)
            c.errors += kind == "error"
        page["visits"] += 1
        if kind == "missing":
            page["missing"] = 1
            page["state"] = "missing"
        else:
            page["missing"] = 0
            page["state"] = "live"
        if kind not in ("missing", "error"):
            before = self._stats(page)
            stats = observe(before, now, changed, lm)
            if before.lm_ok and not stats.lm_ok and page["last_modified"]:
                self.lm_liars[page["host"]] += 1
            page["etag"] = result.header("etag") or page["etag"]
            page["last_modified"] = result.header("last-modified") or page["last_modified"]
            if changed:
                page["changes"] += 1
                prev = page["last_visit"]
                page["last_change"] = lm if lm is not None and prev is not None and prev < lm <= now + 1 \
                    else (prev + now) / 2 if prev is not None else now
            elif changed is None and lm is not None:
                page["last_change"] = lm
            page["last_visit"] = now
            self._put_stats(page, stats)
        else:
            stats = self._stats(page)
        est = self._estimate(page, stats)
        self._store_estimate(page, est)
        interval = self._interval(page, est.rate_per_second)
        if kind == "missing":
            interval = min(interval, CONFIRM_AFTER)
        page["due"] = now + interval
        self.db.save_page(page)
        self.db.add_visit(page["fp"], now, status=status, kind=kind, changed=changed, last_modified=lm,
                          location=location)
        return page["due"]

    # -- the estimate and the schedule ------------------------------------------------------
    @staticmethod
    def _stats(page: dict[str, Any]) -> PageStats:
        return PageStats(page.get("n") or 0, page.get("x") or 0, PageStats.loglik_from(page.get("loglik")),
                         bool(page.get("lm_ok", 1)), page.get("lm_x") or 0, page.get("lm_t") or 0.0,
                         page.get("last_visit"), page.get("lm_time"))

    @staticmethod
    def _put_stats(page: dict[str, Any], stats: PageStats) -> None:
        page.update(n=stats.n, x=stats.x, loglik=stats.blob(), lm_ok=int(stats.lm_ok), lm_x=stats.lm_x,
                    lm_t=stats.lm_t, lm_time=stats.last_lm)

    def _prior(self, page: dict[str, Any]) -> GammaPrior | None:
        hint = self.db.hint(page["fp"])
        if hint is not None:
            changefreq, lastmod, read_at = hint
            prior = sitemap_prior(changefreq, None if lastmod is None else read_at - lastmod)
            if prior is not None:
                # with the site prior's heavy tail (or one as fine as revisits go): a page whose
                # own changes say it is far faster than its sitemap's "hourly" is let go, as from
                # its site's prior (a hold-out sitemap's hourly pages changing every 4 to 100 s
                # were held at 8 to 10 minutes, 6 changes in 6 visits notwithstanding)
                site = self.priors.get(page["host"])
                tail = site.tail_interval if site is not None and site.tail_interval else MIN_INTERVAL
                return replace(prior, tail_interval=tail)
        return self.priors.get(page["host"])

    def _estimate(self, page: dict[str, Any], stats: PageStats):
        if stats.lm_ok and self.lm_liars[page["host"]] >= LM_LIARS:
            # its site's header lies on other pages: a page that changed at every visit never had
            # the chance to show it (an always-"now" header agrees with every change)
            stats = replace(stats, lm_ok=False)
        return posterior(stats, self._prior(page))

    @staticmethod
    def _store_estimate(page: dict[str, Any], est) -> None:
        page.update(rate=est.rate_per_second, rate_low=est.low,
                    rate_high=est.high if math.isfinite(est.high) else None, method=est.method)

    def _interval(self, page: dict[str, Any], rate: float) -> float:
        alloc = self.allocation
        if alloc.pages == 0 or self.members > 1.25 * alloc.pages + 4:
            # the collection grew since the last plan (a discovery crawl under way; a plan over no
            # pages gives every page 0, a first revisit 30 days away): the uniform share of the
            # collection as it is, until the next plan, which comes soon
            n = max(self.members, 1)
            alloc = Allocation("uniform", self.config.rate, n, self.config.rate / n, EXPLORE * self.config.rate / n)
            if self._soon is not None:
                self._soon.set()
        f = alloc.frequency(rate, page.get("weight") or 1.0)
        page["frequency"] = f
        return min(max(1.0 / f if f > 0 else MAX_INTERVAL, MIN_INTERVAL), MAX_INTERVAL)

    # -- sitemaps ------------------------------------------------------------------------------
    def sitemaps_for(self, url: str, lines: list[str] | tuple[str, ...]) -> list[Candidate]:
        """When a robots.txt is read: its sitemaps and the origin's /sitemap.xml, in scope, as
        candidates (each registered once; those known are read again, due now)."""
        origin = url.split("/", 3)
        base = "/".join(origin[:3])
        wanted = []
        # only a robots.txt of a host in scope names sitemaps elsewhere: one out of scope (read
        # for a redirect, or for a sitemap named from elsewhere) would lead from host to host
        listed = len(lines) if self._admit(base + "/", 0) else 0
        for i, raw in enumerate([*lines, base + "/sitemap.xml"]):
            try:
                sitemap = canonicalize(raw.strip())
            except URLError:
                continue
            # a robots.txt may name a sitemap on another host (sitemaps.org's cross-submits): it
            # is read wherever it is, and its URLs pass the scope test one by one
            if sitemap not in wanted and (i < listed or self._admit(sitemap, 0)):
                wanted.append(sitemap)
        out = []
        for sitemap in wanted:
            if self.db.add_sitemap(sitemap, base):
                out.append(Candidate(url=sitemap, depth=0, priority=1.0))
        return out

    async def _read_sitemap(self, cand: Candidate, result: FetchResult, now: float) -> None:
        from ..sitemaps import parse_cross_host

        status = result.status
        if status is None or not 200 <= status < 300:
            self.db.sitemap_read(cand.url, now, None, 0, result.error or f"status {status}")
            return
        pool = self._pool()
        # (robots.txt's sitemaps may name other hosts: the link filter decides what is in scope)
        sm = await pool.submit(parse_cross_host, result.body, cand.url) if pool is not None \
            else parse_cross_host(result.body, cand.url)
        self.counters.sitemaps += 1
        error = sm.error
        if error is None and sm.ignored:   # (the protocol's cap: said, not silently dropped)
            error = f"{sm.ignored} URLs past the protocol's 50,000 left out"
        self.db.sitemap_read(cand.url, now, sm.kind, len(sm.entries), error)
        base = "/".join(cand.url.split("/", 3)[:3])
        children = []
        if self.db.sitemaps_of(base) < MAX_SITEMAPS_PER_ORIGIN:
            for child in sm.sitemaps:
                # (an index's sitemaps on its own host are read, as it was, whatever the scope)
                same = child.loc.split("/", 3)[:3] == cand.url.split("/", 3)[:3]
                if (same or self._admit(child.loc, 0)) and self.db.add_sitemap(child.loc, base):
                    children.append(Candidate(url=child.loc, depth=0, priority=1.0))
        entries = [e for e in sm.entries if self._admit(e.loc, 1)]
        self.db.add_hints([(fingerprint(e.loc), e.changefreq, e.lastmod) for e in entries
                           if e.changefreq or e.lastmod is not None], now)
        cands = children + [Candidate(url=e.loc, depth=1, parent=cand.url, priority=0.5) for e in entries]
        if cands and self._enqueue is not None:
            await self._enqueue(cands)

    # -- the planning pass and the end -------------------------------------------------------
    def pass_interval(self) -> float:
        return min(max(self.members / max(self.config.rate, 1e-9) / 4, PASS_MIN), PASS_MAX)

    async def run(self) -> None:
        """In the background while the loop runs: a planning pass every ``pass_interval``
        seconds, and the clean stop at the end of ``--for``."""
        self._soon = asyncio.Event()
        try:
            while True:
                started = self.clock.monotonic()
                wait = self.pass_interval()
                if self.until is not None:
                    wait = min(wait, self.until - self.clock.time())
                if wait > 0:
                    await wait_event(self._soon, wait)
                self._soon.clear()
                rest = PASS_MIN - (self.clock.monotonic() - started)
                if rest > 0 and (self.until is None or self.clock.time() + rest < self.until):
                    await asyncio.sleep(rest)   # at most one pass every PASS_MIN seconds
                if self.until is not None and self.clock.time() >= self.until:
                    log.info("recrawl: --for is over")
                    self._stop()
                    return
                await self.replan()
        finally:
            if self._plan_pool is not None:
                pool, self._plan_pool = self._plan_pool, None
                await pool.close()

    async def replan(self) -> None:
        from .plan import plan

        self.store.commit()   # the pass reads what is committed
        self._passes += 1
        fit = self._passes % PRIORS_EVERY == 1 or not self.priors
        args = (str(self.store.directory), self.config.policy, self.config.rate, self.config.importance,
                self.config.collection, self.clock.time(), max(1, self.config.collection // 20), fit)
        if self.plan_inline:
            result = plan(*args)
        else:
            pool = self._plan_pool
            if pool is None:
                from ..procpool import ProcessPool

                pool = self._plan_pool = ProcessPool(1)
                await pool.start()
            result = await pool.submit(plan, *args)
        await self._apply_plan(result)

    async def _apply_plan(self, result: dict[str, Any]) -> None:
        a = result["allocation"]
        self.allocation = Allocation(a["policy"], a["budget"], a["pages"], a["multiplier"], a["floor"])
        if result["priors"] is not None:
            self.priors = {host: GammaPrior(*ab) for host, ab in result["priors"].items()}
        if result["weights"]:
            self.db.update_pages("weight", result["weights"])
        if result["importance"]:
            self.db.update_pages("importance", result["importance"])
        now = self.clock.time()
        admitted = []
        for out_fp, out_url, depth, parent, priority, in_fp, in_url in result["swaps"]:
            page = self.db.page(in_fp)
            if page is None or not page["in_collection"]:
                continue
            self.store.reorder(in_url)
            self._leave(page, "discarded", now)
            self.counters.discarded += 1
            self.db.unpark(out_fp)
            new = self.db.page(out_fp) or {"fp": out_fp, "url": out_url, "host": host_key(out_url), "visits": 0,
                                           "changes": 0, "weight": 1.0, "missing": 0}
            new.update(kind="added", state="admitted", in_collection=1, due=now)
            self.db.save_page(new)
            self.members += 1
            self.counters.added += 1
            admitted.append((Candidate(url=out_url, depth=depth or 1, parent=parent, priority=max(priority or 0, 1.0)),
                             now))
        for in_fp, in_url in result.get("evict", ()):
            page = self.db.page(in_fp)
            if page is None or not page["in_collection"] or self.members <= self.config.collection:
                continue
            self.store.reorder(in_url)
            self._leave(page, "discarded", now)
            self.counters.discarded += 1
        # (a page that left the collection since the pass read it keeps its own due time: a gone
        # page's is its recheck)
        inside = self.db.in_collection(fp for fp, _, _ in result["earlier"])
        earlier = [(fp, url, due) for fp, url, due in result["earlier"] if fp in inside]
        for _fp, url, due in earlier:
            admitted.append((Candidate(url=url, depth=0, priority=1.0), due))
        if earlier:
            self.db.update_pages("due", [(due, fp) for fp, _, due in earlier])
        if admitted:
            if isinstance(self.frontier, Rescheduling):
                await self.frontier.reschedule(admitted)
        c, t = self.counters, self.totals
        self.db.log({"at": now, "pages": self.members, "freshness": result["freshness"],
                     "weighted_freshness": result["weighted_freshness"], "visits": t["visits"] + c.visits,
                     "changes": t["changes"] + c.changes, "not_modified": t["not_modified"] + c.not_modified,
                     "added": t["added"] + c.added, "discarded": t["discarded"] + c.discarded,
                     "multiplier": self.allocation.multiplier, "budget": self.config.rate})
        self.last_plan = result


def _location(record: dict | None) -> tuple[str, int, int] | None:
    if not record or record.get("warc_file") is None:
        return None
    return record["warc_file"], record["warc_offset"], record["warc_length"]
