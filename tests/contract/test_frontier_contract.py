"""The frontier seam's contract: what the crawl loop relies on from ANY frontier backend.

Every backend in ``BACKENDS`` runs the same suite (the local SQLite frontier; the Redis one of
distributed crawling joins the list). A hypothesis state machine drives random sequences of
add / next_ready / done (a fetch, a retry due later, robots.txt read first, no request at all) /
reprioritize / stop while the clock moves by a random amount on EVERY reading (zero,
sub-millisecond, seconds and jumps of hours), and checks after each step:

- exactly once: every admitted URL is handed out once, plus once per retry, and never while it is
  in flight; ``add`` returns exactly the URLs never admitted before (the URL-seen test);
- never spins: a ``next_ready`` call returns or parks within a bounded number of clock readings
  (the clock raises ``ClockSpin`` beyond it: the hang of issue 17 was a synchronous loop);
- liveness: ``next_ready`` does not park while some host has a URL that is due, a free slot and a
  due politeness time;
- politeness: never more than ``per_host`` in flight on a host; a start is never before the host's
  due time, computed by an independent model of the rules (delay, Crawl-delay capped, adaptive ×
  response time, Retry-After capped; a candidate given back without a request restores the host's
  time if no other request started since), from the readings the backend took;
- a URL's own due time: a retried URL is not handed out before it, and its host is not held by it;
- order: within a host, a URL back from a due time (a retry, robots.txt read in its slot) first, in
  the order they fell due; then the best priority, ties in admission order;
- the crawl ends: once everything is done, ``next_ready`` returns None within a bounded number of
  calls, and after ``stop()`` it returns None at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from skitter.frontier.local import DUE_SLACK, LocalFrontier
from skitter.frontier.politeness import Politeness
from skitter.models import Candidate, Outcome
from skitter.store.db import CrawlDB
from skitter.testing import FakeClock
from skitter.urls import host_key

HOSTS = ["http://a.test", "http://b.test", "http://c.test:8080", "http://d.test"]
BLOCKED = object()
MAX_READS = 400          # clock readings one next_ready / done / add call may take


# -- backends --------------------------------------------------------------------------------------

class LocalBackend:
    """The embedded default: LocalFrontier on a real SQLite crawl database in a temporary directory."""

    name = "local"

    def __init__(self, policy: Politeness, clock: FakeClock, window: int) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="skitter-contract-"))
        self.db = CrawlDB(self.dir)
        self.frontier = LocalFrontier(self.db, policy, window=window, clock=clock)

    def close(self) -> None:
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class RedisBackend:
    """The distributed backend: RedisFrontier, one worker, on a real redis-server (a fresh crawl id
    per example), its local part on a real SQLite crawl database. Done URLs are written to Redis
    at once (no store commits here); the membership task is not started (one worker)."""

    name = "redis"
    url: str | None = None   # set by the test from the redis_server fixture

    def __init__(self, policy: Politeness, clock: FakeClock, window: int) -> None:
        from redis.asyncio import Redis

        from skitter.distributed.frontier import RedisFrontier

        self.dir = Path(tempfile.mkdtemp(prefix="skitter-contract-"))
        self.db = CrawlDB(self.dir)
        self.client = Redis.from_url(self.url)
        self.frontier = RedisFrontier(self.client, f"c{uuid.uuid4().hex[:12]}", self.db, policy, window=window,
                                      clock=clock, immediate=True, worker="w1")
        self.frontier.pending = 0   # a fresh crawl: nothing pending anywhere yet

    def close(self, loop=None) -> None:
        if loop is not None:
            loop.run_until_complete(self.client.aclose())
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)


BACKENDS = {"local": LocalBackend, "redis": RedisBackend}


# -- the model ---------------------------------------------------------------------------------------

@dataclass
class HostModel:
    active: int = 0
    due: float = float("-inf")     # no start before this (the politeness rules, recomputed here)
    last_elapsed: float = 0.0
    crawl_delay: float = 0.0
    starts: int = 0                # the token of the latest start
    before: float = float("-inf")  # ``due`` before the latest start
    backed_off: float = float("-inf")   # the latest Retry-After's end


JUMPS = st.sampled_from([(0.0,), (0.0, 0.0001, 0.001), (0.001,), (0.0, 0.5, 2.0), (0.0, 0.01, 100.0, 10_000.0),
                         (0.0, 0.0001, 0.3, 5.0, 3600.0)])
urls = st.builds(lambda h, p: f"{HOSTS[h]}/p{p}", st.integers(0, len(HOSTS) - 1), st.integers(0, 40))
cands = st.builds(lambda u, p: Candidate(url=u, priority=float(p)), urls, st.integers(-2, 3))


class FrontierContract(RuleBasedStateMachine):
    backend_name = "local"

    @initialize(jumps=JUMPS, seed=st.integers(0, 2**16), per_host=st.sampled_from([1, 2, 3]),
                delay=st.sampled_from([0.0, 0.001, 1.0]), adaptive=st.sampled_from([0.0, 10.0]),
                window=st.sampled_from([1, 2, 32]))
    def setup(self, jumps, seed, per_host, delay, adaptive, window):
        self.clock = FakeClock(jumps=jumps, seed=seed, max_reads=MAX_READS)
        self.policy = Politeness(delay=delay, per_host=per_host, adaptive=adaptive, max_crawl_delay=60.0)
        self.loop = asyncio.new_event_loop()
        # The event loop's timers run on the fake clock too (read without counting or moving it),
        # so whether a parked next_ready wakes within a poll depends on the fake time alone.
        self.loop.time = lambda: self.clock.t
        self.backend = BACKENDS[self.backend_name](self.policy, self.clock, window)
        self.f = self.backend.frontier
        self.admitted: list[str] = []                    # admission order
        self.queued: dict[str, tuple[float, int]] = {}   # url -> (priority, admission rank)
        self.url_due: dict[str, float] = {}              # url -> monotonic time it is due (retries)
        self.url_due_epoch: dict[str, float] = {}        # the same as the frontier was told
        self.in_flight: dict[str, tuple[Candidate, int]] = {}   # url -> (candidate, its start token)
        self.handed: Counter = Counter()
        self.retries: Counter = Counter()
        self.hosts: dict[str, HostModel] = defaultdict(HostModel)
        self.rank = 0
        self.stopped = False

    def teardown(self):
        if not hasattr(self, "backend"):
            return
        try:
            if not self.stopped:
                self._drain()
        finally:
            try:
                if isinstance(self.backend, RedisBackend):
                    self.backend.close(self.loop)
                else:
                    self.backend.close()
            finally:
                self.loop.close()

    # -- helpers -------------------------------------------------------------------------------
    def _now(self) -> float:
        return self.clock.now()

    def _run(self, coro):
        self.clock.reset_reads()
        return self.loop.run_until_complete(coro)

    def _poll(self):
        """What next_ready hands out now: a Candidate, None, or BLOCKED (it parked)."""
        async def go():
            task = asyncio.ensure_future(self.f.next_ready())
            for _ in range(8):
                await asyncio.sleep(0)
                if task.done():
                    return task.result()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return BLOCKED
        return self._run(go())

    def _gap(self, hm: HostModel) -> float:
        p = self.policy
        return max(p.delay, min(hm.crawl_delay, p.max_crawl_delay), p.adaptive * hm.last_elapsed)

    def _is_due(self, url: str, t: float) -> bool:
        # a URL due within DUE_SLACK is due (epoch seconds of ~1.7e9 lose microseconds in floats)
        return self.url_due.get(url, float("-inf")) <= t + DUE_SLACK + 1e-6

    def _ready_hosts(self, t: float) -> list[str]:
        """Hosts that the model says may start now: a due URL, a free slot, a due host."""
        with_work = {host_key(u) for u in self.queued if self._is_due(u, t)}
        return [h for h in with_work
                if self.hosts[h].active < self.policy.per_host and self.hosts[h].due <= t]

    def _expected(self, host: str, t: float) -> set[str]:
        """The URLs the host may hand out next: one back from a due time (the earliest due, ties in
        admission order), else its best priority (ties in admission order). A set: two due within
        DUE_SLACK of each other may come in either order."""
        mine = [u for u in self.queued if host_key(u) == host and self._is_due(u, t)]
        back = [u for u in mine if u in self.url_due]
        if back:
            first = min(self.url_due_epoch[u] for u in back)
            return {u for u in back if self.url_due_epoch[u] <= first + DUE_SLACK}
        best = min((-self.queued[u][0], self.queued[u][1]) for u in mine)
        return {u for u in mine if (-self.queued[u][0], self.queued[u][1]) == best}

    def _take(self, c: Candidate) -> None:
        assert c.url in self.queued, f"{c.url} handed out but not queued (twice, or never admitted)"
        assert c.url not in self.in_flight
        host = host_key(c.url)
        hm = self.hosts[host]
        t = self._now()
        assert hm.active < self.policy.per_host, f"more than per_host={self.policy.per_host} in flight on {host}"
        assert t >= hm.due, f"{c.url} started at {t} before its host was due at {hm.due}"
        assert self._is_due(c.url, t), f"{c.url} handed out at {t} before its own due time {self.url_due[c.url]}"
        assert c.url in self._expected(host, t), f"{c.url}: a host's URLs out of order"
        del self.queued[c.url]
        self.url_due.pop(c.url, None)
        self.url_due_epoch.pop(c.url, None)
        hm.active += 1
        hm.starts += 1
        hm.before = hm.due
        hm.due = max(hm.due, t + self._gap(hm))
        self.in_flight[c.url] = (c, hm.starts)
        self.handed[c.url] += 1

    def _done(self, url: str, outcome: Outcome, *, again: Candidate | None = None) -> None:
        """The loop is done with ``url``: ``again`` is the candidate to queue for ``outcome.due``."""
        c, token = self.in_flight.pop(url)
        hm = self.hosts[host_key(url)]
        self._run(self.f.done(again or c, outcome))
        t = self._now()
        if outcome.crawl_delay is not None:
            hm.crawl_delay = outcome.crawl_delay
        hm.active -= 1
        if outcome.requested:
            if outcome.response_time is not None:
                # the host's time made again from the new response time: the gap from now, a
                # Retry-After still ahead kept (not the start's reservation)
                hm.last_elapsed = outcome.response_time
                hm.due = max(hm.backed_off if hm.backed_off > t else float("-inf"), t + self._gap(hm))
            else:
                hm.due = max(hm.due, t + self._gap(hm))
        elif token == hm.starts:
            hm.due = hm.before
        if outcome.retry_after:
            hm.backed_off = t + min(outcome.retry_after, self.policy.max_retry_after)
            hm.due = max(hm.due, hm.backed_off)
        if outcome.due is not None:
            self.queued[url] = (c.priority, self.queued.get(url, (0, self._rank_of(url)))[1])
            self.url_due[url] = outcome.due - (self.clock.time() - t)
            self.url_due_epoch[url] = outcome.due

    def _rank_of(self, url: str) -> int:
        return self.admitted.index(url) + 1

    def _drain(self) -> None:
        """Finish everything; the crawl must end with every admitted URL handed out."""
        for url in list(self.in_flight):
            self._done(url, Outcome(response_time=0.0))
        bound = 50 * (len(self.admitted) + sum(self.retries.values())) + 50
        for _ in range(bound):
            got = self._poll()
            if got is None:
                break
            if got is BLOCKED:
                self.clock.advance(max(self.policy.delay, 1.0) + 700.0)   # past any delay, Retry-After, due time
                continue
            self._take(got)
            self._done(got.url, Outcome(response_time=0.0))
        else:
            pytest.fail(f"the crawl did not end within {bound} calls of next_ready")
        assert not self.queued and not self.in_flight
        expected = Counter({u: 1 + self.retries[u] for u in self.admitted})
        assert self.handed == expected, "not every admitted URL was handed out exactly once (+ retries)"

    # -- rules ---------------------------------------------------------------------------------
    @precondition(lambda self: not self.stopped)
    @rule(batch=st.lists(cands, max_size=10))
    def add(self, batch):
        known = set(self.admitted)
        fresh = []
        for c in batch:
            if c.url not in known and c.url not in fresh:
                fresh.append(c.url)
        new = self._run(self.f.add(batch))
        assert [c.url for c in new] == fresh, "add() must return exactly the URLs never seen before, in order"
        for c in new:
            self.rank += 1
            self.queued[c.url] = (c.priority, self.rank)
            self.admitted.append(c.url)

    @precondition(lambda self: not self.stopped)
    @rule()
    def next_ready(self):
        t0 = self._now()
        ready_before = self._ready_hosts(t0)
        got = self._poll()
        if got is None:
            assert not self.queued and not self.in_flight, "next_ready said the crawl ended with work left"
        elif got is BLOCKED:
            assert not ready_before, f"next_ready parked while {ready_before} could start"
        else:
            self._take(got)

    @precondition(lambda self: self.in_flight and not self.stopped)
    @rule(i=st.integers(0, 100), elapsed=st.sampled_from([None, 0.0, 0.0001, 0.01, 0.5, 3.0]),
          retry_after=st.sampled_from([None, None, 0.0, 5.0, 1000.0]))
    def done(self, i, elapsed, retry_after):
        url = sorted(self.in_flight)[i % len(self.in_flight)]
        self._done(url, Outcome(response_time=elapsed, retry_after=retry_after))

    @precondition(lambda self: self.in_flight and not self.stopped)
    @rule(i=st.integers(0, 100), wait=st.sampled_from([0.0, 1.0, 30.0, 3600.0]))
    def retry(self, i, wait):
        url = sorted(self.in_flight)[i % len(self.in_flight)]
        c, _ = self.in_flight[url]
        self.retries[url] += 1
        self._done(url, Outcome(response_time=0.001, due=self.clock.time() + wait),
                   again=replace(c, attempts=c.attempts + 1))

    @precondition(lambda self: self.in_flight and not self.stopped)
    @rule(i=st.integers(0, 100), crawl_delay=st.sampled_from([0.0, 2.0, 100_000.0]))
    def robots_first(self, i, crawl_delay):
        """robots.txt was read in this URL's slot (with its Crawl-delay); the URL takes the next."""
        url = sorted(self.in_flight)[i % len(self.in_flight)]
        self.retries[url] += 1
        self._done(url, Outcome(crawl_delay=crawl_delay, due=self.clock.time()))

    @precondition(lambda self: self.in_flight and not self.stopped)
    @rule(i=st.integers(0, 100))
    def no_request(self, i):
        """robots.txt disallows the URL: done without a request."""
        url = sorted(self.in_flight)[i % len(self.in_flight)]
        self._done(url, Outcome(requested=False))

    @precondition(lambda self: self.queued and not self.stopped)
    @rule(i=st.integers(0, 1000), raise_by=st.sampled_from([0.5, 1.0, 10.0]))
    def reprioritize(self, i, raise_by):
        url = sorted(self.queued)[i % len(self.queued)]
        prio, rank = self.queued[url]
        self._run(self.f.reprioritize([(url, prio + raise_by)]))
        self.queued[url] = (prio + raise_by, rank)

    @rule(seconds=st.sampled_from([0.001, 1.0, 60.0]))
    def wait(self, seconds):
        self.clock.advance(seconds)

    @precondition(lambda self: not self.stopped and len(self.handed) > 3)
    @rule()
    def stop(self):
        self.f.stop()
        self.stopped = True
        assert self._poll() is None, "next_ready must return None once stop() was called"

    @invariant()
    def counters_agree(self):
        if hasattr(self, "f") and not self.stopped:
            assert self.f.in_flight == len(self.in_flight)
            assert self.f.queued == len(self.queued)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_frontier_contract(backend, request):
    if backend == "redis":
        RedisBackend.url = request.getfixturevalue("redis_server").url
    machine = type(f"FrontierContract_{backend}", (FrontierContract,), {"backend_name": backend})
    # SKITTER_CONTRACT_EXAMPLES=5000 for a longer, random (not derandomized) search
    examples = int(os.environ.get("SKITTER_CONTRACT_EXAMPLES", 0))
    run = settings(max_examples=examples or (400 if backend == "local" else 150), stateful_step_count=50, deadline=None, derandomize=not examples,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])(machine)
    run.TestCase().runTest()
