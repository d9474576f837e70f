"""The recrawl's part of the crawl loop in fake time (skitter.testing: the changing demo web served
in-process by WebTransport, LoopClock, run_in_fake_time): hours of revisits in a second, with the
real loop, store and frontier."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from skitter.api import build_crawler
from skitter.config import CrawlConfig
from skitter.demo.changing import ChangeConfig
from skitter.demo.web import DemoConfig, DemoWeb
from skitter.testing import EPOCH, LoopClock, WebTransport, run_in_fake_time

CHANGE = ChangeConfig(speed=1.0, static_share=0.3, min_interval=60.0, max_interval=3 * 3600.0, new_per_hour=0.0)


def web(pages: int = 60) -> DemoWeb:
    return DemoWeb(DemoConfig(pages=pages, hosts=2, changing=CHANGE), ["http://127.0.0.2:8000", "http://127.0.0.3:8000"],
                   start_epoch=EPOCH)


def config(w: DemoWeb, **kw) -> CrawlConfig:
    return CrawlConfig(seeds=tuple(w.seeds()), delay=0.5, adaptive_delay=0.0, per_host=1, concurrency=4,
                       analysis_processes=0, index_interval=0, recrawl=True, **kw).validate()


def q(directory: Path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(directory / "crawl.db")
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def test_a_transient_error_keeps_a_page_and_a_confirmed_404_removes_it(tmp_path: Path) -> None:
    w = web()
    articles = [u for u in w.pages() if "/a/" in u and w.change_rate(u) == 0][:2]
    flaky, gone = articles
    clock = LoopClock()
    out = tmp_path / "crawl"

    async def main():
        transport = WebTransport(w, clock)
        crawler = build_crawler(out, config(w, rate=0.2, policy="uniform"), transport=transport, clock=clock,
                                until=EPOCH + 4 * 3600)

        async def saboteur():
            await asyncio.sleep(3600)
            transport.fail[flaky] = 503
            transport.fail[gone] = 404
            await asyncio.sleep(900)
            del transport.fail[flaky]

        task = asyncio.create_task(saboteur())
        await crawler.run()
        await task
        return transport

    transport = run_in_fake_time(main())
    statuses = {s for url, _, s in transport.requests}
    assert 304 in statuses
    kinds = lambda url: [k for (k,) in q(out, "SELECT v.kind FROM recrawl_visits v JOIN recrawl_pages p"  # noqa: E731
                                              " ON p.fp = v.fp WHERE p.url = ? ORDER BY v.at", (url,))]
    # a server error (503, retried by the loop first) changes nothing: the page stays, as it was
    k = kinds(flaky)
    assert "error" in k and k[-1] in ("304", "same", "noise")
    assert q(out, "SELECT in_collection, state FROM recrawl_pages WHERE url = ?", (flaky,)) == [(1, "live")]
    assert q(out, "SELECT count(*) FROM pages p JOIN fetches f ON f.fp = p.fp WHERE f.url = ?", (flaky,)) == [(1,)]
    # a 404 once is "missing" (kept); confirmed by the next visit it is gone: out of the collection
    # and of the pages (so of the search index), its fetch record and history kept
    k = kinds(gone)
    assert k[-2:] == ["missing", "gone"]
    assert q(out, "SELECT in_collection, state FROM recrawl_pages WHERE url = ?", (gone,)) == [(0, "gone")]
    assert q(out, "SELECT count(*) FROM pages p JOIN fetches f ON f.fp = p.fp WHERE f.url = ?", (gone,)) == [(0,)]
    assert q(out, "SELECT status FROM fetches WHERE url = ?", (gone,)) == [(404,)]


def test_revisits_follow_the_budget_and_the_policy(tmp_path: Path) -> None:
    """--rate is the budget; under the uniform policy every page gets about the same number of
    revisits, under the optimal one the pages that change get more than the static ones."""
    w = web(80)
    hours = 5
    visits = {}
    for name in ("uniform", "optimal"):
        out = tmp_path / name
        clock = LoopClock()

        async def main(out=out, name=name, clock=clock):
            crawler = build_crawler(out, config(w, rate=0.05, policy=name, importance="none"),
                                    transport=WebTransport(w, clock), clock=clock, until=EPOCH + hours * 3600)
            await crawler.run()

        run_in_fake_time(main())
        rows = q(out, "SELECT p.url, count(*) FROM recrawl_visits v JOIN recrawl_pages p ON p.fp = v.fp"
                      " WHERE v.kind != 'first' AND v.at > ? GROUP BY p.url", (EPOCH + 3600,))
        total = sum(n for _, n in rows)
        assert 0.8 * 0.05 * (hours - 1) * 3600 <= total <= 1.05 * 0.05 * (hours - 1) * 3600 + 10, (name, total)
        visits[name] = dict(rows)
    static = [u for u in visits["optimal"] if w.change_rate(u) == 0]
    changing = [u for u in visits["optimal"] if 1 / 3600 < w.change_rate(u) < 1 / 600]
    assert static and changing
    mean = lambda d, us: sum(d.get(u, 0) for u in us) / len(us)  # noqa: E731
    assert mean(visits["optimal"], changing) > 1.5 * mean(visits["optimal"], static)
    assert abs(mean(visits["uniform"], changing) - mean(visits["uniform"], static)) <= \
        0.35 * mean(visits["uniform"], static) + 1


def test_a_bounded_collection_swaps_in_more_important_pages(tmp_path: Path) -> None:
    """--collection N: URLs found while the collection is full wait outside; the planning pass
    discards the least important pages for more important outside URLs (seed 000's refinement);
    a discarded page leaves the pages (so the index) and keeps its history. The bound holds
    exactly with 8 fetches in flight: first fetches count against it when they start, and a page
    discarded while its revisit is in flight stays out (it came back, one over, before)."""
    from skitter.recrawl.evaluate import run_fake_recrawl

    out = tmp_path / "crawl"
    r = run_fake_recrawl(out, web(80), hours=3, rate=0.05, importance="backlinks", collection=30, warmup_hours=1,
                         settings={"concurrency": 8, "per_host": 4, "delay": 0.1})
    c = r["counters"]
    assert c.added > 0 and c.discarded == c.added
    live = q(out, "SELECT count(*) FROM recrawl_pages WHERE in_collection = 1")[0][0]
    assert live == 30
    assert max(n for (n,) in q(out, "SELECT pages FROM recrawl_log")) <= 30
    assert q(out, "SELECT count(*) FROM recrawl_outside")[0][0] > 0
    discarded = q(out, "SELECT url, importance FROM recrawl_pages WHERE state = 'discarded'")
    assert discarded
    inside = q(out, "SELECT min(importance) FROM recrawl_pages WHERE in_collection = 1")[0][0]
    assert max(imp for _, imp in discarded) <= inside * 1.1 + 1e-9
    for url, _ in discarded:
        assert q(out, "SELECT count(*) FROM pages p JOIN fetches f ON f.fp = p.fp WHERE f.url = ?", (url,)) == [(0,)]
        assert q(out, "SELECT count(*) FROM recrawl_visits v JOIN recrawl_pages p ON p.fp = v.fp WHERE p.url = ?",
                 (url,))[0][0] >= 1
