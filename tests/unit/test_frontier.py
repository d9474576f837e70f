"""LocalFrontier (skitter.frontier.local) on a real CrawlDB in tmp_path, with an injected fake clock.

Every scenario runs inside one ``asyncio.run`` (the frontier's wake event binds to the first loop
that waits on it, as in the crawler, which builds the frontier inside its loop). ``poll`` asks the
public ``next_ready`` for a candidate and reports BLOCKED when it would wait; waiting on the fake
clock is ended by advancing the clock (and, for a waiter that is already parked, by setting the
frontier's wake event, which is what ``add``/``done`` do in the crawler).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skitter.frontier.local import LocalFrontier
from skitter.frontier.politeness import Politeness
from skitter.models import Candidate, Outcome
from skitter.store.db import CrawlDB
from skitter.urls import host_key
from skitter.testing import FakeClock

BLOCKED = object()



def make(directory: Path, *, delay: float = 0.0, per_host: int = 1, adaptive: float = 0.0,
         window: int = 32, clock: FakeClock | None = None, **policy) -> tuple[CrawlDB, LocalFrontier, FakeClock]:
    clock = clock or FakeClock()
    db = CrawlDB(directory)
    frontier = LocalFrontier(db, Politeness(delay=delay, per_host=per_host, adaptive=adaptive, **policy),
                             window=window, clock=clock)
    return db, frontier, clock


def cand(url: str, priority: float = 0.0, depth: int = 0) -> Candidate:
    return Candidate(url=url, depth=depth, priority=priority)


async def poll(frontier: LocalFrontier):
    """What next_ready hands out now: a Candidate, None (crawl exhausted), or BLOCKED (it would wait)."""
    task = asyncio.ensure_future(frontier.next_ready())
    for _ in range(5):
        await asyncio.sleep(0)
        if task.done():
            return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return BLOCKED


async def drain(frontier: LocalFrontier, clock: FakeClock, *, step: float = 0.25,
                elapsed: float = 0.0) -> list[Candidate]:
    """Take everything, calling done() after each; advance the fake clock by ``step`` when blocked."""
    out: list[Candidate] = []
    idle = 0
    while True:
        c = await poll(frontier)
        if c is BLOCKED:
            idle += 1
            assert idle < 10_000, "the frontier never hands out its queued URLs"
            clock.advance(step)
            continue
        if c is None:
            return out
        idle = 0
        out.append(c)
        frontier.finish(c, Outcome(response_time=elapsed))


def states(db: CrawlDB) -> Counter:
    return Counter(dict(db.conn.execute("SELECT state, count(*) FROM urls GROUP BY state").fetchall()))


# -- the URL-seen test -------------------------------------------------------------------------

def test_add_admits_each_url_once_and_returns_new_count(tmp_path):
    db, f, _ = make(tmp_path)
    assert len(f.admit([cand("http://a.test/1"), cand("http://a.test/2"), cand("http://a.test/1")])) == 2
    assert len(f.admit([cand("http://a.test/1")])) == 0
    assert len(f.admit([cand("http://a.test/2"), cand("http://b.test/3")])) == 1
    assert len(f.admit([])) == 0
    assert f.queued == 3
    assert db.counts()["seen"] == 3

    async def scenario():
        return await drain(f, FakeClock())
    urls = [c.url for c in asyncio.run(scenario())]
    assert sorted(urls) == ["http://a.test/1", "http://a.test/2", "http://b.test/3"]


def test_url_seen_survives_the_window_and_a_new_frontier(tmp_path):
    """The URL-seen set is the table: a URL handed out long ago, or admitted by an earlier run, is
    still seen."""
    db, f, clock = make(tmp_path, window=2)
    urls = [f"http://a.test/{i}" for i in range(10)]
    assert len(f.admit([cand(u) for u in urls])) == 10
    asyncio.run(drain(f, clock))
    assert len(f.admit([cand(u) for u in urls])) == 0
    db.commit()
    f2 = LocalFrontier(db, Politeness(delay=0, adaptive=0), clock=clock)
    assert len(f2.admit([cand(u) for u in urls] + [cand("http://a.test/new")])) == 1


def test_a_decided_url_passes_the_seen_test_once_and_is_never_handed_out(tmp_path):
    db, f, clock = make(tmp_path)
    assert len(f.admit([cand("http://a.test/disallowed")], decided=True)) == 1
    assert f.admit([cand("http://a.test/disallowed")], decided=True) == []
    assert len(f.admit([cand("http://a.test/disallowed"), cand("http://a.test/ok")])) == 1
    assert f.queued == 1
    out = asyncio.run(drain(f, clock))
    assert [c.url for c in out] == ["http://a.test/ok"]
    assert states(db)[2] == 2   # the decided one, and the one handed out and done


def test_seq_continues_after_reopen(tmp_path):
    """Discovery order (the tie-break) survives a restart: new rows get higher seq than old ones."""
    db, f, _ = make(tmp_path)
    f.admit([cand(f"http://a.test/{i}") for i in range(3)])
    db.commit()
    f2 = LocalFrontier(db, Politeness(delay=0, adaptive=0), clock=FakeClock())
    f2.admit([cand("http://a.test/new")])
    seqs = dict(db.conn.execute("SELECT url, seq FROM urls").fetchall())
    assert seqs["http://a.test/new"] > max(v for k, v in seqs.items() if k != "http://a.test/new")


# -- every admitted URL exactly once (property) ------------------------------------------------

HOSTS = ["http://a.test", "http://b.test", "http://c.test:8080"]
url_st = st.builds(lambda h, p: f"{HOSTS[h]}/p{p}", st.integers(0, len(HOSTS) - 1), st.integers(0, 25))
cand_st = st.builds(lambda u, p: Candidate(url=u, priority=float(p)), url_st, st.integers(-3, 3))
op_st = st.one_of(st.lists(cand_st, max_size=12).map(lambda b: ("add", b)),
                  st.integers(1, 6).map(lambda n: ("pop", n)))


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op_st, min_size=1, max_size=12), window=st.sampled_from([1, 2, 3, 8, 32]),
       per_host=st.sampled_from([1, 2]), delay=st.sampled_from([0.0, 1.0]))
def test_every_admitted_url_is_handed_out_exactly_once_in_priority_order(ops, window, per_host, delay):
    with tempfile.TemporaryDirectory() as d:
        db, f, clock = make(Path(d), window=window, per_host=per_host, delay=delay)
        try:
            asyncio.run(_exactly_once(f, clock, ops, window, delay))
        finally:
            db.close()


async def _exactly_once(f: LocalFrontier, clock: FakeClock, ops, window: int, delay: float) -> None:
    model: dict[str, tuple[float, int]] = {}   # queued url -> (priority, discovery order)
    admitted: set[str] = set()
    handed: list[str] = []
    order = 0

    def check_and_record(c: Candidate) -> None:
        assert c.url in model, f"{c.url} handed out but not queued"
        key = host_key(c.url)
        mine = [(p, -s, u) for u, (p, s) in model.items() if host_key(u) == key]
        # within a host: the best priority first, ties in discovery order
        assert max(mine)[2] == c.url
        if delay == 0.0:
            # with no politeness wait every host with work is ready: the best head of all goes first
            assert c.priority == max(p for p, _ in model.values())
        del model[c.url]
        handed.append(c.url)

    for kind, arg in ops:
        if kind == "add":
            fresh = []
            for c in arg:
                if c.url not in admitted and c.url not in fresh:
                    fresh.append(c.url)
                    order += 1
                    model[c.url] = (c.priority, order)
            assert len(f.admit(arg)) == len(fresh)
            admitted.update(fresh)
        else:
            for _ in range(arg):
                c = await poll(f)
                if c is BLOCKED:
                    clock.advance(delay)
                    c = await poll(f)
                if c is None:
                    break
                assert c is not BLOCKED
                check_and_record(c)
                f.finish(c, Outcome(response_time=0.0))
        assert f.queued == len(model)
        # the window is bounded
        assert all(len(h.window) <= window for h in f.hosts.values())
    for c in await drain(f, clock, step=max(delay, 0.25)):
        check_and_record(c)
    assert Counter(handed) == Counter(admitted)   # each exactly once
    assert not model
    assert f.queued == 0 and f.in_flight == 0
    assert states(f.db)[0] == 0


# -- priority order ----------------------------------------------------------------------------

def test_priority_order_within_a_host_ties_in_discovery_order(tmp_path):
    db, f, clock = make(tmp_path)
    f.admit([cand("http://a.test/low", -1), cand("http://a.test/tie1", 2), cand("http://a.test/top", 5)])
    f.admit([cand("http://a.test/tie2", 2), cand("http://a.test/tie3", 2)])
    out = asyncio.run(drain(f, clock))
    assert [c.url for c in out] == ["http://a.test/top", "http://a.test/tie1", "http://a.test/tie2",
                                    "http://a.test/tie3", "http://a.test/low"]


def test_priority_order_across_hosts_best_head_first(tmp_path):
    db, f, clock = make(tmp_path)
    f.admit([cand("http://a.test/1", 1), cand("http://b.test/5", 5), cand("http://c.test/3", 3)])

    async def scenario():
        got = []
        for _ in range(3):
            c = await poll(f)
            got.append(c.url)   # none is done(): each host is busy afterwards, the others still ready
        assert await poll(f) is BLOCKED   # all three hosts have a request in flight
        return got
    assert asyncio.run(scenario()) == ["http://b.test/5", "http://c.test/3", "http://a.test/1"]


def test_a_better_url_added_to_a_waiting_host_moves_that_host_ahead(tmp_path):
    """The ready hosts are ordered by their *current* best URL, also when it arrived after the host
    was queued as ready."""
    db, f, clock = make(tmp_path)
    f.admit([cand("http://a.test/1", 1)])
    f.admit([cand("http://b.test/5", 5)])
    f.admit([cand("http://a.test/10", 10)])

    async def scenario():
        got = [(await poll(f)).url for _ in range(2)]
        assert await poll(f) is BLOCKED   # a.test/1 waits for a.test/10 to be done
        return got
    assert asyncio.run(scenario()) == ["http://a.test/10", "http://b.test/5"]


def test_ready_host_order_uses_current_head_no_duplicates(tmp_path):
    """Re-ranking a waiting host must not hand out anything twice or lose anything."""
    db, f, clock = make(tmp_path)
    f.admit([cand("http://a.test/1", 1)])
    f.admit([cand("http://b.test/5", 5)])
    for p in (6, 7, 8):
        f.admit([cand(f"http://a.test/{p}", p)])
    out = asyncio.run(drain(f, clock))
    assert [c.url for c in out] == ["http://a.test/8", "http://a.test/7", "http://a.test/6",
                                    "http://b.test/5", "http://a.test/1"]


# -- politeness ---------------------------------------------------------------------------------

def test_per_host_1_waits_for_done_and_then_for_the_delay(tmp_path):
    db, f, clock = make(tmp_path, delay=2.0)
    f.admit([cand("http://a.test/1", 2), cand("http://a.test/2", 1), cand("http://b.test/1", 0)])

    async def scenario():
        first = await poll(f)
        assert first.url == "http://a.test/1"
        assert (await poll(f)).url == "http://b.test/1"   # another host is not held up
        clock.advance(50)
        assert await poll(f) is BLOCKED        # a.test/1 still in flight: not before done()
        f.finish(first, Outcome(response_time=0.0))
        assert await poll(f) is BLOCKED        # done, but the delay counts from the end of the response
        clock.advance(1.99)
        assert await poll(f) is BLOCKED
        clock.advance(0.01)
        second = await poll(f)
        assert second.url == "http://a.test/2"
    asyncio.run(scenario())


def test_delay_between_request_starts_also_without_waiting_for_done(tmp_path):
    """per_host=2: two in flight are allowed, but their starts are still ``delay`` apart."""
    db, f, clock = make(tmp_path, delay=3.0, per_host=2)
    f.admit([cand(f"http://a.test/{i}", -i) for i in range(3)])

    async def scenario():
        assert (await poll(f)).url == "http://a.test/0"
        assert await poll(f) is BLOCKED
        clock.advance(3.0)
        assert (await poll(f)).url == "http://a.test/1"
        clock.advance(100.0)
        assert await poll(f) is BLOCKED   # two in flight: the limit
        assert f.in_flight == 2 and f.active_hosts == 1
    asyncio.run(scenario())


def test_per_host_2_at_most_two_in_flight(tmp_path):
    db, f, clock = make(tmp_path, delay=0.0, per_host=2)
    f.admit([cand(f"http://a.test/{i}", -i) for i in range(5)] + [cand("http://b.test/x", -10)])

    async def scenario():
        a0, a1 = await poll(f), await poll(f)
        assert {a0.url, a1.url} == {"http://a.test/0", "http://a.test/1"}
        b = await poll(f)
        assert b.url == "http://b.test/x"     # a.test is at its limit though it has better URLs
        assert await poll(f) is BLOCKED
        assert f.in_flight == 3 and f.active_hosts == 2
        f.finish(a0, Outcome(response_time=0.0))
        assert (await poll(f)).url == "http://a.test/2"
        assert await poll(f) is BLOCKED
    asyncio.run(scenario())


def test_adaptive_delay_uses_the_last_response_time(tmp_path):
    db, f, clock = make(tmp_path, delay=1.0, adaptive=10.0)
    f.admit([cand("http://a.test/1", 1), cand("http://a.test/2", 0)])

    async def scenario():
        c = await poll(f)
        f.finish(c, Outcome(response_time=0.5))               # 10 x 0.5 s = 5 s > delay
        clock.advance(4.9)
        assert await poll(f) is BLOCKED
        clock.advance(0.1)
        assert (await poll(f)).url == "http://a.test/2"
    asyncio.run(scenario())


def test_a_fast_response_after_a_slow_one_re_times_a_host_with_a_free_slot(tmp_path):
    """--per-host 2: the start after a 3.6 s response put the host's timer 36 s on, with a slot
    still free; its 0.01 s response made the host's time 0.1 s, but the old timer stood (a
    hold-out re-test: the next request came 36 s later, "waiting for a URL's due time")."""
    db, f, clock = make(tmp_path, delay=0.0, adaptive=10.0, per_host=2)
    f.admit([cand(f"http://a.test/{i}", -i) for i in range(3)])

    async def scenario():
        slow = await poll(f)
        clock.advance(3.6)
        f.finish(slow, Outcome(response_time=3.6))              # 36 s to the next start
        clock.advance(36.0)
        fast = await poll(f)
        assert fast.url == "http://a.test/1"
        clock.advance(0.01)
        f.finish(fast, Outcome(response_time=0.01))             # 0.1 s to the next
        clock.advance(0.1)
        nxt = await poll(f)
        assert nxt is not BLOCKED and nxt.url == "http://a.test/2"
    asyncio.run(scenario())


def test_crawl_delay_lengthens_the_gap_and_is_capped(tmp_path):
    db, f, clock = make(tmp_path, delay=1.0, max_crawl_delay=60.0)
    f.admit([cand(f"http://a.test/{i}", -i) for i in range(3)])

    async def scenario():
        c = await poll(f)
        f.finish(c, Outcome(response_time=0.0, crawl_delay=7.0, due=clock.time()))   # robots.txt read
        clock.advance(6.9)
        assert await poll(f) is BLOCKED
        clock.advance(0.1)
        c = await poll(f)
        assert c.url == "http://a.test/0"
        f.finish(c, Outcome(response_time=0.0, crawl_delay=100_000.0))   # absurd: capped at max_crawl_delay
        clock.advance(59.9)
        assert await poll(f) is BLOCKED
        clock.advance(0.1)
        assert (await poll(f)).url == "http://a.test/1"
    asyncio.run(scenario())


def test_crawl_delay_zero_restores_the_plain_delay(tmp_path):
    """robots.txt read again without a Crawl-delay: from the next start on, the plain delay."""
    db, f, clock = make(tmp_path, delay=1.0)
    f.admit([cand(f"http://a.test/{i}", -i) for i in range(4)])

    async def scenario():
        f.finish(await poll(f), Outcome(response_time=0.0, crawl_delay=30.0))
        clock.advance(30.0)
        f.finish(await poll(f), Outcome(response_time=0.0, crawl_delay=0.0))   # started under 30 s
        clock.advance(30.0)
        f.finish(await poll(f), Outcome(response_time=0.0))
        clock.advance(1.0)
        assert (await poll(f)).url == "http://a.test/3"
    asyncio.run(scenario())


def test_retry_after_in_done_pushes_the_host_back_capped(tmp_path):
    db, f, clock = make(tmp_path, delay=1.0, max_retry_after=600.0)
    f.admit([cand(f"http://a.test/{i}", -i) for i in range(3)] + [cand("http://b.test/x", -5)])

    async def scenario():
        c = await poll(f)
        f.finish(c, Outcome(response_time=0.0, retry_after=30.0))
        assert (await poll(f)).url == "http://b.test/x"   # only a.test waits
        clock.advance(29.9)
        assert await poll(f) is BLOCKED
        clock.advance(0.1)
        c = await poll(f)
        assert c.url == "http://a.test/1"
        f.finish(c, Outcome(response_time=0.0, retry_after=1e9))
        clock.advance(599.9)
        assert await poll(f) is BLOCKED
        clock.advance(0.1)
        assert (await poll(f)).url == "http://a.test/2"
    asyncio.run(scenario())


def test_a_due_time_brings_the_url_back_then_and_not_earlier(tmp_path):
    """A retry: the URL itself is due again in 20 s; its host goes on with other URLs meanwhile."""
    db, f, clock = make(tmp_path, delay=1.0)
    f.admit([cand("http://a.test/1", 5), cand("http://a.test/2", 4)])

    async def scenario():
        c = await poll(f)
        assert c.url == "http://a.test/1"
        f.finish(Candidate(url=c.url, priority=c.priority, attempts=c.attempts + 1),
                 Outcome(response_time=0.0, due=clock.time() + 20.0))
        assert f.queued == 2
        clock.advance(1.0)
        other = await poll(f)
        assert other.url == "http://a.test/2"      # the host is not held by the retry
        f.finish(other, Outcome(response_time=0.0))
        clock.advance(18.9)
        assert await poll(f) is BLOCKED
        clock.advance(0.1)
        again = await poll(f)
        assert again.url == "http://a.test/1" and again.attempts == 1
        f.finish(again, Outcome(response_time=0.0))
        assert states(db) == Counter({2: 2})
    asyncio.run(scenario())


def test_due_now_takes_the_next_slot(tmp_path):
    """The robots.txt case: the slot went to robots.txt, the page waits for the next slot only."""
    db, f, clock = make(tmp_path, delay=1.0)
    f.admit([cand("http://a.test/1", 5), cand("http://a.test/2", 4)])

    async def scenario():
        c = await poll(f)
        f.finish(c, Outcome(response_time=0.0, due=clock.time()))
        assert await poll(f) is BLOCKED
        clock.advance(1.0)
        assert (await poll(f)).url == "http://a.test/1"
    asyncio.run(scenario())


def test_due_times_survive_a_restart(tmp_path):
    """A URL due in an hour is still due in an hour (epoch time) after the crawl restarts."""
    db, f, clock = make(tmp_path)
    f.admit([cand("http://a.test/1")])

    async def first():
        c = await poll(f)
        f.finish(c, Outcome(response_time=0.0, due=clock.time() + 3600.0))
    asyncio.run(first())
    db.commit()
    f2 = LocalFrontier(db, Politeness(delay=0.0, adaptive=0.0), clock=clock)
    assert f2.queued == 1

    async def second():
        assert await poll(f2) is BLOCKED
        held, shown = f2.held_hosts()
        assert held == 1 and 3599 < shown[0][1] <= 3600
        clock.advance(3600.0)
        assert (await poll(f2)).url == "http://a.test/1"
    asyncio.run(second())


def test_revisits_take_turns_with_new_urls_and_a_retry_still_goes_first(tmp_path):
    """A revisit due again (``Outcome.revisit``) does not go before every new URL of its host, as
    a retry does: the two take turns, a retry or a URL put back behind robots.txt ahead of both;
    and after a restart a revisit that had fallen due is still one."""
    db, f, clock = make(tmp_path)
    f.admit([cand(f"http://a.test/old{i}", 9) for i in range(3)])

    async def crawl_the_old_pages():
        for _ in range(3):
            c = await poll(f)
            f.finish(c, Outcome(response_time=0.0, due=clock.time() + 10.0, revisit=True))
    asyncio.run(crawl_the_old_pages())
    f.admit([cand(f"http://a.test/new{i}", 1) for i in range(4)])
    clock.advance(10.0)

    async def take(n: int) -> list[str]:
        out = []
        for _ in range(n):
            c = await poll(f)
            out.append(c.url.rsplit("/", 1)[1])
            if out[-1] == "new1" and out.count("new1") == 1:   # a retry, due now: it comes back first
                f.finish(c, Outcome(response_time=0.0, due=clock.time()))
            else:
                f.finish(c, Outcome(response_time=0.0))
        return out
    got = asyncio.run(take(5))
    assert got == ["new0", "old0", "new1", "new1", "old1"]   # the retry did not take old1's turn
    db.commit()
    db.release_leases()   # old2 was promoted (state 1): as after kill -9
    f2 = LocalFrontier(db, Politeness(delay=0.0, adaptive=0.0), clock=clock)
    f = f2
    assert asyncio.run(take(3)) == ["new2", "old2", "new3"]
    assert db.conn.execute("SELECT count(*) FROM urls WHERE state != 2").fetchone()[0] == 0


# -- waiting ------------------------------------------------------------------------------------

def test_a_parked_next_ready_wakes_when_the_clock_reaches_the_host(tmp_path):
    db, f, clock = make(tmp_path, delay=5.0)
    f.admit([cand("http://a.test/1", 1), cand("http://a.test/2", 0)])

    async def scenario():
        f.finish(await f.next_ready(), Outcome(response_time=0.0))
        waiter = asyncio.ensure_future(f.next_ready())
        for _ in range(5):
            await asyncio.sleep(0)
        assert not waiter.done()
        clock.advance(5.0)
        f._wake.set()
        c = await asyncio.wait_for(waiter, 1.0)
        assert c.url == "http://a.test/2"
    asyncio.run(scenario())


def test_next_ready_waits_while_in_flight_and_wakes_on_add(tmp_path):
    db, f, clock = make(tmp_path)
    f.admit([cand("http://a.test/1")])

    async def scenario():
        c = await f.next_ready()
        waiter = asyncio.ensure_future(f.next_ready())
        for _ in range(5):
            await asyncio.sleep(0)
        assert not waiter.done()               # one in flight: its page may bring new links
        f.admit([cand("http://b.test/new")])
        got = await asyncio.wait_for(waiter, 1.0)
        assert got.url == "http://b.test/new"
        f.finish(c, Outcome(response_time=0.0))
        f.finish(got, Outcome(response_time=0.0))
        assert await asyncio.wait_for(f.next_ready(), 1.0) is None
    asyncio.run(scenario())


def test_next_ready_returns_none_when_the_last_in_flight_finishes(tmp_path):
    db, f, clock = make(tmp_path)
    f.admit([cand("http://a.test/1")])

    async def scenario():
        c = await f.next_ready()
        waiter = asyncio.ensure_future(f.next_ready())
        for _ in range(5):
            await asyncio.sleep(0)
        assert not waiter.done()
        f.finish(c, Outcome(response_time=0.0))
        assert await asyncio.wait_for(waiter, 1.0) is None
    asyncio.run(scenario())


def test_next_ready_none_on_an_empty_frontier(tmp_path):
    db, f, clock = make(tmp_path)
    assert asyncio.run(asyncio.wait_for(f.next_ready(), 1.0)) is None
    assert f.queued == 0 and f.in_flight == 0 and f.active_hosts == 0


def test_stop_makes_next_ready_return_none(tmp_path):
    db, f, clock = make(tmp_path, delay=10.0)
    f.admit([cand("http://a.test/1", 1), cand("http://a.test/2", 0), cand("http://b.test/1")])

    async def scenario():
        f.finish(await f.next_ready(), Outcome(response_time=0.0))
        f.finish(await f.next_ready(), Outcome(response_time=0.0))
        waiter = asyncio.ensure_future(f.next_ready())   # parked: a.test waits 10 s
        for _ in range(5):
            await asyncio.sleep(0)
        assert not waiter.done()
        f.stop()
        assert await asyncio.wait_for(waiter, 1.0) is None
        clock.advance(100)
        assert await asyncio.wait_for(f.next_ready(), 1.0) is None   # still queued, but stopped
        assert f.queued == 1
    asyncio.run(scenario())


# -- the bounded window -----------------------------------------------------------------------

def test_window_is_bounded_and_everything_comes_out_in_priority_order(tmp_path):
    db, f, clock = make(tmp_path, window=8)
    rng = random.Random(7)
    cands = [cand(f"http://a.test/{i}", float(rng.randint(0, 50))) for i in range(1000)]
    # one by one, as the loop adds them: the window never holds more than 8
    for c in cands:
        assert len(f.admit([c])) == 1
        assert len(f.hosts["a.test"].window) <= 8
    s = states(db)
    assert s[1] <= 8 and s[0] >= 992 and s[0] + s[1] == 1000
    assert f.queued == 1000

    async def scenario():
        out = []
        while (c := await poll(f)) is not None:
            assert c is not BLOCKED
            out.append(c)
            f.finish(c, Outcome(response_time=0.0))
            assert states(db)[1] <= 8   # in memory: bounded through every refill
        return out
    out = asyncio.run(scenario())
    expected = sorted(range(1000), key=lambda i: (-cands[i].priority, i))
    assert [c.url for c in out] == [cands[i].url for i in expected]


def test_window_newcomer_beats_worst_and_the_worst_goes_to_disk(tmp_path):
    db, f, clock = make(tmp_path, window=4)
    f.admit([cand(f"http://a.test/{i}", float(i)) for i in range(4)])   # fills the window: 0..3
    assert states(db) == Counter({1: 4})
    f.admit([cand("http://a.test/low", -1.0)])        # worse than the worst: straight to disk
    row = dict(db.conn.execute("SELECT url, state FROM urls").fetchall())
    assert row["http://a.test/low"] == 0
    f.admit([cand("http://a.test/high", 9.0)])        # beats the worst (0): in memory, 0 back to disk
    row = dict(db.conn.execute("SELECT url, state FROM urls").fetchall())
    assert row["http://a.test/high"] == 1 and row["http://a.test/0"] == 0
    assert states(db) == Counter({1: 4, 0: 2})
    out = asyncio.run(drain(f, clock))
    assert [c.url for c in out] == ["http://a.test/high", "http://a.test/3", "http://a.test/2",
                                    "http://a.test/1", "http://a.test/0", "http://a.test/low"]


@pytest.mark.parametrize("window", [1, 2, 3])
def test_tiny_windows_still_hand_out_everything(tmp_path, window):
    db, f, clock = make(tmp_path, window=window)
    f.admit([cand(f"http://a.test/{i}", -float(i)) for i in range(6)])
    out = asyncio.run(drain(f, clock))
    assert [c.url for c in out] == [f"http://a.test/{i}" for i in range(6)]


def test_interleaved_adds_keep_priority_order_across_refills(tmp_path):
    """DFS-like: every page adds better links than what is queued; the window stays bounded."""
    db, f, clock = make(tmp_path, window=4)
    f.admit([cand(f"http://a.test/d0/{i}", 0.0) for i in range(10)])

    async def scenario():
        order = []
        for depth in range(1, 6):
            c = await poll(f)
            order.append(c.url)
            f.finish(c, Outcome(response_time=0.0))
            f.admit([cand(f"http://a.test/d{depth}/{i}", float(depth)) for i in range(3)])
            assert len(f.hosts["a.test"].window) <= 4
        rest = await drain(f, clock)
        return order, rest
    order, rest = asyncio.run(scenario())
    assert order == ["http://a.test/d0/0", "http://a.test/d1/0", "http://a.test/d2/0",
                     "http://a.test/d3/0", "http://a.test/d4/0"]
    prios = [c.priority for c in rest]
    assert prios == sorted(prios, reverse=True)
    assert len(order) + len(rest) == 10 + 5 * 3


# -- a candidate decided without a request --------------------------------------------------------

def test_no_request_gives_the_slot_back_at_once(tmp_path):
    """robots.txt disallows the URL the frontier handed out: no request, so the host's next URL may
    start at the same instant though the delay is 10 s."""
    db, f, clock = make(tmp_path, delay=10.0)
    f.admit([cand("http://a.test/blocked", 2), cand("http://a.test/ok", 1)])

    async def scenario():
        c = await poll(f)
        assert c.url == "http://a.test/blocked"
        f.finish(c, Outcome(requested=False))
        c = await poll(f)
        assert c.url == "http://a.test/ok" and f.in_flight == 1 and f.queued == 0
        f.finish(c, Outcome(response_time=0.0))
        clock.advance(100)
        assert await poll(f) is None   # the decided one never comes back
    asyncio.run(scenario())
    assert states(db) == Counter({2: 2})


def test_no_request_after_another_start_keeps_that_starts_time(tmp_path):
    """per_host=2: a second start happened since; giving back the first slot does not undo it."""
    db, f, clock = make(tmp_path, delay=10.0, per_host=2)
    f.admit([cand(f"http://a.test/{i}", -i) for i in range(3)])
    h = f.hosts["a.test"]

    async def scenario():
        first = await poll(f)
        clock.advance(10.0)
        second = await poll(f)
        before = h.clock.next_time
        f.finish(first, Outcome(requested=False))
        assert h.clock.next_time == before and h.clock.active == 1
        f.finish(second, Outcome(response_time=0.0))
    asyncio.run(scenario())


# -- crash safety -------------------------------------------------------------------------------

def test_crash_then_release_leases_hands_out_every_not_done_url(tmp_path):
    db, f, clock = make(tmp_path, window=8)
    urls = [f"http://{h}.test/{i}" for h in "abc" for i in range(10)]
    db.begin()
    assert len(f.admit([cand(u, -float(i)) for i, u in enumerate(urls)])) == 30
    db.commit()

    async def first_run():
        got = []
        for i in range(9):
            c = await poll(f)
            assert c is not BLOCKED and c is not None
            got.append(c)
            f.finish(c, Outcome(response_time=0.0))
            if i == 4:
                db.commit()             # the batch with 5 fetch records commits; the last 4 never do
        return got
    popped = asyncio.run(first_run())
    done_urls = {c.url for c in popped[:5]}
    f.admit([cand("http://a.test/uncommitted")])
    assert db.in_transaction()
    db.conn.close()                     # kill -9: the open transaction is lost

    db2 = CrawlDB(tmp_path)
    leased = db2.conn.execute("SELECT count(*) FROM urls WHERE state = 1").fetchone()[0]
    assert leased > 0
    assert db2.counts()["seen"] == 30   # the uncommitted add is gone too
    db2.begin()
    assert db2.release_leases() == leased
    db2.commit()
    assert states(db2) == Counter({0: 25, 2: 5})
    f2 = LocalFrontier(db2, Politeness(delay=0.0, adaptive=0.0), window=8, clock=FakeClock())
    assert f2.queued == 25
    out = asyncio.run(drain(f2, FakeClock()))
    handed = [c.url for c in out]
    assert Counter(handed) == Counter(set(urls) - done_urls)
    # and in priority order within each host, as before the crash
    for h in "abc":
        mine = [u for u in handed if f"//{h}.test/" in u]
        assert mine == sorted(mine, key=lambda u: urls.index(u))


def test_seen_recently_is_a_hint_that_never_claims_an_unseen_url(tmp_path: Path) -> None:
    db, frontier, _ = make(tmp_path)
    frontier.recent_size = 4                     # the recent sets roll over quickly
    urls = [f"http://a.test/p{i}" for i in range(20)]
    assert not any(frontier.seen_recently(u) for u in urls)
    frontier.admit([cand(u) for u in urls])
    recent = [u for u in urls if frontier.seen_recently(u)]
    assert recent and set(recent) <= set(urls[-8:])   # only the last two sets of 4 are held
    assert len(frontier.admit([cand(u) for u in recent])) == 0
    assert not frontier.seen_recently("http://a.test/never")
    db.close()


# -- the stall of issue 17: a clock that moves while the frontier decides ------------------------

def test_a_host_due_between_two_clock_readings_does_not_spin(tmp_path):
    """The hang seen on fast crawls: _pop_ready read the clock once and refused a host whose next
    time lay just after that reading, then re-scheduled it with a fresher reading that put it back
    in the ready heap, popped it, refused it again, forever (100% CPU, no signal handled). A clock
    that advances 1 ms on every reading makes the window certain: the adaptive delay (10 × 0.15 ms)
    gives the host a next time 1.5 ms after the done(), which the pop's reading (1 ms later) is
    before and the re-scheduling reading (2 ms later) is after. ``max_reads`` turns a spin into a
    failure instead of a hung test."""
    from skitter.testing import FakeClock as TickingClock

    clock = TickingClock(tick=0.001, max_reads=1000)
    db = CrawlDB(tmp_path)
    f = LocalFrontier(db, Politeness(delay=0.0, per_host=2, adaptive=10.0), clock=clock)
    f.admit([cand(f"http://a.test/{i}") for i in range(3)])

    async def scenario():
        first = await f.next_ready()
        f.finish(first, Outcome(response_time=0.00015))
        clock.reset_reads()
        second = await asyncio.wait_for(f.next_ready(), 5)
        return first, second, clock.reads

    first, second, reads = asyncio.run(scenario())
    assert {first.url, second.url} <= {f"http://a.test/{i}" for i in range(3)}
    assert first.url != second.url
    assert reads < 20
    db.close()


def test_a_dry_frontier_asks_its_refill_once_per_drain(tmp_path):
    """``refill`` (the crawl loop's depth walk under dfs) is asked when nothing is ready, waiting or
    in flight; what it admits is handed out, and it is asked again only after a URL finished since
    (a walk that found nothing would find nothing again)."""
    db, f, _ = make(tmp_path)
    asks: list[int] = []
    more = [["http://b.test/1", "http://b.test/2"], []]

    def refill() -> int:
        asks.append(1)
        return len(f.admit([cand(u, depth=2) for u in more.pop(0)])) if more else 0

    f.refill = refill

    async def go():
        f.admit([cand("http://a.test/")])
        got = []
        while (c := await poll(f)) is not None:
            assert c is not BLOCKED
            got.append(c)
            f.finish(c, Outcome(requested=True))
        assert await poll(f) is None and len(asks) == 2   # nothing finished since the last ask
        return got

    got = asyncio.run(go())
    assert [(c.url, c.depth) for c in got] == [("http://a.test/", 0), ("http://b.test/1", 2), ("http://b.test/2", 2)]
    assert len(asks) == 2   # dry after a.test (2 in), after the b.test URLs (nothing), never again
    db.close()
