"""The importance strategies' state survives a resume: a crawl stopped part-way (max_pages) and run
again on the same directory continues with the same backlink counts / OPIC cash as a crawl that was
never interrupted, so it fetches the same URLs in the same order."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from skitter.config import CrawlConfig
from skitter.demo.server import DemoServer
from skitter.demo.web import DemoConfig
from skitter.api import build_crawler
from skitter.loop import Crawler
from skitter.store.crawlstore import CrawlStore
from skitter.strategies import make_scorer

pytestmark = pytest.mark.slow

FIRST, TOTAL = 60, 180


@pytest.fixture(scope="module")
def server():
    with DemoServer(DemoConfig(hosts=3, pages=600, seed=5, crawl_delay=0)) as srv:
        yield srv


def config(srv, strategy: str, max_pages: int, **settings) -> CrawlConfig:
    return CrawlConfig(seeds=tuple(srv.web.seeds()), strategy=strategy, max_pages=max_pages, delay=0.0,
                       adaptive_delay=0.0, max_crawl_delay=0.0, per_host=1, concurrency=1, analysis_processes=0,
                       **settings)


def crawl(directory: Path, cfg: CrawlConfig) -> Crawler:
    c = build_crawler(directory, cfg)
    asyncio.run(c.run())
    return c


def order(directory: Path) -> list[str]:
    con = sqlite3.connect(directory / "crawl.db")
    try:
        return [u for (u,) in con.execute("SELECT url FROM fetches WHERE fetch_order IS NOT NULL ORDER BY fetch_order")]
    finally:
        con.close()


def state(scorer) -> dict:
    return {k: v for k, v in vars(scorer).items() if k in ("fetched", "inlinks", "cash")}


def approx(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        (a[k] == b[k]) if not isinstance(a[k], dict) else
        (a[k].keys() == b[k].keys() and all(abs(a[k][u] - b[k][u]) <= 1e-12 for u in a[k])) for k in a)


@pytest.mark.parametrize("strategy,weighted", [("pagerank", False), ("backlinks", False), ("pagerank", True)])
def test_restored_state_equals_the_live_state(server, tmp_path, strategy, weighted):
    cfg = config(server, strategy, FIRST, link_weights=weighted)
    live = crawl(tmp_path / "c", cfg).scorer
    assert live.weighted == weighted
    restored = make_scorer(strategy, cfg)
    store = CrawlStore.open(tmp_path / "c", cfg.to_dict(), software="test")
    try:
        n = restored.restore(store.replay_seeds(), store.replay_pages())
    finally:
        store.close()
    assert 0 < n <= FIRST
    assert len(live.fetched) == n and state(live)[next(k for k in ("cash", "inlinks") if hasattr(live, k))]
    assert approx(state(restored), state(live))
    assert not approx(state(make_scorer(strategy, cfg)), state(live))   # what a resume had before


@pytest.mark.parametrize("strategy", ["pagerank", "backlinks"])
def test_a_resumed_crawl_fetches_what_an_uninterrupted_one_does(server, tmp_path, strategy):
    whole = tmp_path / "whole"
    crawl(whole, config(server, strategy, TOTAL))
    parts = tmp_path / "parts"
    crawl(parts, config(server, strategy, FIRST))
    assert order(parts) == order(whole)[:FIRST]
    resumed = crawl(parts, config(server, strategy, TOTAL))
    assert resumed.store.resumed
    assert order(parts) == order(whole)
